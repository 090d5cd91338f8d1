"""The guard on vLLM 0.34's prompt-embeddings tables and batched-copy descriptor pools (``pytest -m vllm``).

Runs ``scenario_transfers_034`` in a fresh process per level; skipped with a reason where vLLM 0.34.0 is not
the importable release (CI sets PTRLINT_REQUIRE_VLLM=0.34.0 in its venv).
"""

from __future__ import annotations

import functools

import pytest

from .support import require_release
from .support import run_scenario as run_fresh

pytestmark = pytest.mark.vllm
require_release("0.34.0")

PE = "vllm.v1.worker.gpu.model_states.prompt_embeds PromptEmbedsState"
EC = "vllm.distributed.ec_transfer.ec_connector.cpu.worker"
KV = "vllm.v1.kv_offload.cpu.gpu_worker _new_descriptor_buffers"
LEVELS = [("fast",), ("fast", "simulate"), ("strict", "plugin"), ("strict", "plugin", "simulate")]


@functools.cache
def run_scenario(*args: str) -> dict:
    return run_fresh("scenario_transfers_034", *args)


def _line(seen: dict, head: str) -> str:
    lines = [line for line in seen["installed"] if line.startswith(head)]
    assert len(lines) == 1, seen["installed"]
    return lines[0]


@pytest.mark.parametrize("args", LEVELS)
def test_installed_names_each_family_and_where_it_is_checked(args):
    seen = run_scenario(*args)
    level = args[0]
    launch = " and launched" if level == "strict" else "; at strict also where launched"
    assert _line(seen, f"{PE}.{{embeds_ptrs,mask_ptrs}} (uint64, raw addresses): ").startswith(
        f"{PE}.{{embeds_ptrs,mask_ptrs}} (uint64, raw addresses): checked at {level} where filled "
        f"(PromptEmbedsState.__init__ and add_request){launch} (apply)"
    )
    kv = _line(seen, KV)
    assert "(uint64 on XPU, raw addresses; int64 elsewhere, each address's bits)" in kv and f"at {level}" in kv
    assert f"at {level} where filled (DescriptorBufferPool.acquire and DescriptorBuffers.add_copies)" in _line(
        seen, f"{EC}.descriptor_buffers DescriptorBuffers."
    )
    assert _line(seen, f"{EC} ECCPUWorker's swap_blocks_batch")


@pytest.mark.parametrize("args", LEVELS)
def test_vllms_own_code_runs_through_the_guard_and_copies_the_right_bytes(args):
    """At every level, under the simulation too: the tables vLLM builds are accepted and the kernel or copy they
    drive (Triton interpreter; a host stand-in for the compiled op) reads and writes exactly the right memory."""
    seen = run_scenario(*args)
    assert seen.get("simulated", False) is ("simulate" in args)
    for key in (
        "pe_init",
        "pe_add_a",
        "pe_add_b",
        "pe_apply",
        "ec_acquire",
        "ec_add",
        "ec_launch",
        "kv_buffers",
        "kv_fill",
    ):
        assert seen[key] == "accepted", (key, seen[key])
    assert seen["pe_dtypes"] == ["torch.uint64", "torch.uint64"] and seen["pe_copied"] is True
    assert seen["ec_swap_guarded"] is True and seen["ec_dtype"] == "torch.int64" and seen["ec_copied"] is True
    assert seen["kv_swap_guarded"] is True and seen["kv_dtype"] == "torch.int64"
    assert seen["kv_launch"] == "accepted" and seen["kv_copied"] is True


@pytest.mark.parametrize("args", LEVELS)
def test_a_python_int_address_above_2_63_into_the_int64_pool_is_named(args):
    """numpy refuses a Python int >= 2**63 in an int64 array: the guard names the table, entry, address and fix."""
    seen = run_scenario(*args)
    if "simulate" not in args:
        assert seen["ec_add_ints"] == "accepted"  # real addresses of this host are below 2**63
        return
    message = seen["ec_add_ints"]
    assert message.startswith(
        f"PointerDtypeError: entry 0 of {EC}.descriptor_buffers DescriptorBuffers.src_ptrs: address 0x8"
    ), message
    assert "cannot be stored into the int64 table as a Python int" in message
    assert "Pass addresses as numpy uint64 arrays" in message and seen["ec_add_ints_cause"] == "OverflowError"


@pytest.mark.parametrize("args", [("strict", "plugin"), ("strict", "plugin", "simulate")])
def test_strict_refuses_what_the_kernel_or_copy_would_get_wrong(args):
    seen = run_scenario(*args)
    corrupted = seen["pe_corrupted"]
    assert corrupted.startswith(f"PointerBoundsError: entry 2 of {PE}.embeds_ptrs (read this step): [0x"), corrupted
    assert "+160) is not inside one registered region" in corrupted and seen["pe_refused_untouched"] is True
    freed = seen["pe_freed"]  # request b's embeddings freed while the batch still reads them
    assert freed.startswith(f"PointerBoundsError: entry 0 of {PE}.embeds_ptrs (read this step): [0x"), freed
    assert "+96) is not inside one registered region" in freed and "freed" in freed
    swap = f"{EC} swap_blocks_batch ({EC}.descriptor_buffers DescriptorBuffers tables)"
    assert seen["ec_unregistered"].startswith(f"PointerBoundsError: entry 0 of {swap} dst_ptrs: [0x")
    assert "+16) is not inside one registered region" in seen["ec_unregistered"]
    assert seen["ec_refused_untouched"] is True
    wraps = seen["ec_wraps"]
    assert wraps.startswith(f"PointerBoundsError: entry 0 of {swap} src_ptrs: [0x"), wraps
    if "simulate" not in args:  # under the simulation an entry >= the offset reads as shifted: refused all the same
        assert "runs past 2**64" in wraps
    assert seen["ec_raw_dtype"].startswith(
        f"PointerDtypeError: {swap} src_ptrs has dtype uint64, but swap_blocks_batch reads int64 holding each "
        "address's 64 bits"
    )
    overrun = seen["kv_overrun"]
    assert overrun.startswith(f"PointerBoundsError: entry 1 of {KV} (in swap_blocks_batch) src_ptrs: [0x"), overrun
    assert "+4096) is not inside one registered region" in overrun


@pytest.mark.parametrize("args", [("fast",), ("fast", "simulate")])
def test_fast_reads_no_entry_at_a_launch(args):
    seen = run_scenario(*args)
    for key in ("pe_corrupted", "pe_freed", "ec_unregistered", "ec_wraps", "ec_raw_dtype", "kv_overrun"):
        assert key not in seen
