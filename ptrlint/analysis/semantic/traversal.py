"""The state of the one traversal, as its handlers (:mod:`.statements`, :mod:`.expressions`) see it.

:class:`~.collector.FactCollector` walks the tree and dispatches each node to its handlers with a
:class:`Traversal`: the semantic model being built and the walk's own state. The handlers take it,
never the collector, so they depend on nothing above them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .model import SemanticModel
from .scopes import LiteScope


@dataclass
class Traversal:
    model: SemanticModel  # the tables being filled
    stack: list[ast.AST] = field(default_factory=list)  # enclosing classes and functions
    # calls whose meaning depends on the module's imports, classified when the walk is done
    pending_calls: list[tuple[ast.Call, LiteScope, bool]] = field(default_factory=list)
    raises: int = 0  # depth of `with pytest.raises(...)` blocks around the current node
    raising_withs: set[int] = field(default_factory=set)  # ids of those `with` statements
