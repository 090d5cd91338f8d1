"""What one module's analysis sees of the rest of its project: a read-only view over summaries.

Every lookup is recorded (symbol -> fingerprint of the answer) so the engine knows when a
module's findings must be recomputed because a summary it read has changed, and a lookup into a
project module that has no summary yet asks for one (``wanted``).
"""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from ..analysis.consumers.uses import Path as TablePath
from ..analysis.consumers.uses import Use, parse_path, path_text
from ..analysis.cython import Declaration
from ..analysis.semantic.records import FactorySignature
from ..analysis.values.lattice import Location, Value
from .consumers import ProjectConsumers
from .declarations import declaration
from .layout import module_file, namespace_file
from .summary import ModuleSummary, ValueSummary

MISSING = "-"


class ProjectView:
    def __init__(
        self,
        summaries: dict[str, ModuleSummary],
        consumers: ProjectConsumers | None = None,
        writers: Iterable[ModuleSummary] | None = None,
    ) -> None:
        """``consumers``: the modules read for consumer answers, shared by the views of one run (they
        do not depend on the summaries), so that a new round does not read the project again.
        ``writers``: the summaries whose writes into other modules' classes count, in order
        (default: ``summaries``); besides those it may hold partial summaries of modules no
        module of the run imports, which a lookup never reaches."""
        self.summaries = summaries
        self._memo: dict[
            tuple[object, ...], tuple[tuple[ModuleSummary, str] | None, frozenset[str], frozenset[str]]
        ] = {}
        # consulted_changed's answers: (lookup, bases) -> (fingerprint, the modules its resolution passed)
        self._probed: dict[tuple[str, tuple[Path, ...]], tuple[str | None, frozenset[str]]] = {}
        self.bases: tuple[Path, ...] = ()
        self.own_module = ""
        self.consulted: dict[str, str] = {}
        self.wanted: set[str] = set()
        self.writes_by_target: dict[str, list[ValueSummary]] = {}
        self.patches: dict[str, str] = {}  # "torch.empty" -> the project function put in its place
        self.consumers = consumers if consumers is not None else ProjectConsumers()
        self.options: object | None = None  # the analysis options of the last module viewed (for re-probing)
        for summary in summaries.values() if writers is None else writers:
            for target, value in summary.external_writes.items():
                cls, _, attr = target.rpartition(".")
                found = self._locate(cls)  # `pkg.Cls` re-exported from `pkg.impl.Cls`: one target
                canonical = f"{found[0].module}.{found[1]}" if found else cls
                self.writes_by_target.setdefault(f"{canonical}.{attr}", []).append(value)
            for patched, function in summary.patches.items():
                self.patches.setdefault(patched, function)  # in module order: the first patch wins
        self.wanted.clear()

    def inherit(self, previous: ProjectView) -> None:
        """Keep what ``previous`` resolved and re-asked that no summary changed since can alter: a
        resolution, and an answer, depend only on the summaries of the modules its resolution passed
        (a summary is replaced, never changed in place), an answer about writes into a class only on
        the writes into it. A settle round changes few summaries, and asking every analysed
        module's lookups again was half of the round's planning on torch."""
        changed = {
            m
            for m in self.summaries.keys() | previous.summaries.keys()
            if self.summaries.get(m) is not previous.summaries.get(m)
        }
        for key, memo in previous._memo.items():
            if len(key) == 2 and changed.isdisjoint(memo[2]):  # not a module's own resolution
                self._memo.setdefault(key, memo)
        for probe, (answer, passed) in previous._probed.items():
            what, _, qname = probe[0].partition(":")
            if what == "into":
                if self.writes_by_target.get(qname) != previous.writes_by_target.get(qname):
                    continue
            elif not changed.isdisjoint(passed):
                continue
            self._probed.setdefault(probe, (answer, passed))

    def shipped(self) -> ProjectView:
        """This view as a worker that was started before it gets it (pickled): its summaries each
        pickled apart and unpickled when first looked up (:class:`ShippedSummaries`), and the
        planner's import table likewise (``ProjectConsumers.shipped``)."""
        view = ProjectView.__new__(ProjectView)
        view.__dict__.update(self.__dict__)
        view.summaries = ShippedSummaries(self.summaries)  # type: ignore[assignment]
        view.consumers = self.consumers.shipped()
        return view

    def for_module(self, module: str, bases: tuple[Path, ...]) -> ProjectView:
        """The same summaries, with a fresh record of lookups, for analysing ``module``."""
        view = ProjectView.__new__(ProjectView)
        view.summaries, view.writes_by_target, view._memo = self.summaries, self.writes_by_target, self._memo
        view.patches = self.patches
        view._probed = self._probed
        view.consumers, view.options = self.consumers, self.options
        view.bases, view.own_module = bases, module
        view.consulted, view.wanted = {}, set()
        return view

    # ----- resolution ------------------------------------------------------------------------------
    def _locate(self, qname: str) -> tuple[ModuleSummary, str] | None:
        """The summary that defines ``qname`` and the rest of the name (``Cls.method``), following
        re-exports (``from .impl import f`` in ``__init__.py``).

        Memoised by bases and name for every module whose own name the resolution did not pass
        through (the answer is the same for all of them: a run's modules mostly share their bases,
        and the settle round asks again what every module asked), else per module too."""
        key = (self.bases, qname)
        memo = self._memo.get(key)
        if memo is None:
            wanted: set[str] = set()
            passed: set[str] = set()
            memo = (self._resolve(qname, wanted, passed), frozenset(wanted), frozenset(passed))
            self._memo[key] = memo
        if self.own_module and self.own_module in memo[2]:
            own_key = (self.own_module, self.bases, qname)
            memo = self._memo.get(own_key)
            if memo is None:
                wanted = set()
                memo = (self._resolve(qname, wanted, set(), self.own_module), frozenset(wanted), frozenset())
                self._memo[own_key] = memo
        self.wanted.update(memo[1])
        return memo[0]

    def _resolve(
        self, qname: str, wanted: set[str], passed: set[str], own_module: str = "", depth: int = 0
    ) -> tuple[ModuleSummary, str] | None:
        """``passed``: every module name the resolution looked at (where an own module would stop it)."""
        if depth > 6:
            return None
        parts = qname.split(".")
        for i in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:i])
            passed.add(module)
            if module == own_module:
                return None  # the module's own names are answered by its own facts
            summary = self.summaries.get(module)
            if summary is None:
                if module in wanted or module_file(module, self.bases) is not None:
                    wanted.add(module)  # a project module without a summary yet: ask for it
                    return None
                continue
            rest = ".".join(parts[i:])
            head = parts[i]
            if head in summary.omitted:  # defined by a statement a cut analysis left out: ask for the whole
                wanted.add(module)
                return None
            if head in summary.exports and not self._defines(summary, head):
                return self._resolve(
                    ".".join([summary.exports[head], *parts[i + 1 :]]), wanted, passed, own_module, depth + 1
                )
            return summary, rest
        return None

    @staticmethod
    def _defines(summary: ModuleSummary, name: str) -> bool:
        return (
            name in summary.classes
            or name in summary.functions
            or name in summary.names
            or name in summary.wrappers
            or any(k.startswith(name + ".") for k in summary.functions)
        )

    def _record(self, what: str, qname: str, answer: object) -> None:
        """Remember the answer's fingerprint; every "nothing known" answer (not summarised yet, or
        summarised with nothing to say) is the same, so only real information triggers a re-run."""
        if not answer:
            self.consulted[f"{what}:{qname}"] = MISSING
            return
        data = answer.to_json() if hasattr(answer, "to_json") else answer
        self.consulted[f"{what}:{qname}"] = hashlib.sha256(
            json.dumps(data, sort_keys=True, default=str).encode()
        ).hexdigest()[:12]

    # ----- lookups -----------------------------------------------------------------------------------
    def function(self, qname: str) -> Value | None:
        found = self._locate(qname)
        answer = found[0].functions.get(found[1]) if found else None
        self._record("fn", qname, answer)
        return answer.to_value() if answer is not None else None

    def wraps(self, qname: str) -> bool:
        """Whether ``qname`` is another module's wrap helper: a function of one parameter that returns the
        int64 reading of the address it is given (``to_i64(p)``)."""
        found = self._locate(qname)
        answer = found is not None and found[1] in found[0].wrappers
        self._record("wraps", qname, answer)
        return answer

    def param_writes(self, qname: str) -> tuple[list[str], dict[str, Value]] | None:
        found = self._locate(qname)
        writes = found[0].param_writes.get(found[1]) if found else None
        self._record("writes", qname, {k: v.to_json() for k, v in writes.items()} if writes else None)
        if not writes or found is None:
            return None
        return found[0].signatures.get(found[1], []), {k: v.to_value() for k, v in writes.items()}

    def is_class(self, qname: str) -> bool:
        found = self._locate(qname)
        answer = found is not None and found[1] in found[0].classes
        self._record("class", qname, answer if found else None)
        return answer

    def class_fields(self, qname: str) -> list[str]:
        found = self._locate(qname)
        fields = found[0].classes.get(found[1], []) if found else []
        self._record("fields", qname, fields if found else None)
        return fields

    def attribute(self, class_qname: str, attr: str) -> Value | None:
        found = self._locate(class_qname)
        answer = found[0].attributes.get(f"{found[1]}.{attr}") if found else None
        self._record("attr", f"{class_qname}.{attr}", answer)
        return answer.to_value() if answer is not None else None

    def name(self, qname: str) -> Value | None:
        found = self._locate(qname)
        answer = found[0].names.get(found[1]) if found else None
        self._record("name", qname, answer)
        return answer.to_value() if answer is not None else None

    # ----- consumers (fix safety): what other modules do with a table ------------------------------
    def is_project_symbol(self, qname: str) -> bool:
        """Whether ``qname`` names something in a module of the project (summarised or on disk)."""
        parts = qname.split(".")
        return any(
            ".".join(parts[:i]) in self.summaries or namespace_file(".".join(parts[:i]), self.bases) is not None
            for i in range(len(parts) - 1, 0, -1)
        )

    def param_consumers(
        self, qname: str, position: int | None, keyword: str | None, path: TablePath, options: object
    ) -> list[Use] | None:
        """Uses of the parameter that a call of ``qname`` (another module's function) binds the table
        to (``path``: where the table sits in the argument)."""
        self.options = options
        answer = self.consumers.parameter(qname, self._module_file, position, keyword, options, path)  # type: ignore[arg-type]
        self._record(f"pconsumers[{position}|{keyword}|{path_text(path)}]", qname, _fingerprint(answer))
        return answer

    def _module_file(self, qname: str) -> tuple[Path, str] | None:
        """The file of the longest module prefix of ``qname`` in the project, and the rest of the name."""
        parts = qname.split(".")
        for i in range(len(parts) - 1, 0, -1):
            file = namespace_file(".".join(parts[:i]), self.bases)
            if file is not None:
                return file, ".".join(parts[i:])
        return None

    def _own_file(self) -> Path | None:
        return module_file(self.own_module, self.bases) if self.own_module else None

    def result_consumers(self, qname: str, path: TablePath, options: object) -> list[Use]:
        """Uses, in the other modules of the project, of what ``qname`` (a function or method of this
        module) returns."""
        return self._elsewhere("consumers", qname, path, options, self.consumers.results)

    def attribute_consumers(self, attr: str, path: TablePath, options: object) -> list[Use]:
        """Uses, in the other modules of the project, of every ``x.attr`` they read."""
        return self._elsewhere("aconsumers", attr, path, options, self.consumers.attribute_reads)

    def name_consumers(self, qname: str, path: TablePath, options: object) -> list[Use]:
        """Uses, in the modules that import it, of the module-level name ``qname`` of this module."""
        return self._elsewhere("nconsumers", qname, path, options, self.consumers.name_reads)

    def _elsewhere(
        self, what: str, name: str, path: TablePath, options: object, ask: Callable[..., list[Use]]
    ) -> list[Use]:
        """One question about this module's values asked of the other modules (recorded as ``what``)."""
        self.options = options
        own = self._own_file()
        answer = ask(name, own, options, path) if own is not None else []
        self._record(f"{what}[{path_text(path)}]", name, _fingerprint(answer))
        return answer

    def factory(self, qname: str, options: object) -> FactorySignature | None:
        """The factory signature of ``qname`` (another module's function), read from its module."""
        self.options = options
        answer = self.consumers.factory(qname, self._module_file, options)  # type: ignore[arg-type]
        self._record("factory", qname, answer.to_json() if answer is not None else None)
        return answer

    def declaration(self, qname: str) -> Declaration | None:
        """The Cython declaration of ``qname``, a function of a compiled module whose ``.pxd``/``.pyx`` the
        project ships (read from its file)."""
        answer = declaration(qname, self.bases)
        self._record("declared", qname, answer.to_json() if answer is not None else None)
        return answer

    def patched(self, qname: str) -> str | None:
        """The project function a module puts in the place of ``qname`` (``torch.empty = _empty``)."""
        answer = self.patches.get(qname)
        self._record("patch", qname, answer)
        return answer

    def external_writes(self, class_qname: str, attr: str) -> list[Value]:
        """Pointer values other modules write into ``class_qname.attr`` (a class of this module)."""
        target = f"{class_qname}.{attr}"
        answers = self.writes_by_target.get(target, [])
        self._record("into", target, [a.to_json() for a in answers])
        return [a.to_value() for a in answers]


def _fingerprint(uses: list[Use] | None) -> list[list[str | int]] | None:
    if not uses:
        return None
    return sorted(
        [u.kind.name, u.why, *((u.node.path, u.node.line) if isinstance(u.node, Location) else ())] for u in uses
    )


# Lookups whose answers read only files on disk (the consumers of a table, a factory's signature),
# never summaries: within one run they cannot change.
_FILE_LOOKUPS = ("consumers[", "pconsumers[", "aconsumers[", "nconsumers[", "factory", "declared")


def consulted_changed(
    consulted: dict[str, str],
    view: ProjectView,
    module: str,
    bases: tuple[Path, ...],
    fresh: bool = False,
    wanted: set[str] | None = None,
) -> bool:
    """Whether a module's recorded lookups would be answered differently by ``view``.

    ``fresh``: they were answered in this run, so the lookups into files (``_FILE_LOOKUPS``) still
    hold and only those into summaries are asked again. The settle round asks this of every
    analysed module, and they mostly share their lookups: each answer is kept per view for the
    modules whose own name its resolution did not pass (as ``_locate`` keeps its own). ``wanted``
    receives the modules without a summary that the first changed lookup asked for (read them,
    and the answer may be the recorded one again)."""
    probe = view.for_module(module, bases)
    for key, fingerprint in consulted.items():
        what, _, qname = key.partition(":")
        if what.startswith(_FILE_LOOKUPS):
            if fresh:
                continue
            _ask(probe, what, qname, view)
            answer = probe.consulted.get(key)
        else:
            kept = view._probed.get((key, bases))
            if kept is not None and module not in kept[1]:
                answer = kept[0]
            else:
                _ask(probe, what, qname, view)
                answer = probe.consulted.get(key)
                located = view._memo.get((bases, qname.rpartition(".")[0] if what in ("attr", "into") else qname))
                passed = located[2] if located is not None else frozenset()
                if what == "into" or (located is not None and module not in passed):
                    view._probed[(key, bases)] = (answer, frozenset() if what == "into" else passed)
        if answer != fingerprint:
            if wanted is not None:
                _ask(probe, what, qname, view)
                wanted.update(probe.wanted)
            return True
    return False


def _ask(probe: ProjectView, what: str, qname: str, view: ProjectView) -> None:
    """Ask ``probe`` the lookup ``what:qname`` again (its answer lands in ``probe.consulted``)."""
    if what == "fn":
        probe.function(qname)
    elif what == "wraps":
        probe.wraps(qname)
    elif what == "writes":
        probe.param_writes(qname)
    elif what == "class":
        probe.is_class(qname)
    elif what == "fields":
        probe.class_fields(qname)
    elif what == "attr":
        cls, _, attr = qname.rpartition(".")
        probe.attribute(cls, attr)
    elif what == "name":
        probe.name(qname)
    elif what == "declared":
        probe.declaration(qname)
    elif what.startswith("consumers[") and view.options is not None:
        probe.result_consumers(qname, parse_path(what[len("consumers[") : -1]), view.options)
    elif what.startswith("aconsumers[") and view.options is not None:
        probe.attribute_consumers(qname, parse_path(what[len("aconsumers[") : -1]), view.options)
    elif what.startswith("nconsumers[") and view.options is not None:
        probe.name_consumers(qname, parse_path(what[len("nconsumers[") : -1]), view.options)
    elif what.startswith("pconsumers[") and view.options is not None:
        position, keyword, path = what[len("pconsumers[") : -1].split("|")
        probe.param_consumers(
            qname,
            None if position == "None" else int(position),
            None if keyword == "None" else keyword,
            parse_path(path),
            view.options,
        )
    elif what == "factory" and view.options is not None:
        probe.factory(qname, view.options)
    elif what == "into":
        cls, _, attr = qname.rpartition(".")
        probe.external_writes(cls, attr)
    elif what == "patch":
        probe.patched(qname)


class ShippedSummaries(Mapping[str, ModuleSummary]):
    """A view's summaries on their way to a worker: each pickled on its own, and unpickled on the
    worker's first lookup of its module. A worker looks into a few hundred of the thousands of
    modules a large tree has, and unpickling them all cost each worker 0.06 s on sglang."""

    def __init__(self, summaries: Mapping[str, ModuleSummary]) -> None:
        self._pickled = {
            module: pickle.dumps(summary, protocol=pickle.HIGHEST_PROTOCOL) for module, summary in summaries.items()
        }
        self._loaded: dict[str, ModuleSummary] = {}

    def __getitem__(self, module: str) -> ModuleSummary:
        found = self._loaded.get(module)
        if found is None:
            found = self._loaded[module] = pickle.loads(self._pickled[module])
        return found

    def __contains__(self, module: object) -> bool:
        return module in self._pickled

    def __iter__(self) -> Iterator[str]:
        return iter(self._pickled)

    def __len__(self) -> int:
        return len(self._pickled)

    def __getstate__(self) -> dict[str, object]:
        return {"_pickled": self._pickled}

    def __setstate__(self, state: dict[str, object]) -> None:
        self._pickled = state["_pickled"]  # type: ignore[assignment]
        self._loaded = {}
