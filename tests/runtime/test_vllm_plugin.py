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
