"""A pointer table passed to a call, classified: what the callee does with the argument (uint64-ready,
int64-bound, sign-sensitive, escaping), by what it is: known by name (torch, numpy, the builtins, a
collective, a configured consumer), a container's or a logger's method, a function or class of this
module, another module's function, or code ptrlint cannot see. What an attribute, a method or an
operator does with a table is :mod:`.load_uses`'."""

from __future__ import annotations

import ast
import fnmatch

from ...names import COLLECTIVE_KEYWORDS, COLLECTIVES, UNSAFE_FUNCTIONS
from ..semantic.records import FunctionNode
from ..semantic.syntax import attr_name, dotted
from .callees import inherited, inherited_external, loaded_module
from .consumer_parts import ConsumersPart, UseSearch
from .dtype_match import DtypeMatch
from .uses import (
    DTYPE_MATCHING_METHODS,
    LIKE_FUNCTIONS,
    LOGGING_METHODS,
    ORDER_FUNCTIONS,
    READBACK_FUNCTIONS,
    READY_FUNCTIONS,
    REDUCED_COPIES,
    SAME_TABLE_FUNCTIONS,
    TENSOR_ARGUMENT_METHODS,
    Path,
    Trail,
    Use,
    UseKind,
    copied,
)


class UseClassifier(ConsumersPart):
    """What a call does with a table passed to it (see the module docstring)."""

    def __init__(self, search: UseSearch) -> None:
        super().__init__(search)
        self.match = DtypeMatch(search)

    def external_callers(self, function: FunctionNode, path: Path = ()) -> list[Use] | None:
        """Uses of the function's result in other modules of the project (through the index); a
        method's: of every ``x.name(...)`` there."""
        if self.view is None or not self.module_name:
            return None
        qualname = self.qualname(function)
        if qualname is None:
            return None
        return self.view.result_consumers(f"{self.module_name}.{qualname}", path, self.facts.options)

    def qualname(self, function: FunctionNode) -> str | None:
        model = self.model
        class_id = model.method_class.get(id(function))
        if class_id is None:
            return (
                function.name
                if any(f is function for k, f in model.functions.items() if k.scope == id(model.module_scope))
                else None
            )
        local = model.class_qualnames.get(class_id)
        return f"{local}.{function.name}" if local else None

    def argument_use(
        self, call: ast.Call, expr: ast.AST, trail: Trail, visited: set[object], keyword: str | None = None
    ) -> list[Use]:
        model = self.model
        func = call.func
        numpy, after = trail.numpy, trail.after
        if func is expr:
            return [Use(UseKind.READY, call, "called")]
        position = next((i for i, a in enumerate(call.args) if a is expr), None)
        if isinstance(func, ast.Subscript):  # `kernel[grid](table, ...)`: a Triton launch reads raw bits
            if self.names_element_type(call):
                return [Use(UseKind.INT64, call, "passed to a kernel with a signed 64-bit element type", after)]
            return [Use(UseKind.READY, call, "a kernel launch")]
        qnames = model.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else set()
        spelled = next(iter(sorted(qnames)), dotted(func) or (attr_name(func) or "a call"))
        configured = self.configured(qnames)
        if configured is not None:
            return [
                Use(
                    configured,
                    call,
                    f"`{spelled}()` is configured as a{'n int64' if configured is UseKind.INT64 else ' uint64'} consumer",
                    after,
                )
            ]
        if self.names_element_type(call):
            return [Use(UseKind.INT64, call, f"passed to `{spelled}()` with a signed 64-bit element type", after)]
        collective = self.collective(qnames)
        if collective is not None:
            receives = COLLECTIVES[collective].receives
            slot = position if position is not None else COLLECTIVE_KEYWORDS.get(keyword or "", -1)
            if slot in receives:
                return [
                    Use(UseKind.RECEIVE, call, f"received through `{collective}` (collectives reject uint64)", after)
                ]
            return [Use(UseKind.INT64, call, f"sent through `{collective}` (collectives reject uint64)", after)]
        library = self.library_use(call, expr, qnames, spelled, trail, visited)
        if library is not None:
            return library
        if (
            isinstance(func, ast.Attribute)
            and func.attr in ("append", "extend", "insert", "add")
            and self.model.key_of(func.value) is not None
            and not qnames
        ):
            return self.search.container_uses(func.value, trail, visited)
        if isinstance(func, ast.Attribute) and func.attr in LOGGING_METHODS:
            return [Use(UseKind.READY, call, "logged")]
        if isinstance(func, ast.Attribute) and func.attr in TENSOR_ARGUMENT_METHODS and not qnames:
            return [Use(UseKind.READY, call, f"`.{func.attr}()` of another buffer")]
        if isinstance(func, ast.Attribute) and func.attr in DTYPE_MATCHING_METHODS and not qnames and not numpy:
            return [self.match.source_of(call, func, after)]
        target = model.types.function_called(func) or inherited(model, func)
        if target is not None:
            return self.search.call_parameter_uses(target, call, expr, trail, visited)
        class_id = model.types.class_of_name(func)
        if class_id is not None:  # a class: the object holds the table (`from_dlpack(Wrapper(table))`)
            return self.search.held.constructor(call, expr, class_id, keyword, trail, visited)
        return self.callee_use(call, qnames, spelled, position, keyword, trail)

    def library_use(
        self, call: ast.Call, expr: ast.AST, qnames: set[str], spelled: str, trail: Trail, visited: set[object]
    ) -> list[Use] | None:
        """What a function of torch, numpy, the builtins or ptrlint's runtime, known by its qualified name,
        does with the table: a copy, a combination, a reader, an ordering, a kernel uint64 lacks; None
        when the name is none of theirs that ptrlint knows."""
        numpy, after = trail.numpy, trail.after
        if qnames & LIKE_FUNCTIONS:
            return self.search.like_uses(call, trail, visited)
        if qnames & REDUCED_COPIES and not numpy:
            return [
                Use(
                    UseKind.INT64,
                    call,
                    f"`{spelled}()` (torch cannot rebuild a uint64 tensor from its pickled form)",
                    after,
                )
            ]
        partner = self.match.combined_with(call, expr, qnames)
        if partner is not None:  # `torch.cat([old, table])`, `torch.where(m, table, other)`: the dtypes must match
            return [
                Use(
                    UseKind.INT64,
                    call,
                    f"combined with `{partner}` by `{spelled}()`, whose dtype must match "
                    "(uint64 does not promote with int64)",
                    after,
                ),
                *copied(call, spelled, after),
                *self.search.context(call, trail.step(), visited),
            ]
        if qnames & SAME_TABLE_FUNCTIONS:
            same_numpy = numpy if not qnames & {"torch.from_numpy", "torch.as_tensor", "torch.tensor"} else False
            if any(q.startswith("numpy.") for q in qnames):
                same_numpy = True
            name = next(iter(sorted(qnames & SAME_TABLE_FUNCTIONS)))
            return copied(call, name, after) + self.search.context(call, trail.step(numpy=same_numpy), visited)
        if qnames & READY_FUNCTIONS:
            return [Use(UseKind.READY, call, f"`{spelled}()`")]
        if qnames & READBACK_FUNCTIONS:
            return [Use(UseKind.READBACK, call, f"`{spelled}()`", after)]
        if qnames & ORDER_FUNCTIONS and not (numpy and qnames & {"builtins.max", "builtins.min"}):
            return [Use(UseKind.ORDER, call, f"`{spelled}()`", after)]
        if qnames & UNSAFE_FUNCTIONS:
            if numpy or any(q.startswith("numpy.") for q in qnames):
                return [Use(UseKind.READY, call, f"`{spelled}()` (numpy's uint64 has it)")]
            use = Use(UseKind.INT64, call, f"`{spelled}()` (torch's uint64 has no such kernel)", after)
            return [use, *self.search.context(call, trail.step(after=True), visited)]
        if any(q.startswith("ptrlint.runtime") for q in qnames):
            return [Use(UseKind.READY, call, "`ptrlint.runtime` takes uint64")]
        return None

    def callee_use(
        self, call: ast.Call, qnames: set[str], spelled: str, position: int | None, keyword: str | None, trail: Trail
    ) -> list[Use]:
        """A table passed to a callee that is neither known nor of this module: a compiled operator, torch or
        numpy, another module of the project (its parameter's uses, through the index), or code ptrlint
        cannot see (unknown means int64)."""
        model, func, numpy, after = self.model, call.func, trail.numpy, trail.after
        if any(q.startswith("torch.ops.") for q in qnames) or (not qnames and dotted(func).startswith("torch.ops.")):
            return [
                Use(
                    UseKind.INT64,
                    call,
                    f"`{spelled}()` is a compiled operator outside the project (may require int64)",
                    after,
                    opaque=True,
                )
            ]
        if any(q.startswith(("torch.", "numpy.")) for q in qnames):
            if any(q.startswith("numpy.") for q in qnames) or numpy:
                return [Use(UseKind.READY, call, f"`{spelled}()`")]
            return [Use(UseKind.INT64, call, f"`{spelled}()`, which ptrlint does not know to work on uint64", after)]
        external = model.types.external_callee(func) if self.view is not None else None
        if external is None and self.view is not None:
            external = inherited_external(self.model, func)
        if external is not None and self.view is not None and self.is_project(external):
            found = self.view.param_consumers(external, position, keyword, (), self.facts.options)
            if found is not None:
                return self.search.carried(found, trail)
            return [
                Use(
                    UseKind.INT64,
                    call,
                    f"`{spelled}()` is a function of the project that ptrlint cannot follow (unknown means int64)",
                    after,
                    opaque=True,
                )
            ]
        return self.unseen_callee_use(call, qnames, spelled, after)

    def unseen_callee_use(self, call: ast.Call, qnames: set[str], spelled: str, after: bool) -> list[Use]:
        """A table passed to code ptrlint cannot see: outside the project, in a module loaded at run time,
        a method of an object it cannot type, or a callable it cannot name (unknown means int64)."""
        func = call.func
        if qnames:
            return [
                Use(
                    UseKind.INT64,
                    call,
                    f"`{spelled}()` is code outside the project (unknown means int64)",
                    after,
                    opaque=True,
                )
            ]
        loader = loaded_module(self.model, func)
        if loader is not None:
            return [
                Use(
                    UseKind.INT64,
                    call,
                    f"`{spelled}()` belongs to a module loaded by `{loader}()` (compiled code: unknown means int64)",
                    after,
                    opaque=True,
                )
            ]
        if isinstance(func, ast.Attribute):
            return [
                Use(
                    UseKind.INT64,
                    call,
                    f"`{spelled}()` is a method of an object ptrlint cannot type (unknown means int64)",
                    after,
                    opaque=True,
                )
            ]
        return [
            Use(
                UseKind.INT64,
                call,
                f"`{spelled}()` is a callable ptrlint cannot see (a parameter, a local or a "
                "compiled kernel: unknown means int64)",
                after,
                opaque=True,
            )
        ]

    def is_project(self, qname: str) -> bool:
        return bool(self.view is not None and self.view.is_project_symbol(qname))

    def configured(self, qnames: set[str]) -> UseKind | None:
        for qname in qnames:
            if any(fnmatch.fnmatchcase(qname, p) for p in self.uint64_consumers):
                return UseKind.READY
            if any(fnmatch.fnmatchcase(qname, p) for p in self.int64_consumers):
                return UseKind.INT64
        return None

    @staticmethod
    def collective(qnames: set[str]) -> str | None:
        for qname in qnames:
            module, _, name = qname.rpartition(".")
            if module.startswith("torch.distributed") and name in COLLECTIVES:
                return name
        return None

    def names_element_type(self, call: ast.Call) -> bool:
        return self.model.types.element_type_argument(call) is not None
