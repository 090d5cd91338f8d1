"""Name evidence of a creation: what its target, its data argument or the field it fills say
(``peer_ptrs = torch.tensor(...)``, ``torch.tensor(self.buffer_ptrs)``). Read by :mod:`.flow` when no
value evidence decides a buffer."""

from __future__ import annotations

import ast

from ..semantic.model import SemanticModel
from ..semantic.records import Creation
from ..semantic.syntax import attr_name
from .lattice import Kind, Origin, Value
from .tensors import TensorKinds


def name_evidence(model: SemanticModel, tensors: TensorKinds, creation: Creation) -> Value | None:
    """What the names say: the creation's target, its data argument, or the field it fills."""
    names = model.options.names
    if id(creation.call) in model.narrowed or creation.like_source is not None or creation.stop is not None:
        # converted at once to a narrow dtype: data; `*_like` copies need real evidence; a range holds what
        # its start does (`np.arange(base, end, step)`), whatever it is called
        return None
    data = creation.data
    if data is not None and isinstance(data, ast.Constant):
        return None  # `torch.tensor(0)`: a scalar argument, not a table
    if (
        creation.target_name is not None
        and names.is_pointer_name(creation.target_name)
        and not _rebinds_its_data(model, creation)
    ):
        node = creation.target_node or creation.call
        return Value(
            Kind.SEQ,
            Origin.NAMED,
            ((node, f"name `{creation.target_name}` says it holds addresses"),),
            table_name=names.is_table_name(creation.target_name),
        )
    source = _data_name(data)
    if (
        source is not None
        and data is not None
        and names.is_pointer_name(source)
        and (names.is_table_name(source) or _holds_list(model, tensors, data))
    ):
        return Value(Kind.SEQ, Origin.NAMED, ((data, f"data `{source}` is named like an address table"),))
    return None


def _rebinds_its_data(model: SemanticModel, creation: Creation) -> bool:
    """``raddr = torch.tensor([raddr], ...)``: the name was the value before it was the tensor; what the
    value is (where it came from) decides, not the name it shares with its tensor."""
    target = creation.target_node
    if not isinstance(target, ast.Name) or creation.data is None:
        return False
    return any(isinstance(node, ast.Name) and node.id == target.id for node in ast.walk(creation.data))


def _holds_list(model: SemanticModel, tensors: TensorKinds, data: ast.expr) -> bool:
    """A singular address name that holds a list (``self.kv_base_addr: list[int] = []``): a table."""
    listed = _listed(data)
    key = model.key_of(listed) if listed is not None else None
    if key is None:
        return False
    if any(b.how == "expr" and tensors.is_python_list(b.expr) for b in model.bindings.get(key, [])):
        return True
    for annotation in model.annotations.get(key, []):
        base = annotation.value if isinstance(annotation, ast.Subscript) else annotation
        if attr_name(base) in ("list", "List", "Sequence", "MutableSequence"):
            return True
    return False


def _listed(data: ast.AST | None) -> ast.AST | None:
    """What ``list(...)``/``tuple(...)`` around a creation's data copy: ``list(handle.buffer_ptrs)``."""
    while isinstance(data, ast.Call) and attr_name(data.func) in ("list", "tuple") and data.args:
        data = data.args[0]
    return data


def _data_name(data: ast.AST | None) -> str | None:
    """The name of a creation's data argument (``torch.tensor(self.peer_ptrs)``, ``list(handle.buffer_ptrs)``)."""
    data = _listed(data)
    return attr_name(data) if isinstance(data, (ast.Name, ast.Attribute)) else None
