"""What connects a candidate (a file with a site but no pointer evidence of its own) to pointer
evidence elsewhere in its project: the qualified names whose summaries hold pointer values, and
whether a candidate's text uses one of them (imported, or spelled ``module.name``).

A name that holds a pointer value (a function, a module name) connects whatever imports it. A
*class* connects only a text that can reach its pointer values: the analysis learns them from a
class through its members alone (``obj.data_ptr()``, ``Cls.addr``, ``Cls(addr=x)``, each spelling
the member's name) and, for a class with fields named like an address, through a call of the class
(``Cls(x, y)``: positional arguments bind the fields), directly or through a module-level alias
(``C = Cls``). A text that only annotates with the class, tests ``isinstance`` or subclasses it
without spelling one of those names learns nothing from the class, and is left unanalysed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..analysis.options import AnalysisOptions
from ..analysis.values.lattice import Origin
from ..pointer_names import NamePatterns
from ..project.summary import ModuleSummary
from ..project.view import ProjectView
from .tasks import Task, refers_as_callee, spells_word


@dataclass(frozen=True)
class ClassUse:
    """What a text must spell to reach a class's pointer values: one of ``words`` (its members that
    hold pointer values and its address-named fields), or, when ``called`` (it has such fields), a
    call of the class or an alias of it."""

    words: frozenset[str]
    called: bool

    def merged(self, other: ClassUse) -> ClassUse:
        return ClassUse(self.words | other.words, self.called or other.called)

    def reached_by(self, task: Task, spelled: str) -> bool:
        """Whether ``task``'s text, which refers to the class as ``spelled``, reaches its pointer values."""
        text = task.source()
        return any(spells_word(text, word) for word in self.words) or (self.called and refers_as_callee(text, spelled))


@dataclass
class Connections:
    """The pointer symbols of a view, the classes among them (a symbol of ``classes`` connects a text
    only as its :class:`ClassUse` says; every other symbol connects whatever imports it), and the
    modules whose classes others write addresses into."""

    symbols: set[str]
    classes: dict[str, ClassUse]
    targets: set[str]

    def __post_init__(self) -> None:
        # a module or class -> its names that are a symbol: those that connect whatever spells them
        # as `mod.name` (plain), and the classes among them
        self.plain: dict[str, set[str]] = {}
        self.class_members: dict[str, list[str]] = {}
        for symbol in self.symbols:
            owner, _, name = symbol.rpartition(".")
            if symbol in self.classes:
                self.class_members.setdefault(owner, []).append(name)
            else:
                self.plain.setdefault(owner, set()).add(name)

    def within(self, other: Connections) -> bool:
        """Whether whatever these connections connect, ``other`` connects too: their symbols are
        among ``other``'s, each connecting no more freely than there (a class's use reached by no
        more words, and called only where it is called there), and so are their targets. A text
        ``other`` left unconnected stays so (a settle round mostly loses a stale symbol or two)."""
        if not (self.symbols <= other.symbols and self.targets <= other.targets):
            return False
        for symbol in self.symbols:
            theirs = other.classes.get(symbol)
            if theirs is None:
                continue  # unconditional there
            ours = self.classes.get(symbol)
            if ours is None or not ours.words <= theirs.words or (ours.called and not theirs.called):
                return False
        return True

    def written_into(self, module: str) -> bool:
        return any(t == module or t.startswith(module + ".") for t in self.targets)

    def used_by(self, task: Task) -> bool:
        """Whether a text imports one of the symbols, or a module (class) of them and uses one as
        ``mod.name``, in a way that reaches its pointer values."""
        for local, target in task.bindings().items():
            if target in self.symbols and self._reached(task, target, local):
                return True
            plain = self.plain.get(target)
            if plain and task.spells_attribute(local, plain):
                return True
            if any(
                task.spells_attribute(local, {n}) and self._reached(task, f"{target}.{n}", f"{local}.{n}")
                for n in self.class_members.get(target, ())
            ):
                return True
        return False

    def _reached(self, task: Task, symbol: str, spelled: str) -> bool:
        use = self.classes.get(symbol)
        return use is None or use.reached_by(task, spelled)


class CandidateRounds:
    """The settle rounds' test of the candidates. A candidate's text is read for it (its words) and
    dropped again: a thousand candidates on torch, ten thousand (300 MB of text) on a 20,000-file
    tree. A round whose connections are within the last round's (:meth:`Connections.within`; a
    round mostly loses a stale symbol or two) leaves the candidates the last one left unconnected
    as they were, without reading them again: an answer depends on the connections and the text."""

    def __init__(self) -> None:
        self._last: Connections | None = None
        self._unconnected: set[str] = set()  # real paths, this round
        self._before: set[str] | None = None  # the last round's, when they still hold

    def start(self, connections: Connections) -> None:
        within = self._last is not None and connections.within(self._last)
        self._before = self._unconnected if within else None
        self._last, self._unconnected = connections, set()

    def connected(self, task: Task, test: Callable[[Task], bool]) -> bool:
        if self._before is not None:
            connected = task.real not in self._before
        else:
            with task.read_transiently():
                connected = test(task)
        if not connected:
            self._unconnected.add(task.real)
        return connected


def connections_of(view: ProjectView, known: dict[int, OwnSymbols] | None = None) -> Connections:
    """The view's :class:`Connections` (``known``: see :func:`_pointer_symbols`)."""
    symbols, classes = _pointer_symbols(view, known)
    # a module is written into when another stores addresses into its classes (a binding's values in
    # their own encoding, FOREIGN, never make a finding in a module without evidence of its own)
    written = {
        k.rpartition(".")[0].rpartition(".")[0]
        for k, values in view.writes_by_target.items()
        if any(v.origin >= Origin.NAMED for v in values)
    }
    return Connections(symbols, classes, written)


def _pointer_symbols(
    view: ProjectView, known: dict[int, OwnSymbols] | None = None
) -> tuple[set[str], dict[str, ClassUse]]:
    """Qualified names whose summaries hold pointer values (functions, methods, attributes, module
    names), the classes of such methods and attributes and the classes with a field named like an
    address (a positional argument of their constructor takes the field's name: name evidence in a
    module that spells none), and the names that re-export them; with each class's
    :class:`ClassUse` (a re-export's is its target's; a name that is both a class and more connects
    unconditionally).

    ``known``: each summary's own symbols and re-exports, kept by the caller across the settle
    rounds (a round changes few summaries, and a large tree has thousands)."""
    options = view.options
    names = options.names if isinstance(options, AnalysisOptions) else None
    out: set[str] = set()
    classes: dict[str, ClassUse] = {}
    exporters: dict[str, list[str]] = {}  # a qualified name -> the names that re-export it
    for module, summary in view.summaries.items():
        own = known.get(id(summary)) if known is not None else None
        if own is None or own.summary is not summary or own.module != module:
            own = OwnSymbols(module, summary, names)
            if known is not None:
                known[id(summary)] = own
        out.update(own.symbols)
        for symbol, use in own.classes.items():
            _merge_into(classes, symbol, use)
        for target, exporter in own.exports:
            exporters.setdefault(target, []).append(exporter)
    for symbol in out.intersection(classes):
        del classes[symbol]  # also a name that holds pointer values itself
    out.update(classes)
    queue = [s for s in out if s in exporters]
    while queue:  # names that re-export a pointer symbol, through any chain of re-exports
        target = queue.pop()
        carried = classes.get(target)
        for exporter in exporters.get(target, ()):
            if exporter in out and exporter not in classes:
                continue  # connects unconditionally already
            if carried is None:
                classes.pop(exporter, None)
            else:
                merged = classes[exporter].merged(carried) if exporter in out else carried
                if exporter in out and merged == classes[exporter]:
                    continue
                classes[exporter] = merged
            out.add(exporter)
            queue.append(exporter)
    return out, classes


def _merge_into(classes: dict[str, ClassUse], symbol: str, use: ClassUse) -> None:
    classes[symbol] = classes[symbol].merged(use) if symbol in classes else use


class OwnSymbols:
    """The pointer symbols one summary defines (``symbols``: those that connect whatever imports
    them; ``classes``: classes, with what connects a text to them), and its re-exports (target,
    qualified name)."""

    def __init__(self, module: str, summary: ModuleSummary, names: NamePatterns | None) -> None:
        self.module, self.summary = module, summary  # the summary is kept: its id keys the cache
        out: list[str] = []
        classes: dict[str, ClassUse] = {}

        def member(owner: str, word: str, called: bool) -> None:
            if word.startswith("__") and word.endswith("__"):
                out.append(owner)  # `obj()`, `obj[i]`, `len(obj)`: a dunder is reached without its name
                return
            _merge_into(classes, owner, ClassUse(frozenset([word]), called))

        if names is not None:
            for cls, fields in summary.classes.items():
                for field_name in fields:
                    if names.is_pointer_name(field_name):
                        member(f"{module}.{cls}", field_name, True)
        for name, value in (*summary.functions.items(), *summary.attributes.items(), *summary.names.items()):
            if value.origin >= Origin.NAMED:  # named, wrapped or raw: what a binding hands out connects nothing
                out.append(f"{module}.{name}")
                if "." in name:  # the class of a method or attribute
                    owner, _, word = name.rpartition(".")
                    member(f"{module}.{owner}", word, False)
        out.extend(f"{module}.{name}" for name in summary.param_writes)
        self.symbols = out
        self.classes = classes
        self.exports = [(target, f"{module}.{name}") for name, target in summary.exports.items()]
