"""vLLM's prompt-embeddings pointer tables: ``PromptEmbedsState.embeds_ptrs`` and ``mask_ptrs`` of
``vllm.v1.worker.gpu.model_states.prompt_embeds``, uint64 ``UvaBackedTensor`` tables of raw addresses (a
mask entry of 0 means no mask), written one entry per request through their numpy alias (``.np[i] =
data_ptr()``), copied to the UVA buffer each step and read by ``_apply_prompt_embeds_kernel``. One family of
``families.py``.

Filled: ``__init__`` (fast: both tables uint64) and ``add_request`` (every level, O(1): the entry just written
reads back as the address of the tensor it came from; strict registers the embeddings and the mask). Launched:
``apply`` (strict: for every request of the batch whose embeddings the kernel still reads, the entry's reach,
``embeds_len`` rows of ``hidden_size`` elements, and its mask's, inside one registered region). Under simulated
high addresses ``apply`` hands the kernel real addresses (at every level).
"""

from __future__ import annotations

import functools
import inspect
from types import ModuleType
from typing import Any

from ._torch import np, torch
from .errors import PointerBoundsError, PointerRoundTripError
from .guard import host_array
from .regions import default_regions
from .simulate import active as simulating
from .simulate import to_real_array
from .tables import RAW, check_table, launch_level, sync_context, to_real_table

MODULE = "vllm.v1.worker.gpu.model_states.prompt_embeds"
_NAME = f"{MODULE} PromptEmbedsState"
_TABLES = ("embeds_ptrs", "mask_ptrs")
_FIX = (
    "Strict registers the embeddings and masks add_request copies to the device and forgets them when they are "
    "freed: an entry outside every region points at memory a removed request freed while the batch still reads "
    "it, or was overwritten or converted on its way in (store data_ptr() as it is into the uint64 table)"
)


def _check_dtypes(state: Any, level: str) -> None:
    for table in _TABLES:
        uva = getattr(state, table, None)
        if uva is not None:
            check_table(getattr(uva, "cpu", uva), f"{_NAME}.{table}", None, encoding=RAW, level=level, remedy=_FIX)


def _check_entry(state: Any, index: int, req_id: Any, level: str) -> None:
    """The entries ``add_request`` just wrote read back as the addresses of the tensors it keeps."""
    embeds, mask = state.gpu_tensors.get(req_id, (None, None))
    if embeds is None:
        return
    if level == "strict":
        regions = default_regions()
        regions.ensure(embeds, f"vLLM prompt embeddings of request {req_id!r}")
        if mask is not None:
            regions.ensure(mask, f"vLLM prompt-embeddings mask of request {req_id!r}")
    for table, tensor in (("embeds_ptrs", embeds), ("mask_ptrs", mask)):
        stored = int(np.asarray(getattr(state, table).np[index : index + 1]).view(np.uint64)[0])
        want = int(tensor.data_ptr()) if tensor is not None else 0
        if stored != want:
            raise PointerRoundTripError(
                f"entry {index} of {_NAME}.{table}: stored {stored:#x}, but the "
                f"{'mask' if table == 'mask_ptrs' else 'embeddings'} of request {req_id!r} are at {want:#x} "
                f"({tensor.numel() * tensor.element_size() if tensor is not None else 0} bytes). {_FIX}"
            )


def _check_launch(state: Any, input_batch: Any, num_computed_tokens: Any) -> None:
    """Strict: the reach of every entry the kernel reads this step lies inside one registered region."""
    num_reqs = int(input_batch.num_reqs)
    rows = host_array(input_batch.idx_mapping[:num_reqs], "idx_mapping").astype(np.int64)
    lens = host_array(state.embeds_lens.gpu, "embeds_lens").astype(np.int64)[rows]
    done = host_array(num_computed_tokens, "num_computed_tokens").astype(np.int64)[rows]
    live = rows[lens > done]
    if not len(live):
        return
    element = torch.empty((), dtype=state.dtype).element_size()
    regions = default_regions()
    for table, row_bytes in (("embeds_ptrs", state.hidden_size * element), ("mask_ptrs", 1)):
        values = host_array(getattr(state, table).gpu, f"{_NAME}.{table}").view(np.uint64)[live]
        nbytes = (host_array(state.embeds_lens.gpu, "embeds_lens").astype(np.int64)[live] * row_bytes).astype(np.uint64)
        keep = values != 0 if table == "mask_ptrs" else np.ones(len(live), bool)  # 0: no mask
        real = to_real_array(values)
        with np.errstate(over="ignore"):
            last = real + np.maximum(nbytes, np.uint64(1)) - np.uint64(1)
        bad = np.flatnonzero(keep & ((values == 0) | ~regions.contains(real, last)))
        if len(bad):
            j = int(bad[0])
            index, addr, size = int(live[j]), int(real[j]), int(nbytes[j])
            where = (
                "is null"
                if int(values[j]) == 0
                else f"[{addr:#x}, +{size}) is not inside one registered region; {regions.nearest(addr)}"
            )
            raise PointerBoundsError(f"entry {index} of {_NAME}.{table} (read this step): {where}. {_FIX}")


def patch(module: ModuleType, level: str) -> bool:
    cls: Any = getattr(module, "PromptEmbedsState", None)
    methods = {name: vars(cls).get(name) for name in ("__init__", "add_request", "apply")} if cls is not None else {}
    if not methods or not all(inspect.isfunction(m) for m in methods.values()):
        return False
    init, add, apply = methods["__init__"], methods["add_request"], methods["apply"]
    apply_signature = inspect.signature(apply)

    def guarded_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        _check_dtypes(self, level)

    def add_request(self: Any, req_index: int, new_req_data: Any, *args: Any, **kwargs: Any) -> Any:
        result = add(self, req_index, new_req_data, *args, **kwargs)
        if level != "off":
            _check_entry(self, int(req_index), getattr(new_req_data, "req_id", None), level)
        return result

    def guarded_apply(self: Any, *args: Any, **kwargs: Any) -> Any:
        if launch_level(level) == "strict" and self.gpu_tensors:
            bound = apply_signature.bind_partial(self, *args, **kwargs).arguments
            with sync_context("strict"):
                _check_launch(self, bound["input_batch"], bound["num_computed_tokens"])
        if simulating():
            for table in _TABLES:
                to_real_table(getattr(self, table).gpu)
        return apply(self, *args, **kwargs)

    for original, replacement in ((init, guarded_init), (add, add_request), (apply, guarded_apply)):
        functools.update_wrapper(replacement, original)
        setattr(cls, original.__name__, replacement)
    return True


__all__ = ["MODULE", "patch"]
