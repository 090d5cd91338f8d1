"""vLLM's V2 model runner block-table pointer tables: ``BlockTables.block_table_ptrs`` and
``input_block_table_ptrs`` of ``vllm.v1.worker.gpu.block_table`` (uint64, raw addresses, filled by
``_make_ptr_tensor``) and ``PCPManager._local_block_table_ptrs`` of ``vllm.v1.worker.gpu.pcp_manager``
(filled by ``set_block_tables``, launched as ``gather_block_tables``' ``out_ptrs``). Two families of
``families.py``."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from . import tables

# ----- the V2 runner's block tables and the PCP manager's local ones ---------------------------------
BLOCK_TABLE = "vllm.v1.worker.gpu.block_table"
PCP = "vllm.v1.worker.gpu.pcp_manager"
_BT = f"{BLOCK_TABLE} BlockTables"
BT_LAUNCHES = ("apply_staged_writes", "gather_block_tables", "compute_slot_mappings")
_BT_FIX = (
    "Strict registers the block tables _make_ptr_tensor and PCPManager.set_block_tables are handed; "
    "register(tensor) any other"
)


def _bt_sources(bt: Any) -> dict[str, list[Any]]:
    """Each table of a ``BlockTables`` and the tensors vLLM fills it from (``init_block_table_layout_tensors``)."""
    out: dict[str, list[Any]] = {}
    with contextlib.suppress(AttributeError, TypeError):
        out["block_table_ptrs"] = [b.gpu for b in bt.block_tables]
    with contextlib.suppress(AttributeError, TypeError):
        out["input_block_table_ptrs"] = list(bt.input_block_tables)
    return out


def _check_block_tables(bt: Any, level: str, out: Any = None, out_ptrs: Any = None) -> None:
    strict = level == "strict"
    for name, sources in _bt_sources(bt).items():
        table = getattr(bt, name, None)
        if table is not None:
            tables.check_table(
                table,
                f"{_BT}.{name}",
                tables.targets_of(sources, "block table") if strict else None,
                encoding=tables.RAW,
                level=level,
                remedy=_BT_FIX,
            )
    if out_ptrs is not None:  # the PCP manager hands its own table (and the tensors it was filled from)
        tables.check_table(
            out_ptrs,
            f"{_BT}.gather_block_tables out_ptrs (as {PCP} PCPManager._local_block_table_ptrs)",
            tables.targets_of(list(out), "output block table") if strict and out is not None else None,
            encoding=tables.RAW,
            level=level,
            remedy=_BT_FIX,
        )


def _filled(label: str, level: str, sources: list[Any], table: Any, name: str) -> None:
    """A table just built from ``sources``: register them (strict), check it, hand its kernels real addresses."""
    if level == "strict":
        tables.register_tensors(sources, label)
    tables.check_table(
        table, name, tables.targets_of(sources, "block table"), encoding=tables.RAW, level=level, remedy=_BT_FIX
    )
    tables.to_real_table(table)


def _bt_launch(original: Callable[..., Any], level: str) -> Callable[..., Any]:
    signature = inspect.signature(original)

    def launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        at = tables.launch_level(level)
        if at == "strict":
            bound = signature.bind_partial(self, *args, **kwargs).arguments
            with tables.sync_context(at):
                _check_block_tables(self, at, bound.get("out"), bound.get("out_ptrs"))
        elif at == "fast":  # inside a CUDA graph capture: the dtypes only
            _check_block_tables(self, at, None, kwargs.get("out_ptrs"))
        return original(self, *args, **kwargs)

    functools.update_wrapper(launch, original)
    return launch


def patch_block_tables(module: ModuleType, level: str) -> bool:
    cls: Any = getattr(module, "BlockTables", None)
    make = vars(cls).get("_make_ptr_tensor") if cls is not None else None
    if not inspect.isfunction(make):
        return False

    def _make_ptr_tensor(self: Any, x: Any) -> Any:
        sources = list(x)
        table = make(self, sources)
        _filled("vLLM block table", level, sources, table, f"{_BT}._make_ptr_tensor")
        return table

    functools.update_wrapper(_make_ptr_tensor, make)
    cls._make_ptr_tensor = _make_ptr_tensor
    for name in BT_LAUNCHES if level == "strict" else ():
        if inspect.isfunction(vars(cls).get(name)):
            setattr(cls, name, _bt_launch(vars(cls)[name], level))
    return True


def patch_pcp(module: ModuleType, level: str) -> bool:
    cls: Any = getattr(module, "PCPManager", None)
    setter = vars(cls).get("set_block_tables") if cls is not None else None
    if not inspect.isfunction(setter):
        return False

    def set_block_tables(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = setter(self, *args, **kwargs)
        table, sources = getattr(self, "_local_block_table_ptrs", None), getattr(self, "_local_block_tables", None)
        if table is not None and sources is not None:
            _filled(
                "vLLM PCP local block table", level, list(sources), table, f"{PCP} PCPManager._local_block_table_ptrs"
            )
        return result

    functools.update_wrapper(set_block_tables, setter)
    cls.set_block_tables = set_block_tables
    return True


__all__ = ["BLOCK_TABLE", "BT_LAUNCHES", "PCP", "patch_block_tables", "patch_pcp"]
