"""ptrlint.runtime.vllm.install() against a fake vllm package with vLLM's module paths."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..conftest import FAKE_VLLM_MAMBA_UTILS, make_fake_vllm


def run_with_fake_vllm(root: Path, mamba_utils_source: str, script: str) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh interpreter that imports a fake vllm (install() patches process-wide)."""
    make_fake_vllm(root, mamba_utils_source)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    return proc


SCRIPT = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
import torch
from ptrlint.runtime import vllm as plugin, KVCacheConfig, KVCacheGroupSpec, MambaSpec, make_buffer_factory
from ptrlint.runtime import get_conv_copy_spec, get_temporal_copy_spec, PointerDtypeError
assert plugin.install(check="fast") is True
assert plugin.install(check="fast") is True   # idempotent
from vllm.v1.worker import mamba_utils as mu
config = KVCacheConfig(4, [], [KVCacheGroupSpec(["m0"], MambaSpec(8, ((3, 8), (4, 8)), (torch.float32, torch.float32)))])
bufs = mu.MambaCopyBuffers.create(2, config, (get_conv_copy_spec, get_temporal_copy_spec), make_buffer_factory("cpu"))
assert type(bufs) is mu.MambaCopyBuffers
assert bufs.src_ptrs.cpu.dtype == torch.uint64 and bufs.dst_ptrs.cpu.dtype == torch.uint64
int64 = torch.zeros(1, dtype=torch.int64)
try:
    mu.batch_memcpy(int64, int64, torch.zeros(1, dtype=torch.int32))
except PointerDtypeError:
    print("GUARDED")
assert mu.CALLS == []
print("OK")
"""


def test_install_patches_fake_vllm_and_is_idempotent(tmp_path: Path):
    proc = run_with_fake_vllm(tmp_path, FAKE_VLLM_MAMBA_UTILS, SCRIPT)
    assert "GUARDED" in proc.stdout and "OK" in proc.stdout
    assert proc.stdout.count("ptrlint runtime guard installed") == 1


def test_install_without_vllm_returns_false():
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ptrlint.runtime import vllm; import sys; sys.exit(0 if vllm.install() is False else 1)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


# vLLM 0.33's layout in miniature: create() already allocates uint64; copies go through batch_memcpy
FAKE_UINT64_LAYOUT = """
import dataclasses
import torch

CALLS = []


def batch_memcpy(src_ptrs, dst_ptrs, sizes):
    CALLS.append(int(src_ptrs.shape[0]))


@dataclasses.dataclass
class MambaCopyBuffers:
    src_ptrs: object
    dst_ptrs: object
    sizes: object
    mamba_group_ids: list
    mamba_spec: object
    offset: int = 0

    @classmethod
    def create(cls, max_num_reqs, kv_cache_config, copy_funcs, make_buffer):
        return cls(make_buffer(max_num_reqs, dtype=torch.uint64), make_buffer(max_num_reqs, dtype=torch.uint64),
                   make_buffer(max_num_reqs, dtype=torch.int32), [0], "vllm's own")


def do_mamba_copy_block(copy_bufs):
    raise AssertionError("replaced by the guarded one")
"""

KEEP_SCRIPT = """
import torch
from ptrlint.runtime import vllm as plugin, make_buffer_factory, PointerBoundsError
assert plugin.install(check="strict") is True
from vllm.v1.worker import mamba_utils as mu
bufs = mu.MambaCopyBuffers.create(2, None, None, make_buffer_factory("cpu"))
assert bufs.mamba_spec == "vllm's own"   # vLLM's create() kept
src, dst = torch.arange(8, dtype=torch.uint8), torch.zeros(8, dtype=torch.uint8)
bufs.src_ptrs.np[0], bufs.dst_ptrs.np[0], bufs.sizes.np[0] = src.data_ptr(), dst.data_ptr(), 8
bufs.offset = 1
try:
    mu.do_mamba_copy_block(bufs)         # strict: nothing registered
except PointerBoundsError as exc:
    print("REFUSED", "entry 0" in str(exc))
assert mu.CALLS == []
from ptrlint.runtime import register
register(src); register(dst)
mu.do_mamba_copy_block(bufs)
print("CALLS", mu.CALLS)
print("INSTALLED", plugin.installed()[0])
"""


def test_install_keeps_a_create_that_already_allocates_uint64(tmp_path: Path):
    proc = run_with_fake_vllm(tmp_path, FAKE_UINT64_LAYOUT, KEEP_SCRIPT)
    assert "REFUSED True" in proc.stdout and "CALLS [1]" in proc.stdout  # checked, then vLLM's own copy ran
    assert "INSTALLED MambaCopyBuffers.create kept" in proc.stdout


# vLLM 0.34's layout in miniature: no MambaCopyBuffers or batch_memcpy; a fused-kernel context whose
# _populate_metadata writes int64 address tables that its launch methods hand to kernels
FAKE_034_LAYOUT = """
import dataclasses
import torch

LAUNCHED = []


def _reinterpret_u64_as_i64(value):
    return value if value < (1 << 63) else value - (1 << 64)


def _get_mamba_spec_for_layer(group, layer_name):
    return group.kv_cache_spec


def kernel(*args):
    LAUNCHED.append(len(args))


@dataclasses.dataclass
class MambaSpecDecodeGPUContext:
    state_base_addrs: torch.Tensor
    block_table_ptrs: torch.Tensor
    aligned_index_block_table_ptrs: torch.Tensor
    mamba_group_ids: list
    num_states: int
    num_groups: int
    is_initialized: bool = False

    def _populate_metadata(self, kv_cache_config, forward_context, mamba_state_copy_funcs, block_tables,
                           aligned_index_block_tables):
        idx = 0
        for gid in self.mamba_group_ids:
            group = kv_cache_config.kv_cache_groups[gid]
            for name in group.layer_names:
                funcs = mamba_state_copy_funcs[group.kv_cache_spec.mamba_type]
                for state in forward_context[name].kv_cache[:len(funcs)]:
                    self.state_base_addrs[idx] = _reinterpret_u64_as_i64(state.data_ptr())
                    idx += 1
        for i, (bt, abt) in enumerate(zip(block_tables, aligned_index_block_tables)):
            self.block_table_ptrs[i] = _reinterpret_u64_as_i64(bt.data_ptr())
            self.aligned_index_block_table_ptrs[i] = _reinterpret_u64_as_i64(abt.data_ptr())
        self.is_initialized = True

    def run_fused_precopy(self, num_reqs):
        if num_reqs == 0 or not self.is_initialized:
            return
        kernel(self.block_table_ptrs, self.state_base_addrs)
"""

SCRIPT_034 = """
import sys, types
import torch
from ptrlint.runtime import vllm as plugin, PointerRoundTripError, PointerBoundsError, register
assert plugin.install(check="strict") is True
from vllm.v1.worker import mamba_utils as mu
assert any("run_fused_precopy (state_base_addrs, block_table_ptrs)" in line for line in plugin.installed())
pages = torch.zeros(4, 224, dtype=torch.int8)
states = (pages[:, :96].view(torch.float32).view(-1, 3, 8), pages[:, 96:].view(torch.float32).view(-1, 4, 8))
spec = types.SimpleNamespace(mamba_type="mamba2")
config = types.SimpleNamespace(kv_cache_groups=[types.SimpleNamespace(layer_names=["m0"], kv_cache_spec=spec)])
layers = {"m0": types.SimpleNamespace(kv_cache=states)}
funcs = {"mamba2": ("conv", "temporal")}
table = torch.zeros(2, 4, dtype=torch.int32)
def context():
    z = lambda n: torch.zeros(n, dtype=torch.int64)
    return mu.MambaSpecDecodeGPUContext(z(2), z(1), z(1), [0], 2, 1)
unbound = context()
try:
    unbound._populate_metadata(config, layers, funcs, [table], [table])
except PointerBoundsError as exc:
    print("UNBOUND", exc)
register(pages)
ctx = context()
ctx._populate_metadata(config, layers, funcs, [table], [table])
ctx.run_fused_precopy(1)
assert mu.LAUNCHED == [2]
ctx.state_base_addrs[0] += 8
try:
    ctx.run_fused_precopy(1)
except PointerRoundTripError as exc:
    print("REFUSED", exc)
assert mu.LAUNCHED == [2]
print("OK")
"""


def test_install_guards_a_034_layout_where_filled_and_launched(tmp_path: Path):
    proc = run_with_fake_vllm(tmp_path, FAKE_034_LAYOUT, SCRIPT_034)
    assert "OK" in proc.stdout
    assert "UNBOUND entry 0 of MambaSpecDecodeGPUContext.state_base_addrs: m0 state 0 [0x" in proc.stdout
    assert "REFUSED entry 0 of MambaSpecDecodeGPUContext.state_base_addrs: address 0x" in proc.stdout
    assert "is not the address it was filled from (m0 state 0 at 0x" in proc.stdout


SCRIPT_034_DUCK = """
import logging, sys, types
logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(message)s")
import torch
from ptrlint.runtime import vllm as plugin, PointerRoundTripError, register
assert plugin.install(check="strict") is True
from vllm.v1.worker import mamba_utils as mu


class BlockTable:  # what vLLM accepts: an object with data_ptr() and stride(), not a tensor
    def __init__(self, tensor):
        self._tensor = tensor
    def data_ptr(self):
        return self._tensor.data_ptr()
    def stride(self, dim=None):
        return self._tensor.stride() if dim is None else self._tensor.stride(dim)


pages = torch.zeros(4, 224, dtype=torch.int8)
states = (pages[:, :96].view(torch.float32).view(-1, 3, 8), pages[:, 96:].view(torch.float32).view(-1, 4, 8))
register(pages)
spec = types.SimpleNamespace(mamba_type="mamba2")
config = types.SimpleNamespace(kv_cache_groups=[types.SimpleNamespace(layer_names=["m0"], kv_cache_spec=spec)])
layers = {"m0": types.SimpleNamespace(kv_cache=states)}
funcs = {"mamba2": ("conv", "temporal")}
table = BlockTable(torch.zeros(2, 4, dtype=torch.int32))
z = lambda n: torch.zeros(n, dtype=torch.int64)
ctx = mu.MambaSpecDecodeGPUContext(z(2), z(1), z(1), [0], 2, 1)
ctx._populate_metadata(config, layers, funcs, [table], [table])
ctx.run_fused_precopy(1)
assert mu.LAUNCHED == [2]
ctx.block_table_ptrs[0] += 64
try:
    ctx.run_fused_precopy(1)
except PointerRoundTripError as exc:
    print("REFUSED", exc)
assert mu.LAUNCHED == [2]
print("OK")
"""


def test_strict_accepts_a_duck_typed_block_table_and_still_checks_its_entries(tmp_path: Path):
    """vLLM takes any block table with data_ptr() and stride(): strict registers what it can, says once
    what it could not, and still refuses an entry that is not the address the table was filled from."""
    proc = run_with_fake_vllm(tmp_path, FAKE_034_LAYOUT, SCRIPT_034_DUCK)
    assert "OK" in proc.stdout, proc.stdout
    assert proc.stdout.count("cannot register a BlockTable block table (not a tensor)") == 1
    assert "REFUSED entry 0 of MambaSpecDecodeGPUContext.block_table_ptrs: address 0x" in proc.stdout
    assert "block table 0 (a BlockTable: its extent is unknown)" in proc.stdout
