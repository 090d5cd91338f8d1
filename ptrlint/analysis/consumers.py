"""Consumers of pointer tables: where a buffer goes decides which fix keeps the program working.

This module owns fix safety by consumers (DESIGN.md "Fix safety (phase 3)"). It follows a
buffer from its creation to every use: through its aliases (the alias classes of ``facts.py``),
copies that keep its dtype (slices, gathers, ``.to()``, ``cat``, ``*_like``), results of
arithmetic on it, the parameters of module functions it is passed to, the callers of functions
that return it, containers it is appended to and, through the project index, functions and
callers in other modules. Each use is classified (:class:`UseKind`); :func:`choose_fix` turns
the uses into one of three answers: the plain uint64 dtype, the bit-preserving fix (create
unsigned, hand on the original signed dtype's bits), or no safe fix.

It also answers the other half of the phase-3 rule, "only Python ints overflow": whether any
Python int ever enters a signed table (:meth:`Consumers.python_int_enters`), and whether its
values come back out as Python values or escape to readers ptrlint cannot see.

The uses are found from the module's tree with one extra walk (parents and loads), made only
for modules where a rule asks: modules with pointer-table findings are few.
"""

from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass, replace
from enum import Enum
from typing import Iterable

from ..names import (
    PASSTHROUGH_METHODS,
    SIGNED64_DTYPES,
    UNSAFE_FUNCTIONS,
    UNSAFE_METHODS,
    VIEW_ATTRIBUTES,
    classify_string_dtype,
)
from .records import Creation, FunctionNode, Key
from .syntax import attr_name, dotted, is_slice_subscript, positional
from .lattice import Kind, Location
from .values import ModuleFacts

MAX_DEPTH = 8


class UseKind(Enum):
    READY = "works on uint64"
    READBACK = "reads the values back"  # tolist/item/int()/iteration/element reads: works on uint64
    ESCAPE = "escapes to readers ptrlint cannot see"
    INT64 = "needs int64"  # sign-agnostic: the same 64 bits as int64 keep it right
    RECEIVE = "is written by a collective"  # int64 bits arrive; uint64 is rejected
    ORDER = "compares or reduces the values"  # uint64 lacks the kernels, int64 bits order wrongly above 2**63


@dataclass(frozen=True)
class Use:
    kind: UseKind
    node: "ast.AST | Location"
    why: str
    after_arithmetic: bool = False  # a use of a table computed from this one by arithmetic
    write: bool = False  # writes into the table (element store, `copy_`/`fill_` on it): reads no value
    metadata: bool = False  # reads only the dtype, shape or device
    opaque: bool = False  # a call into compiled code outside the project: it may read or fill the table

    @property
    def exposed(self) -> bool:
        """A derived (computed) table whose values are read or leave: int64 bits would be read as
        negative numbers, and uint64 lacks the arithmetic that made it."""
        return self.after_arithmetic and self.kind in (UseKind.READBACK, UseKind.ESCAPE)


class FixKind(Enum):
    UINT64 = "uint64"
    BIT_PRESERVING = "bit-preserving"
    NONE = "none"


@dataclass(frozen=True)
class FixChoice:
    kind: FixKind
    decider: Use | None  # the use that chose it (None: every use works on uint64)


def choose_fix(uses: Iterable[Use]) -> FixChoice:
    """All uses uint64-ready: uint64. A sign-sensitive use, a collective receive or a computed
    table that is read back: no safe fix. Otherwise any int64-bound use: bit-preserving."""
    uses = list(uses)
    for use in uses:
        if use.kind is UseKind.ORDER or use.kind is UseKind.RECEIVE or use.exposed:
            return FixChoice(FixKind.NONE, use)
    for use in uses:
        if use.kind is UseKind.INT64:
            return FixChoice(FixKind.BIT_PRESERVING, use)
    return FixChoice(FixKind.UINT64, None)


def describe(use: Use, path: str | None = None) -> str:
    """``line 12: `ptrcorpus_ext.gather_pages()` is code outside the project (needs int64)``."""
    if isinstance(use.node, Location):
        where = f"{use.node.path}:{use.node.line}"
    else:
        line = getattr(use.node, "lineno", 0)
        where = f"{path}:{line}" if path else f"line {line}"
    derived = "a table computed from it: " if use.after_arithmetic else ""
    return f"{where}: {derived}{use.why}"


# ----- what torch, numpy and the builtins do with a table ------------------------------------------
# Methods that give a table with the same values and dtype (followed further).
_SAME_TABLE_METHODS = (PASSTHROUGH_METHODS - {"tolist", "numpy"}) | frozenset({
    "expand", "expand_as", "repeat", "permute", "transpose", "t", "narrow", "select", "split", "chunk", "unbind",
    "roll", "gather", "take", "masked_select", "index", "__getitem__", "as_strided", "movedim", "swapaxes",
    "sort", "unique", "type_as",
})
_READY_METHODS = frozenset({
    "data_ptr", "numel", "size", "dim", "stride", "element_size", "is_contiguous", "nbytes", "untyped_storage",
    "storage", "get_device", "is_pinned", "eq", "ne", "equal", "__len__", "record_stream",
    "argsort", "nonzero", "any", "all", "bool", "long", "int", "short", "type", "astype",
    "register", "wait", "synchronize",
})
_WRITE_METHODS = frozenset({"copy_", "fill_", "zero_", "index_copy_", "index_fill_", "masked_fill_", "scatter_",
                            "put_", "random_", "uniform_", "normal_"})
# Methods of another tensor or array that take the table as a tensor argument and work on uint64.
_TENSOR_ARGUMENT_METHODS = frozenset({"copy_", "index_copy_", "masked_scatter_", "set_", "scatter_", "put_",
                                      "copyto", "view_as", "expand_as", "type_as", "new_tensor", "equal", "eq", "ne"})
_READBACK_METHODS = frozenset({"tolist", "item", "__iter__", "tobytes", "__int__"})
_ORDER_METHODS = frozenset({
    "max", "min", "amax", "amin", "argmax", "argmin", "aminmax", "searchsorted", "bucketize", "lt", "gt", "le", "ge",
    "clamp", "clamp_", "clip", "topk", "kthvalue", "median", "abs", "neg", "div", "div_", "floor_divide",
    "remainder", "fmod", "mean",
})
_INT64_METHODS = UNSAFE_METHODS - _ORDER_METHODS | frozenset({"repeat_interleave", "index_fill_", "scatter_add_"})
_ORDER_FUNCTIONS = frozenset({
    "torch.searchsorted", "torch.bucketize", "torch.max", "torch.min", "torch.amax", "torch.amin", "torch.argmax",
    "torch.argmin", "torch.clamp", "torch.lt", "torch.gt", "torch.le", "torch.ge", "torch.remainder",
    "torch.floor_divide", "torch.mean", "torch.topk", "builtins.max", "builtins.min",
})
_SAME_TABLE_FUNCTIONS = frozenset({
    "torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack", "torch.vstack", "torch.flatten",
    "torch.reshape", "torch.squeeze", "torch.unsqueeze", "torch.narrow", "torch.as_tensor", "torch.asarray",
    "torch.from_numpy", "torch.clone", "torch.gather", "torch.take", "torch.sort", "torch.unique", "torch.roll",
    "torch.broadcast_to", "torch.tensor", "numpy.asarray", "numpy.array", "numpy.ascontiguousarray",
    "numpy.concatenate", "numpy.stack", "numpy.hstack", "numpy.vstack", "numpy.copy", "numpy.take", "numpy.reshape",
    "numpy.sort", "numpy.unique", "numpy.frombuffer", "builtins.list", "builtins.tuple", "builtins.sorted",
    "builtins.reversed",
})
_LIKE_FUNCTIONS = frozenset({"torch.empty_like", "torch.zeros_like", "torch.ones_like", "torch.full_like",
                             "numpy.empty_like", "numpy.zeros_like", "numpy.ones_like"})
_READY_FUNCTIONS = frozenset({
    "builtins.len", "builtins.isinstance", "builtins.id", "builtins.print", "builtins.repr", "builtins.type",
    "builtins.hash", "builtins.bool", "builtins.getattr", "builtins.hasattr", "torch.equal", "torch.is_tensor",
    "torch.numel", "numpy.shape", "numpy.size", "numpy.array_equal", "numpy.copyto",
})
_READBACK_FUNCTIONS = frozenset({"builtins.int", "builtins.float", "builtins.hex", "builtins.str", "builtins.iter",
                                 "builtins.next", "builtins.enumerate", "builtins.zip", "builtins.map",
                                 "builtins.set", "builtins.frozenset", "builtins.dict", "builtins.sum"})
_LOGGING_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
# torch.distributed collectives: (positions that receive, positions that send)
_COLLECTIVES: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "all_gather": ((0,), (1,)), "all_gather_into_tensor": ((0,), (1,)), "_all_gather_base": ((0,), (1,)),
    "all_gather_object": ((0,), (1,)), "broadcast": ((0,), ()), "all_reduce": ((0,), ()), "reduce": ((0,), ()),
    "send": ((), (0,)), "isend": ((), (0,)), "recv": ((0,), ()), "irecv": ((0,), ()),
    "scatter": ((0,), (1,)), "gather": ((1,), (0,)), "reduce_scatter": ((0,), (1,)),
    "reduce_scatter_tensor": ((0,), (1,)), "all_to_all": ((0,), (1,)), "all_to_all_single": ((0,), (1,)),
    "broadcast_object_list": ((0,), ()),
}
_COLLECTIVE_KEYWORDS = {"tensor": 0, "tensor_list": 0, "output": 0, "output_tensor": 0, "output_tensor_list": 0,
                        "input": 1, "input_tensor": 1, "input_tensor_list": 1}
_LOOPS = (ast.For, ast.AsyncFor, ast.comprehension)


class Consumers:
    """The uses of one module's buffers, with cross-module answers from the project view."""

    def __init__(self, module: ast.Module, facts: ModuleFacts, int64_consumers: tuple[str, ...] = (),
                 uint64_consumers: tuple[str, ...] = (), view: object | None = None, module_name: str = "",
                 path: str = "") -> None:
        self.module = module
        self.facts = facts
        self.c = facts.c
        self.view = view
        self.module_name = module_name
        self.path = path
        self.int64_consumers = int64_consumers
        self.uint64_consumers = uint64_consumers
        self._parents: dict[int, ast.AST] | None = None
        self._loads: dict[Key, list[ast.expr]] = {}
        self._callers: dict[int, list[ast.Call]] = {}
        self._memo: dict[tuple, tuple[Use, ...]] = {}

    # ----- the index: parents, loads by alias class, callers of module functions -----------------------
    def _index(self) -> dict[int, ast.AST]:
        if self._parents is not None:
            return self._parents
        c = self.c
        parents: dict[int, ast.AST] = {}
        functions = {id(f): f for f in c.functions.values()}
        functions.update({id(m): m for methods in c.class_methods.values() for m in methods.values()})
        names = {f.name for f in functions.values()}
        for node in ast.walk(self.module):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
            cls = node.__class__
            if (cls is ast.Name or cls is ast.Attribute) and isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
                key = c.key_of(node)
                if key is not None:
                    self._loads.setdefault(self.facts.root(key), []).append(node)  # type: ignore[arg-type]
            elif cls is ast.Call and attr_name(node.func) in names:  # type: ignore[attr-defined]
                target = c.types.function_called(node.func)  # type: ignore[attr-defined]
                if target is not None:
                    self._callers.setdefault(id(target), []).append(node)  # type: ignore[arg-type]
        self._parents = parents
        return parents

    def _parent(self, node: ast.AST) -> ast.AST | None:
        return self._index().get(id(node))

    def _roots(self, creation: Creation) -> set[Key]:
        facts = self.facts
        return {facts.root(creation.key), *(facts.root(k) for k in facts.locations.get(creation.key, []))}

    # ----- uses of a creation ----------------------------------------------------------------------------
    def of_creation(self, creation: Creation) -> tuple[Use, ...]:
        memo = self._memo.get(("c", id(creation.call)))
        if memo is not None:
            return memo
        self._index()
        visited: set[object] = set()
        numpy = creation.library == "numpy"
        uses = list(self._class_uses(self._roots(creation), numpy, False, 0, visited, creation.call))
        parent = self._parent(creation.call)
        if not self._binds_alias(creation.call, parent):
            uses.extend(self._context(creation.call, numpy, False, 0, visited))
        result = tuple(uses)
        self._memo[("c", id(creation.call))] = result
        return result

    def _binds_alias(self, expr: ast.AST, parent: ast.AST | None) -> bool:
        """``x = expr`` / ``self.x: T = expr``: the target is in the creation's alias class."""
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is expr:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            return all(isinstance(t, (ast.Name, ast.Attribute)) for t in targets)
        return False

    def _class_uses(self, roots: set[Key], numpy: bool, after: bool, depth: int, visited: set[object],
                    anchor: ast.AST | None = None) -> list[Use]:
        out: list[Use] = []
        loads = [node for root in roots for node in self._loads.get(root, [])]
        for node in loads:
            if id(node) in visited:
                continue
            visited.add(id(node))
            out.extend(self._context(node, numpy, after, depth, visited))
        shared = any(r[0] == "a" or (r[0] == "n" and r[1] == id(self.c.module_scope)) for r in roots)
        if shared and not self._read_here(out):
            # an attribute or module name that nothing here reads: whoever reads it is out of sight
            out.append(Use(UseKind.ESCAPE, self._anchor(roots) or anchor or self.module.body[0],
                           "stored where nothing in this module reads its values", after))
        return out

    @staticmethod
    def _read_here(uses: list[Use]) -> bool:
        """Whether some use reads the table's values. Writes do not; neither does the one call into
        compiled code that fills a table no Python int enters (81: the filler, then the reader)."""
        readers = [u for u in uses if not u.write and not u.metadata]
        opaque = [u for u in readers if u.opaque]
        return len(readers) > 1 or (len(readers) == 1 and not opaque)

    def _anchor(self, roots: set[Key]) -> ast.AST | None:
        for root in roots:
            for binding in self.c.bindings.get(root, []):
                return binding.node
        return None

    def _follow_target(self, target: ast.AST, numpy: bool, after: bool, depth: int, visited: set[object]) -> list[Use]:
        """Uses of a name a derived table was assigned to."""
        key = self.c.key_of(target)
        if key is None:
            return [Use(UseKind.ESCAPE, target, "stored where ptrlint cannot follow it", after)]
        root = self.facts.root(key)
        if ("root", root, after) in visited:
            return []
        visited.add(("root", root, after))
        return self._class_uses({root}, numpy, after, depth + 1, visited)

    # ----- one use: what the code around ``expr`` does with the table it evaluates to ---------------
    def _context(self, expr: ast.AST, numpy: bool, after: bool, depth: int, visited: set[object]) -> list[Use]:
        if depth > MAX_DEPTH:
            return [Use(UseKind.ESCAPE, expr, "followed too far to see its readers", after)]
        parent = self._parent(expr)
        if parent is None:
            return []
        same = lambda: self._context(parent, numpy, after, depth + 1, visited)  # noqa: E731
        cls = parent.__class__
        if cls is ast.Subscript and parent.value is expr:  # type: ignore[attr-defined]
            if not isinstance(parent.ctx, ast.Load):  # type: ignore[attr-defined]
                return [Use(UseKind.READY, parent, "element store", write=True)]
            if is_slice_subscript(parent):  # type: ignore[arg-type]
                return same()
            index = parent.slice  # type: ignore[attr-defined]
            if self._is_index_table(index):  # a gather by an index tensor: a table of the same dtype
                return same()
            return [Use(UseKind.READBACK, parent, "reads an element", after), *same()]
        if cls is ast.Attribute and parent.value is expr:  # type: ignore[attr-defined]
            return self._attribute_use(parent, numpy, after, depth, visited)  # type: ignore[arg-type]
        if cls is ast.Call:
            return self._argument_use(parent, expr, numpy, after, depth, visited)  # type: ignore[arg-type]
        if cls is ast.keyword:
            call = self._parent(parent)
            if isinstance(call, ast.Call):
                return self._argument_use(call, expr, numpy, after, depth, visited, keyword=parent.arg)  # type: ignore[attr-defined]
            return []
        if cls is ast.BinOp:
            return self._arithmetic_use(parent, expr, numpy, after, depth, visited)  # type: ignore[arg-type]
        if cls is ast.AugAssign:
            if isinstance(parent.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):  # type: ignore[attr-defined]
                return [Use(UseKind.READY, parent, "bitwise update")]
            return [Use(UseKind.INT64, parent, "in-place arithmetic (torch's uint64 has no such kernel)", after)]
        if cls is ast.UnaryOp:
            if isinstance(parent.op, ast.Not):  # type: ignore[attr-defined]
                return [Use(UseKind.READY, parent, "truth test")]
            return [Use(UseKind.ORDER, parent, "a sign operation", after)]
        if cls is ast.Compare:
            ops = parent.ops  # type: ignore[attr-defined]
            if any(isinstance(op, (ast.Lt, ast.Gt, ast.LtE, ast.GtE)) for op in ops) and not numpy:
                return [Use(UseKind.ORDER, parent, "an ordering comparison", after)]
            return [Use(UseKind.READY, parent, "comparison")]
        if cls is ast.Return:
            return self._returned(parent, numpy, after, depth, visited)  # type: ignore[arg-type]
        if cls in (ast.Assign, ast.AnnAssign, ast.NamedExpr):
            targets = parent.targets if cls is ast.Assign else [parent.target]  # type: ignore[attr-defined]
            if getattr(parent, "value", None) is not expr:
                return []
            out: list[Use] = []
            for target in targets:
                if isinstance(target, (ast.Name, ast.Attribute)):
                    out.extend(self._follow_target(target, numpy, after, depth, visited))
                elif isinstance(target, ast.Subscript):
                    out.append(Use(UseKind.READY, parent, "copied into another buffer"))
                else:
                    out.append(Use(UseKind.READBACK, parent, "unpacked into Python values", after))
            return out
        if cls in _LOOPS and getattr(parent, "iter", None) is expr:
            return [Use(UseKind.READBACK, parent, "iterated over", after)]
        if cls in (ast.List, ast.Tuple, ast.Set, ast.ListComp, ast.GeneratorExp, ast.Starred):
            grand = self._parent(parent)
            if isinstance(grand, ast.Return) or cls is ast.Starred or isinstance(grand, ast.Yield):
                return [Use(UseKind.ESCAPE, parent, "returned inside a container", after)]
            return self._context(parent, numpy, after, depth + 1, visited)
        if cls is ast.Dict:
            return [Use(UseKind.ESCAPE, parent, "stored in a dict", after)]
        if cls is ast.IfExp:
            return same() if parent.test is not expr else []  # type: ignore[attr-defined]
        if cls in (ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda):
            return [Use(UseKind.ESCAPE, parent, "yielded or captured", after)]
        return []

    def _is_index_table(self, index: ast.AST) -> bool:
        """``table[idx]`` with an index tensor or list (a gather), not a Python int."""
        if isinstance(index, (ast.List, ast.ListComp)):
            return True
        if isinstance(index, ast.Call):
            return attr_name(index.func) in ("tensor", "as_tensor", "arange", "array", "asarray", "nonzero", "argsort")
        if isinstance(index, (ast.Name, ast.Attribute)):
            value = self.facts.value(index)
            return value is not None and value.kind is Kind.SEQ
        return False

    def _attribute_use(self, attribute: ast.Attribute, numpy: bool, after: bool, depth: int,
                       visited: set[object]) -> list[Use]:
        attr = attribute.attr
        call = self._parent(attribute)
        if isinstance(call, ast.Call) and call.func is attribute:
            return self._method_use(call, attr, numpy, after, depth, visited)
        if attr in VIEW_ATTRIBUTES:
            return self._context(attribute, numpy or attr == "np", after, depth + 1, visited)
        if attr == "dtype":
            compare = self._parent(attribute)
            if isinstance(compare, ast.Compare):
                others = [compare.left, *compare.comparators]
                if any(self.c.types.dtype_qname(o) in SIGNED64_DTYPES for o in others if o is not attribute):
                    return [Use(UseKind.INT64, compare, "a `.dtype` check against int64", after)]
            return [Use(UseKind.READY, attribute, "reads the dtype", metadata=True)]
        return [Use(UseKind.READY, attribute, f"reads `.{attr}`", metadata=True)]

    def _method_use(self, call: ast.Call, method: str, numpy: bool, after: bool, depth: int,
                    visited: set[object]) -> list[Use]:
        args = positional(call)
        if method == "view" and args and (self.c.types.dtype_qname(args[0]) is not None or self._is_dtype(args[0])):
            return [Use(UseKind.READY, call, "an explicit bit reinterpretation")]
        if method == "numpy":
            return self._context(call, True, after, depth + 1, visited)
        if method in _READBACK_METHODS:
            return [Use(UseKind.READBACK, call, f"`.{method}()`", after)]
        if method in _ORDER_METHODS and not numpy:
            return [Use(UseKind.ORDER, call, f"`.{method}()`", after)]
        if method in _SAME_TABLE_METHODS or method == "view":
            if method in ("to", "type") and args and self._is_dtype(args[0]):
                return [Use(UseKind.READY, call, "converted to another dtype")]
            return self._context(call, numpy, after, depth + 1, visited)
        if method in _WRITE_METHODS:
            return [Use(UseKind.READY, call, f"`.{method}()`", write=True)]
        if method in _READY_METHODS:
            return [Use(UseKind.READY, call, f"`.{method}()`")]
        if method in _INT64_METHODS and not numpy:
            use = Use(UseKind.INT64, call, f"`.{method}()` (torch's uint64 has no such kernel)", after)
            return [use, *self._context(call, numpy, True, depth + 1, visited)]
        if numpy:
            return [Use(UseKind.READY, call, f"numpy `.{method}()`")]
        return [Use(UseKind.INT64, call, f"`.{method}()`, which ptrlint does not know to work on uint64", after)]

    def _is_dtype(self, expr: ast.AST) -> bool:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return classify_string_dtype(expr.value) is not None  # "int64", not "cuda"
        return any(q.startswith(("torch.", "numpy.")) for q in self.c.qualified_names(expr)) and \
            isinstance(expr, (ast.Attribute, ast.Name)) and attr_name(expr) not in ("device",)

    def _arithmetic_use(self, binop: ast.BinOp, expr: ast.AST, numpy: bool, after: bool, depth: int,
                        visited: set[object]) -> list[Use]:
        op = binop.op
        other = binop.right if binop.left is expr else binop.left
        if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            return self._context(binop, numpy, after, depth + 1, visited)
        if isinstance(op, (ast.FloorDiv, ast.Mod, ast.Div)) and not numpy:
            return [Use(UseKind.ORDER, binop, "division or modulo (depends on the sign)", after)]
        if numpy:
            value = self.facts.value(other)
            if isinstance(other, ast.Constant) or (value is not None and value.kind is Kind.SCALAR and value.python_int
                                                   and not self.facts.tensors.is_signed_numpy_array(other)):
                return self._context(binop, numpy, after, depth + 1, visited)  # uint64 op Python int stays uint64
            use = Use(UseKind.INT64, binop, "numpy arithmetic with a signed array (uint64 + int64 is float64)", after)
        else:
            use = Use(UseKind.INT64, binop, "torch arithmetic (torch's uint64 has no such kernel)", after)
        return [use, *self._context(binop, numpy, True, depth + 1, visited)]

    def _returned(self, ret: ast.Return, numpy: bool, after: bool, depth: int, visited: set[object]) -> list[Use]:
        function = self._enclosing_function(ret)
        if function is None:
            return [Use(UseKind.ESCAPE, ret, "returned", after)]
        if ("fn", id(function), after) in visited:
            return []
        visited.add(("fn", id(function), after))
        out: list[Use] = []
        for call in self._callers.get(id(function), []):
            out.extend(self._context(call, numpy, after, depth + 1, visited))
        external = self._external_callers(function)
        if external is not None:
            out.extend(replace(u, after_arithmetic=after or u.after_arithmetic) for u in external)
        if not out:
            out.append(Use(UseKind.ESCAPE, ret, f"returned by `{function.name}()`, which nothing here calls", after))
        return out

    def _enclosing_function(self, node: ast.AST) -> FunctionNode | None:
        current = self._parent(node)
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return current
            if isinstance(current, ast.Lambda):
                return None
            current = self._parent(current)
        return None

    def _external_callers(self, function: FunctionNode) -> list[Use] | None:
        """Uses of the function's result in other modules of the project (through the index)."""
        if self.view is None or not self.module_name:
            return None
        qualname = self._qualname(function)
        if qualname is None:
            return None
        return self.view.result_consumers(f"{self.module_name}.{qualname}", self.facts.options)  # type: ignore[attr-defined]

    def _qualname(self, function: FunctionNode) -> str | None:
        c = self.c
        class_id = c.method_class.get(id(function))
        if class_id is None:
            return function.name if any(f is function for k, f in c.functions.items() if k[1] == id(c.module_scope)) \
                else None
        local = c.class_qualnames.get(class_id)
        return f"{local}.{function.name}" if local else None

    # ----- a call that takes the table ---------------------------------------------------------------
    def _argument_use(self, call: ast.Call, expr: ast.AST, numpy: bool, after: bool, depth: int,
                      visited: set[object], keyword: str | None = None) -> list[Use]:
        c = self.c
        func = call.func
        if func is expr:
            return [Use(UseKind.READY, call, "called")]
        position = next((i for i, a in enumerate(call.args) if a is expr), None)
        if isinstance(func, ast.Subscript):  # `kernel[grid](table, ...)`: a Triton launch reads raw bits
            if self._names_element_type(call):
                return [Use(UseKind.INT64, call, "passed to a kernel with a signed 64-bit element type", after)]
            return [Use(UseKind.READY, call, "a kernel launch")]
        qnames = c.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else set()
        spelled = next(iter(sorted(qnames)), dotted(func) or (attr_name(func) or "a call"))
        configured = self._configured(qnames)
        if configured is not None:
            return [Use(configured, call, f"`{spelled}()` is configured as a{'n int64' if configured is UseKind.INT64 else ' uint64'} consumer", after)]
        if self._names_element_type(call):
            return [Use(UseKind.INT64, call, f"passed to `{spelled}()` with a signed 64-bit element type", after)]
        collective = self._collective(qnames)
        if collective is not None:
            receives, sends = _COLLECTIVES[collective]
            slot = position if position is not None else _COLLECTIVE_KEYWORDS.get(keyword or "", -1)
            if slot in receives:
                return [Use(UseKind.RECEIVE, call, f"received through `{collective}` (collectives reject uint64)", after)]
            return [Use(UseKind.INT64, call, f"sent through `{collective}` (collectives reject uint64)", after)]
        if qnames & _LIKE_FUNCTIONS:
            return self._like_uses(call, numpy, after, depth, visited)
        if qnames & _SAME_TABLE_FUNCTIONS:
            same_numpy = numpy if not qnames & {"torch.from_numpy", "torch.as_tensor", "torch.tensor"} else False
            if any(q.startswith("numpy.") for q in qnames):
                same_numpy = True
            return self._context(call, same_numpy, after, depth + 1, visited)
        if qnames & _READY_FUNCTIONS:
            return [Use(UseKind.READY, call, f"`{spelled}()`")]
        if qnames & _READBACK_FUNCTIONS:
            return [Use(UseKind.READBACK, call, f"`{spelled}()`", after)]
        if qnames & _ORDER_FUNCTIONS and not (numpy and qnames & {"builtins.max", "builtins.min"}):
            return [Use(UseKind.ORDER, call, f"`{spelled}()`", after)]
        if qnames & UNSAFE_FUNCTIONS:
            if numpy or any(q.startswith("numpy.") for q in qnames):
                return [Use(UseKind.READY, call, f"`{spelled}()` (numpy's uint64 has it)")]
            use = Use(UseKind.INT64, call, f"`{spelled}()` (torch's uint64 has no such kernel)", after)
            return [use, *self._context(call, numpy, True, depth + 1, visited)]
        if any(q.startswith("ptrlint.runtime") for q in qnames):
            return [Use(UseKind.READY, call, "`ptrlint.runtime` takes uint64")]
        if isinstance(func, ast.Attribute) and func.attr in ("append", "extend", "insert", "add") and \
                self.c.key_of(func.value) is not None and not qnames:
            return self._container_uses(func.value, numpy, after, depth, visited)
        if isinstance(func, ast.Attribute) and func.attr in _LOGGING_METHODS:
            return [Use(UseKind.READY, call, "logged")]
        if isinstance(func, ast.Attribute) and func.attr in _TENSOR_ARGUMENT_METHODS and not qnames:
            return [Use(UseKind.READY, call, f"`.{func.attr}()` of another buffer")]
        target = c.types.function_called(func)
        if target is not None:
            return self._parameter_uses(target, call, expr, position, keyword, numpy, after, depth, visited)
        class_id = c.types.class_of_name(func)
        if isinstance(class_id, int):  # a module class: the attribute it binds is an alias of the table, and
            # the instance carries the table wherever it goes (`from_dlpack(Wrapper(table))`)
            return [Use(UseKind.READY, call, "stored in an instance of a module class"),
                    *self._context(call, numpy, after, depth + 1, visited)]
        if any(q.startswith("torch.ops.") for q in qnames) or (not qnames and dotted(func).startswith("torch.ops.")):
            return [Use(UseKind.INT64, call, f"`{spelled}()` is a compiled operator outside the project (may require int64)",
                        after, opaque=True)]
        if any(q.startswith(("torch.", "numpy.")) for q in qnames):
            if any(q.startswith("numpy.") for q in qnames) or numpy:
                return [Use(UseKind.READY, call, f"`{spelled}()`")]
            return [Use(UseKind.INT64, call, f"`{spelled}()`, which ptrlint does not know to work on uint64", after)]
        external = c.types.external_callee(func) if self.view is not None else None
        if external is not None and self._is_project(external):
            found = self.view.param_consumers(external, position, keyword, self.facts.options)  # type: ignore[union-attr]
            if found is not None:
                return [replace(u, after_arithmetic=after or u.after_arithmetic) for u in found]
            return [Use(UseKind.INT64, call, f"`{spelled}()` is a function of the project that ptrlint cannot follow "
                                             "(unknown means int64)", after, opaque=True)]
        if qnames:
            return [Use(UseKind.INT64, call, f"`{spelled}()` is code outside the project (unknown means int64)", after,
                        opaque=True)]
        loader = self._loaded_module(func)
        if loader is not None:
            return [Use(UseKind.INT64, call, f"`{spelled}()` belongs to a module loaded by `{loader}()` "
                                             "(compiled code: unknown means int64)", after, opaque=True)]
        return [Use(UseKind.READY, call, f"`{spelled}()`, a callable of this module's own (a parameter or local)")]

    def _loaded_module(self, func: ast.AST) -> str | None:
        """``mod.run(table)`` where ``mod`` came from an imported loader (``load_jit(...)``,
        ``cpp_extension.load(...)``, ``get_module()`` of another package): compiled code."""
        if not isinstance(func, ast.Attribute):
            return None
        base = func.value
        calls: list[ast.expr] = [base] if isinstance(base, ast.Call) else []
        key = self.c.key_of(base) if isinstance(base, (ast.Name, ast.Attribute)) else None
        if key is not None:
            calls += [b.expr for b in self.c.bindings.get(key, []) if b.how == "expr"]
        for call in calls:
            if isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute)):
                qnames = self.c.qualified_names(call.func)
                if any(not q.startswith("builtins.") for q in qnames) and not self._is_project(next(iter(qnames))):
                    return attr_name(call.func)
        return None

    def _is_project(self, qname: str) -> bool:
        return bool(self.view is not None and self.view.is_project_symbol(qname))  # type: ignore[attr-defined]

    def _configured(self, qnames: set[str]) -> UseKind | None:
        for qname in qnames:
            if any(fnmatch.fnmatchcase(qname, p) for p in self.uint64_consumers):
                return UseKind.READY
            if any(fnmatch.fnmatchcase(qname, p) for p in self.int64_consumers):
                return UseKind.INT64
        return None

    @staticmethod
    def _collective(qnames: set[str]) -> str | None:
        for qname in qnames:
            module, _, name = qname.rpartition(".")
            if module.startswith("torch.distributed") and name in _COLLECTIVES:
                return name
        return None

    def _names_element_type(self, call: ast.Call) -> bool:
        return self.c.types.element_type_argument(call) is not None

    def _like_uses(self, call: ast.Call, numpy: bool, after: bool, depth: int, visited: set[object]) -> list[Use]:
        """``torch.empty_like(table)``: a new buffer with the table's dtype; its own uses count too."""
        creation = self.c.creation_by_id.get(id(call))
        if creation is None or ("like", id(call)) in visited:
            return [Use(UseKind.READY, call, "`*_like` copy")]
        visited.add(("like", id(call)))
        uses = self._class_uses(self._roots(creation), numpy, after, depth + 1, visited)
        if not self._binds_alias(call, self._parent(call)):
            uses.extend(self._context(call, numpy, after, depth + 1, visited))
        return uses

    def _container_uses(self, container: ast.expr, numpy: bool, after: bool, depth: int,
                        visited: set[object]) -> list[Use]:
        """``gathered.append(table)``: what is done with the list is done with the table."""
        key = self.c.key_of(container)
        if key is None:
            return [Use(UseKind.ESCAPE, container, "put in a container ptrlint cannot follow", after)]
        root = self.facts.root(key)
        if ("container", root) in visited:
            return []
        visited.add(("container", root))
        return self._class_uses({root}, numpy, after, depth + 1, visited)

    def _parameter_uses(self, function: FunctionNode, call: ast.Call, expr: ast.AST, position: int | None,
                        keyword: str | None, numpy: bool, after: bool, depth: int, visited: set[object]) -> list[Use]:
        param = None
        for name, arg in self.facts.flow.bind_arguments(function, call):
            if arg is expr:
                param = name
                break
        if param is None:
            return [Use(UseKind.ESCAPE, call, f"passed to `{function.name}()` in a way ptrlint cannot bind", after)]
        return self.parameter_uses(function, param, numpy, after, depth, visited)

    def parameter_uses(self, function: FunctionNode, param: str, numpy: bool = False, after: bool = False,
                       depth: int = 0, visited: set[object] | None = None) -> list[Use]:
        """Uses of a function's parameter inside the function (and wherever it goes from there)."""
        self._index()
        visited = set() if visited is None else visited
        scope_id = self.c.function_scopes.get(id(function))
        if scope_id is None:
            return []
        root = self.facts.root(("n", scope_id, param))
        if ("param", root, after) in visited:
            return []
        visited.add(("param", root, after))
        return self._class_uses({root}, numpy, after, depth + 1, visited)

    def result_uses(self, qualname: str, numpy: bool = False) -> list[Use]:
        """Uses, in this module, of what calls to ``qualname`` (another module's function) return."""
        self._index()
        c = self.c
        visited: set[object] = set()
        out: list[Use] = []
        for node in ast.walk(self.module):
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) and \
                    attr_name(node.func) == qualname.rpartition(".")[2] and qualname in c.qualified_names(node.func):
                out.extend(self._context(node, numpy, False, 1, visited))
        return out

    # ----- "only Python ints overflow" ---------------------------------------------------------------
    def python_int_enters(self, creation: Creation) -> bool:
        """Whether a Python int (not a tensor's bits) is ever written into the creation's buffer."""
        facts, c = self.facts, self.c
        for part in (creation.data, creation.fill):
            if part is not None and self._may_hold_python_ints(part):
                return True
        for root in self._roots(creation):
            for member in facts.groups.get(root, [root]):
                if c.adds.get(member):
                    return True
                for binding in c.stores.get(member, []):
                    if binding.how != "seq" and self._python_values(binding.expr):
                        return True
                if facts.passes.get(member):
                    return True  # a module function writes into it: whatever it writes
        return False

    def _may_hold_python_ints(self, part: ast.AST) -> bool:
        """A creation's data or fill: Python values unless known to be a tensor's bits or only indices."""
        value = self.facts.value(part)
        if value is None:
            return True  # `torch.tensor(pointers)` of a list ptrlint cannot trace: Python ints, as far as it knows
        if not value.is_pointer:
            return False  # built only from constants, shapes, lengths (contrary evidence), or wrapped on purpose
        return value.python_int if value.kind is Kind.SCALAR else not value.array

    def _python_values(self, expr: ast.AST) -> bool:
        value = self.facts.value(expr)
        if value is None or not value.is_pointer:
            return False
        return value.python_int if value.kind is Kind.SCALAR else not value.array

    def values_leave(self, uses: Iterable[Use]) -> Use | None:
        """The first use that reads values back as Python values or lets them escape."""
        return next((u for u in uses if u.kind in (UseKind.READBACK, UseKind.ESCAPE)), None)

    # ----- where Python ints are written in after creation --------------------------------------------
    def element_stores(self, creation: Creation) -> tuple[list[ast.Call], str | None]:
        """The numpy views (``table.numpy()`` calls) through which Python ints are stored into a torch
        table, and why a bit-preserving creation cannot cover the stores (or None). Element stores
        straight into the torch tensor are PTR005's to fix."""
        c = self.c
        sites: list[ast.Call] = []
        for root in self._roots(creation):
            for member in self.facts.groups.get(root, [root]):
                for binding in c.stores.get(member, []):
                    if binding.how == "seq" or not self._python_values(binding.expr):
                        continue
                    node = binding.node
                    target = node.targets[0] if isinstance(node, ast.Assign) and node.targets else None
                    base = target.value if isinstance(target, ast.Subscript) else None
                    chains = [base] if base is not None else []
                    if isinstance(base, (ast.Name, ast.Attribute)):
                        chains += [b.expr for b in c.bindings.get(member, []) if b.how == "expr"]
                    found = next((s for s in map(_numpy_view_call, chains) if s is not None), None)
                    if found is not None:
                        if found not in sites:
                            sites.append(found)
                    elif creation.library == "numpy":
                        return sites, f"Python ints are stored into the numpy array on line {node.lineno}"
                    elif any(_through_view_attribute(b) for b in chains):
                        return sites, f"Python ints are stored through a buffer view on line {node.lineno}"
        return sites, None


def _numpy_view_call(expr: ast.AST | None) -> ast.Call | None:
    """The ``x.numpy()`` call in an alias chain (``buf.numpy()[:n]``, ``view = t.numpy()``)."""
    while expr is not None:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            if expr.func.attr == "numpy" and not expr.args:
                return expr
            expr = expr.func.value if expr.func.attr in PASSTHROUGH_METHODS else None
        elif isinstance(expr, ast.Subscript) and is_slice_subscript(expr):
            expr = expr.value
        else:
            return None
    return None


def _through_view_attribute(expr: ast.AST | None) -> bool:
    while isinstance(expr, (ast.Subscript, ast.Attribute, ast.Call)):
        if isinstance(expr, ast.Attribute) and expr.attr in VIEW_ATTRIBUTES:
            return True
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return False
