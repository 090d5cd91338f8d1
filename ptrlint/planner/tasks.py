"""One module of an index run (a :class:`Task`) and what the planner derives from its text alone:
pointer evidence, a site, its imports, its light summary, the names it uses of imported modules.

What is derived from a text is kept as a *record* in the :class:`~.manifest.Manifest`, so that a
later run with the file unchanged restores the task without reading the file (the text is read
lazily, only when an analysis or a fix needs it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable

from ..cache import Cache
from ..findings import FileResult
from ..lexer import is_word_char, skip_space_ahead, skip_space_back
from ..prefilter import evidence_and_site
from ..project.imports import imported_bindings, imported_modules, read_imports
from ..project.layout import module_name, search_bases
from ..project.light import light_summary
from ..project.summary import ModuleSummary
from ..settings import Settings
from ..sources import read_source
from .manifest import Manifest, Signature, signature


class Role(Enum):
    """What a module of the run is analysed for."""

    FINDINGS = "findings"  # given, with pointer evidence: its findings are wanted
    SUMMARY = "summary"  # pointer evidence but no findings wanted (a module the given ones import): its summary
    CANDIDATE = "candidate"  # given, a site but no evidence of its own: summarised from its text until connected
    CONNECTED = "connected"  # a candidate that other modules connect to pointer values: analysed for findings
    LIGHT = "light"  # no evidence: summarised from its text alone (classes and re-exports)

    @staticmethod
    def of(linted: bool, evidence: bool, site: bool) -> Role:
        if not evidence:
            return Role.CANDIDATE if linted and site else Role.LIGHT
        # with evidence, any call may be a site: an argument of a compiled function whose Cython declaration
        # the project holds (PTR008) has no word of its own; no rule reports outside its sites either way
        return Role.FINDINGS if linted else Role.SUMMARY


class Stage(Enum):
    """Where a module's analysis stands in the run."""

    PENDING = "pending"  # not analysed yet (or to be analysed again)
    RESTORED = "restored"  # result and summary restored from the cache; run again if what it consulted changed
    ANALYSED = "analysed"  # analysed in this run


@dataclass
class Task:
    path: str  # as given (for reports)
    real: str
    module: str
    is_package: bool
    role: Role
    linted: bool  # given on the command line: its results are reported
    key: str = ""  # the cache key of its content (the bytes themselves are not kept)
    text: str = ""
    stage: Stage = Stage.PENDING
    summary: ModuleSummary | None = None
    consulted: dict[str, str] = field(default_factory=dict)
    result: FileResult | None = None
    closed: bool = False  # its imports were followed (they depend on its text alone)
    size: int = 0  # characters of its text (the text itself is dropped for files analysed in workers)
    provisional: ModuleSummary | None = None  # classes and re-exports, until its own analysis
    imported: bool = True  # a module of the run imports it: its full summary is computed
    whole: bool = False  # a name its cut analysis left out was looked up: analysed without the cut
    writes: ModuleSummary | None = None  # not imported: its partial summary (writes into other modules' classes)
    rendered: list[dict[str, Any] | None] | None = (
        None  # cached edits of each finding's fix and its alternatives (JSON)
    )
    has_text: bool = True  # False: restored from the manifest (or dropped), read again on demand
    _imports: tuple[list[tuple[str, str, str]], list[str]] | None = None
    _bindings: dict[str, str] | None = None
    _modules: set[str] | None = None
    _uses: dict[str, frozenset[str]] | None = None
    _light: ModuleSummary | None = None

    @property
    def analyse(self) -> bool:
        """Its findings are wanted (else only its summary, or its text alone)."""
        return self.role is Role.FINDINGS or self.role is Role.CONNECTED

    @property
    def light(self) -> bool:
        """Summarised from its text alone (for now, if a candidate)."""
        return self.role is Role.LIGHT or self.role is Role.CANDIDATE

    @property
    def candidate(self) -> bool:
        """Given with a site but no evidence of its own (connected or not)."""
        return self.role is Role.CANDIDATE or self.role is Role.CONNECTED

    @property
    def done(self) -> bool:
        return self.stage is not Stage.PENDING

    @property
    def bases(self) -> tuple[Path, ...]:
        return search_bases(self.real)

    def source(self) -> str:
        """The text, read again from disk when it was not kept."""
        if not self.has_text:
            read = read_source(self.path)
            self.text = "" if isinstance(read, FileResult) else read[2]
            self.has_text = True
        return self.text

    @contextmanager
    def read_transiently(self) -> Iterator[Task]:
        """A context in which :meth:`source` may read the text from disk, and after which a text so
        read is dropped again: the settle round reads a thousand candidates' texts on torch (ten
        thousand on a 20,000-file tree, 300 MB) to test a few words each."""
        kept = self.has_text
        try:
            yield self
        finally:
            if not kept:
                self.text, self.has_text = "", False

    def _parsed_imports(self) -> tuple[list[tuple[str, str, str]], list[str]]:
        if self._imports is None:
            self._imports = read_imports(self.source())
        return self._imports

    def bindings(self) -> dict[str, str]:
        if self._bindings is None:
            self._bindings = imported_bindings(self.source(), self.module, self.is_package, self._parsed_imports())
        return self._bindings

    def modules(self) -> set[str]:
        if self._modules is None:
            self._modules = imported_modules(
                self.source(), self.module, self.is_package, self.bindings(), self._parsed_imports()[1]
            )
        return self._modules

    def light_summary(self) -> ModuleSummary:
        if self._light is None:
            self._light = light_summary(self.source(), self.module, self.is_package, self.real, self.bindings())
        return self._light

    def spells_attribute(self, local: str, attrs: set[str]) -> bool:
        """Whether the text spells ``local.attr`` for one of ``attrs``, as :meth:`attribute_uses`
        finds them: from the uses restored from the manifest, else by searching the text for each
        of ``attrs`` (a few names), not for every ``local.`` (``torch.`` thousands of times)."""
        if self._uses is not None and local in self._uses:
            return not self._uses[local].isdisjoint(attrs)
        text = self.source()
        return any(spells_attribute(text, local, attr) for attr in attrs)

    def attribute_uses(self, local: str) -> frozenset[str]:
        """Every ``attr`` the text spells as ``local.attr`` (which names of an imported module it
        uses); ``x.local.attr`` is another object's attribute, not the imported name's."""
        if self._uses is None:
            self._uses = {}
        found = self._uses.get(local)
        if found is None:
            found = self._uses[local] = attribute_uses(self.source(), local)
        return found


# ----- records: what a text told, kept in the manifest -----------------------------------------------
def record_of(task: Task, evidence: bool, site: bool) -> dict[str, Any]:
    """Everything :func:`restore` needs to rebuild ``task`` without its text."""
    record: dict[str, Any] = {
        "evidence": evidence,
        "site": site,
        "module": task.module,
        "is_package": task.is_package,
        "cache_key": task.key,
        "size": task.size,
        "bindings": task.bindings(),
        "imported_modules": sorted(task.modules()),
        "light_summary": task.light_summary().to_json(),
    }
    if site and not evidence:  # a candidate: which names of its imports it spells
        record["attribute_uses"] = {local: sorted(task.attribute_uses(local)) for local in task.bindings()}
    return record


def restore(record: dict[str, Any], path: str, real: str, linted: bool) -> Task | None:
    """The task a record describes, or None when it no longer applies (a package moved, so the
    module's dotted name changed) or holds only the prefilter's answer."""
    if "module" not in record:
        return None
    name, is_package = module_name(real)
    if (name, is_package) != (record["module"], record["is_package"]):
        return None
    evidence, site = record["evidence"], record["site"]
    task = Task(
        path,
        real,
        name,
        is_package,
        Role.of(linted, evidence, site),
        linted,
        key=record["cache_key"],
        has_text=False,
        size=record["size"],
    )
    task._bindings, task._modules = dict(record["bindings"]), set(record["imported_modules"])
    task._light = ModuleSummary.from_json(record["light_summary"])
    if "attribute_uses" in record:
        task._uses = {local: frozenset(attrs) for local, attrs in record["attribute_uses"].items()}
    return task


def derive(
    path: str,
    real: str,
    data: bytes,
    text: str,
    settings: Settings,
    linted: bool,
    keep_text: bool,
    evidence: bool | None = None,
    site: bool | None = None,
) -> tuple[Task, dict[str, Any] | None]:
    """A task from a file's text, and its record (None without a cache: no manifest to keep it).

    Unless ``keep_text`` (an editor's buffer, which is not on disk), the text is dropped once
    derived: it is read again where needed (by the worker that analyses the module, or for a
    candidate's uses of its imports), since a tree's texts held to the end of a run grew the
    planner past 1 GB on 20,000 files."""
    if evidence is None or site is None:
        evidence, site = evidence_and_site(text, settings.config, codes=settings.enabled)
    name, is_package = module_name(real)
    # by place too: a summary holds its module's path (evidence locations), which a copy of the tree must not read
    key = Cache.key(data, settings, f"index:{name}:{int(is_package)}:{real}") if settings.cache_dir else ""
    task = Task(
        path, real, name, is_package, Role.of(linted, evidence, site), linted, key=key, text=text, size=len(text)
    )
    task.modules(), task.light_summary()  # what the planner needs of the text, derived here (in a worker)
    record = record_of(task, evidence, site) if settings.cache_dir else None
    if not keep_text:
        task.text, task.has_text = "", False
        task._imports = None  # its bindings and modules are derived: the import lines are not needed again
    return task, record


def classify(
    path: str, settings: Settings, texts: dict[str, str]
) -> tuple[Task | FileResult, Signature | None, dict[str, Any] | None]:
    """Read one given file and decide what it needs (in a worker: reading, the prefilter's text
    tests and the import scan are most of a cold run's planning): no task (a plain FileResult), a
    light task (a site but no evidence: summarised from its text), or a task to analyse. With its
    signature, taken before the read, and its record for the manifest."""
    overridden = path in texts
    sig = signature(path) if not overridden else None
    read = read_source(path)
    if isinstance(read, FileResult):
        return read, None, None
    real, data, text, _encoding = read
    text = texts.get(path, texts.get(real, text))
    overridden = overridden or real in texts
    evidence, site = evidence_and_site(text, settings.config, codes=settings.enabled)
    if not evidence and not site:
        return FileResult(path=path), sig, None if overridden else {"evidence": False, "site": False}
    task, record = derive(path, real, data, text, settings, True, overridden, evidence, site)
    return _given(task), sig, None if overridden else record


def restore_given(manifest: Manifest, path: str, real: str) -> Task | FileResult | None:
    """A given file answered from the manifest: no task, or its task; None when it must be read."""
    record = manifest.get(real, signature(real))
    if record is None:
        return None
    if record["evidence"] is False and record["site"] is False:  # the prefilter's answer: nothing to do
        return FileResult(path=path)
    task = restore(record, path, real, True)
    return _given(task) if task is not None else None


def read_unlinted(
    path: str, real: str, settings: Settings, texts: dict[str, str], manifest: Manifest | None, plain: bool
) -> Task | None:
    """A project module that was not given, read for its summary (or restored unread from the
    manifest); None when it cannot be read. ``plain``: the prefilter found neither evidence nor a
    site in it (a given file's answer)."""
    overridden = path in texts or real in texts  # an editor's buffer: not on disk
    manifest = None if overridden else manifest
    sig = signature(real) if manifest is not None else None
    record = manifest.get(real, sig) if manifest is not None else None
    task = restore(record, path, real, False) if record is not None else None
    if task is None:
        read = read_source(path)
        if isinstance(read, FileResult):
            return None
        read_real, data, text, _encoding = read
        text = texts.get(path, texts.get(read_real, text))
        known = False if plain else None  # the prefilter's answer: neither
        task, record = derive(path, real, data, text, settings, False, keep_text=overridden, evidence=known, site=known)
        if manifest is not None and record is not None:
            manifest.put(real, sig, record)
    return task


def _given(task: Task) -> Task:
    """A given file's summary until its analysis: its light summary for a module without evidence
    (final), else the light summary as provisional (its classes and re-exports)."""
    task.summary = task.light_summary() if task.light else None
    task.provisional = None if task.light else task.light_summary()
    return task


def attribute_uses(text: str, local: str) -> frozenset[str]:
    """The ``attr`` of every ``local.attr`` whose ``local`` is a whole name of its own. Found with
    ``str.find`` (memchr speed): a regex scan for every ``a.b`` cost a second on a warm torch run."""
    found: set[str] = set()
    needle = local + "."
    at = text.find(needle)
    while at >= 0:
        if at == 0 or not _continues_name(text[at - 1]):
            match = _NAME.match(text, at + len(needle))
            if match is not None:
                found.add(match.group())
        at = text.find(needle, at + 1)
    return frozenset(found)


def spells_attribute(text: str, local: str, attr: str) -> bool:
    """Whether ``attr`` is in ``attribute_uses(text, local)``: ``local.attr`` spelled with neither
    ``local`` continuing a name before it nor ``attr`` one after it."""
    return any(_whole(text, f"{local}.{attr}", _continues_name))


def spells_word(text: str, word: str) -> bool:
    """Whether ``word`` occurs in ``text`` as a whole word (``.word``, ``word=``, ``"word"``)."""
    return any(_whole(text, word, is_word_char))


def refers_as_callee(text: str, spelled: str) -> bool:
    """Whether ``spelled`` (``Cls``, ``mod.Cls``), a whole name, is called (``Cls(``) or is the value
    of an assignment (``C = Cls``, ``C = (Cls)``: an alias called later), spaces, line breaks and
    opening brackets allowed between. An over-approximation (in comments and strings too; ``==``
    counts): never a miss."""
    for at, end in _whole(text, spelled, _continues_name):
        if text.startswith("(", skip_space_ahead(text, end)):
            return True
        before = skip_space_back(text, at)
        while before > 0 and text[before - 1] == "(":
            before = skip_space_back(text, before - 1)
        if before > 0 and text[before - 1] == "=":
            return True
    return False


def _whole(text: str, needle: str, continues: Callable[[str], bool]) -> Iterator[tuple[int, int]]:
    """Where ``needle`` occurs (start, end) with no character that ``continues`` it before and no
    word character after (found with ``str.find``: memchr speed)."""
    at = text.find(needle)
    while at >= 0:
        end = at + len(needle)
        if (at == 0 or not continues(text[at - 1])) and (end == len(text) or not is_word_char(text[end])):
            yield at, end
        at = text.find(needle, at + 1)


def _continues_name(char: str) -> bool:
    return char == "." or is_word_char(char)


_NAME = re.compile(r"[^\W\d]\w*")  # an identifier (PEP 3131: a letter or `_`, then word characters)
