"""The analysis's one door to the rest of the project: where a module lives and what it may ask of
the other modules (:class:`ProjectLookup`).

The analysis declares what it needs here and imports nothing from ``project/``, ``planner/``, the
engine or the cache; ``project/view.py`` implements the protocol (``ProjectView``), and the engine
hands it in through :class:`ModuleContext`. Without the project index the view is None and every
question goes unasked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .consumers.uses import Path, Use
    from .cython import Declaration
    from .options import AnalysisOptions
    from .semantic.records import FactorySignature
    from .values.lattice import Value


class ProjectLookup(Protocol):
    """What one module's analysis asks of the project's other modules, by qualified name. Every answer
    is recorded by the implementation, so that a module is analysed again when an answer changes."""

    # ----- evidence: values other modules define, return or write ------------------------------
    def function(self, qname: str) -> Value | None:
        """What the function ``qname`` returns (its pointer evidence), or None."""

    def wraps(self, qname: str) -> bool:
        """Whether the function ``qname`` wraps the address it is given into int64 range (a wrap helper)."""

    def param_writes(self, qname: str) -> tuple[list[str], dict[str, Value]] | None:
        """The parameters of the function ``qname`` and the values it writes into each (by name)."""

    def class_fields(self, qname: str) -> list[str]:
        """The fields of the dataclass or NamedTuple ``qname``, in order."""

    def attribute(self, class_qname: str, attr: str) -> Value | None:
        """What instances of ``class_qname`` hold in ``attr``."""

    def name(self, qname: str) -> Value | None:
        """What the module-level name ``qname`` holds."""

    def external_writes(self, class_qname: str, attr: str) -> list[Value]:
        """Values other modules write into ``attr`` of this module's class ``class_qname``."""

    def is_project_symbol(self, qname: str) -> bool:
        """Whether ``qname`` is defined in a module of the project."""

    def is_class(self, qname: str) -> bool:
        """Whether ``qname`` is a class defined in a module of the project."""

    def factory(self, qname: str, options: AnalysisOptions) -> FactorySignature | None:
        """The buffer-factory signature of the function ``qname``, if it is one."""

    def declaration(self, qname: str) -> Declaration | None:
        """The Cython declaration of ``qname``, a function of a compiled module the project declares (``lib.pxd``)."""

    def patched(self, qname: str) -> str | None:
        """The project function some module puts in the place of ``qname`` (``torch.empty = _empty``)."""

    # ----- consumers (fix safety): what other modules do with a table ----------------------------
    def param_consumers(
        self, qname: str, position: int | None, keyword: str | None, path: Path, options: AnalysisOptions
    ) -> list[Use] | None:
        """Uses of the parameter a call of ``qname`` binds the table to (None: not followed)."""

    def result_consumers(self, qname: str, path: Path, options: AnalysisOptions) -> list[Use]:
        """Uses, in other modules, of what this module's function ``qname`` returns."""

    def attribute_consumers(self, attr: str, path: Path, options: AnalysisOptions) -> list[Use]:
        """Uses, in other modules, of every ``x.attr`` they read."""

    def name_consumers(self, qname: str, path: Path, options: AnalysisOptions) -> list[Use]:
        """Uses, in the modules that import it, of this module's module-level name ``qname``."""


@dataclass
class ModuleContext:
    """Where the module lives: its dotted name (for relative imports and the names of its classes)
    and, through the project index, what the other modules tell (None: no index)."""

    module: str = ""
    is_package: bool = False
    view: ProjectLookup | None = None
