"""ptrlint.runtime.vllm.install() against a fake vllm package with vLLM's module paths."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..conftest import FAKE_VLLM_MAMBA_UTILS, make_fake_vllm



SCRIPT = '''
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
'''


def test_install_patches_fake_vllm_and_is_idempotent(tmp_path: Path):
    make_fake_vllm(tmp_path, FAKE_VLLM_MAMBA_UTILS)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "GUARDED" in proc.stdout and "OK" in proc.stdout
    assert proc.stdout.count("ptrlint runtime guard installed") == 1


def test_install_without_vllm_returns_false():
    proc = subprocess.run(
        [sys.executable, "-c", "from ptrlint.runtime import vllm; import sys; sys.exit(0 if vllm.install() is False else 1)"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


# vLLM 0.33's layout in miniature: create() already allocates uint64; copies go through batch_memcpy
FAKE_UINT64_LAYOUT = '''
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
'''

KEEP_SCRIPT = '''
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
'''


def test_install_keeps_a_create_that_already_allocates_uint64(tmp_path: Path):
    make_fake_vllm(tmp_path, FAKE_UINT64_LAYOUT)
    proc = subprocess.run([sys.executable, "-c", KEEP_SCRIPT], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "REFUSED True" in proc.stdout and "CALLS [1]" in proc.stdout  # checked, then vLLM's own copy ran
    assert "INSTALLED MambaCopyBuffers.create kept" in proc.stdout
