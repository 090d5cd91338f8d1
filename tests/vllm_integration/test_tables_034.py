"""The guard on vLLM 0.34's other address-table families, each table built by vLLM's own code (``pytest -m vllm``).

Runs ``scenario_tables_034`` in a fresh process per level; skipped with a reason where vLLM 0.34.0 is
not the importable release (CI sets PTRLINT_REQUIRE_VLLM=0.34.0 in its venv).
"""

from __future__ import annotations

import functools

import pytest

from .support import require_release
from .support import run_scenario as run_fresh

pytestmark = pytest.mark.vllm
require_release("0.34.0")

RSSM = "vllm.models.kimi_k3.nvidia.ops.recoverssm KDARecoverSSMCommitContext"
SEG = "vllm.v1.worker.utils KVBlockZeroer.seg_addrs"
BT = "vllm.v1.worker.gpu.block_table BlockTables"
RS = "vllm.v1.worker.replayssm_utils ReplaySSMModelContext"
LORA = "vllm.lora.ops.triton_ops.utils"


@functools.cache
def run_scenario(*args: str) -> dict:
    """One process per level and flags, shared by the families' tests (each family reads its own keys)."""
    return run_fresh(*args)


def _sites(level: str, filled: str, launched: str) -> str:
    """How installed() says where a family is checked: launches only at strict (fast adds nothing per step)."""
    if level == "strict":
        return f"checked at strict where filled ({filled}) and launched ({launched})"
    return f"checked at {level} where filled ({filled}); at strict also where launched ({launched})"


def _refused_at_strict(seen: dict, key: str, level: str, prefix: str) -> None:
    """A table swapped after the fill for one of the other dtype: refused at a strict launch; fast does not look
    (the bits are the same, so vLLM's kernel still reads the right addresses)."""
    if level == "strict":
        assert seen[key].startswith(prefix), seen[key]
    else:
        assert seen[key] == "accepted"


def _installed(seen: dict, module: str) -> str:
    lines = [line for line in seen["installed"] if line.startswith(module)]
    assert len(lines) == 1, seen["installed"]
    return lines[0]


def _recoverssm_accepted(seen: dict, level: str) -> None:
    line = _installed(seen, "vllm.models.kimi_k3.nvidia.ops.recoverssm")
    assert line.endswith(
        "(int64, wrapped values): "
        + _sites(level, "KDARecoverSSMCommitContext.create", "commit")
        + " (patched when vllm.models.kimi_k3.nvidia.ops.recoverssm is imported)"
    )
    assert seen["rssm_patched"] is True  # patched when vLLM's module was imported, after install()
    assert seen["rssm_create"] == "accepted" and seen["rssm_dtypes"] == ["torch.int64", "torch.int64"]
    assert seen["rssm_commit"] == "accepted"  # vLLM's commit kernels ran (interpreter) on the checked tables
    _refused_at_strict(
        seen,
        "rssm_raw_dtype",
        level,
        f"PointerDtypeError: {RSSM}.kg_cache_base_addrs has dtype uint64, but its kernel reads wrapped values in int64",
    )


def test_recoverssm_fast_checks_dtypes():
    seen = run_scenario("scenario_tables_034", "fast")
    _recoverssm_accepted(seen, "fast")
    assert "rssm_corrupted" not in seen  # fast does not read entries


def test_recoverssm_strict_refuses_an_overwritten_entry_before_the_commit():
    seen = run_scenario("scenario_tables_034", "strict", "plugin")
    _recoverssm_accepted(seen, "strict")
    message = seen["rssm_corrupted"]
    assert message.startswith(f"PointerRoundTripError: entry 1 of {RSSM}.kg_cache_base_addrs: address 0x"), message
    assert "is not the address it was filled from (verify key/gate record of layer 1 at 0x" in message
    assert seen["rssm_corrupted_untouched"] is True


def test_recoverssm_under_simulated_high_addresses_is_reported_with_the_fix():
    """vLLM 0.34.0's ``_base_addrs`` stores raw addresses in int64: on a host with addresses >= 2**63 it fails."""
    seen = run_scenario("scenario_tables_034", "strict", "plugin", "simulate")
    assert seen["simulated"] is True
    message = seen["rssm_create"]
    assert message.startswith(f"PointerDtypeError: entry 0 of {RSSM}.conv_state_base_addrs: address 0x8"), message
    assert "(layer 0's conv state, 1536 bytes) is >= 2**63" in message
    assert "_base_addrs" in message and "torch.tensor(addrs, dtype=torch.uint64).view(torch.int64)" in message
    assert "or store wrapped values (addr - 2**64 for addr >= 2**63" in message
    assert seen["rssm_create_cause"] == "ValueError"  # torch's "Overflow when unpacking long long", chained


def _zeroer_accepted(seen: dict, level: str) -> None:
    line = _installed(seen, "vllm.v1.worker.utils KVBlockZeroer")
    assert line.startswith(
        f"{SEG} (uint64, raw addresses): " + _sites(level, "KVBlockZeroer.__init__", "zero_block_ids")
    )
    assert seen["zeroer_init"] == "accepted" and seen["zeroer_dtype"] == "torch.uint64"
    assert seen["zeroer_zero"] == "accepted" and seen["zeroer_exact"] is True  # vLLM's kernel zeroed blocks 1 and 4
    _refused_at_strict(
        seen,
        "zeroer_wrapped_dtype",
        level,
        f"PointerDtypeError: {SEG} has dtype int64, but its kernel reads raw addresses in uint64",
    )


def test_block_zeroer_fast_checks_the_dtype_only():
    seen = run_scenario("scenario_tables_034", "fast")
    _zeroer_accepted(seen, "fast")
    assert "zeroer_corrupted" not in seen


@pytest.mark.parametrize("flags", [("plugin",), ("plugin", "simulate")])
def test_block_zeroer_strict_refuses_a_bad_entry_and_a_block_past_the_cache(flags):
    seen = run_scenario("scenario_tables_034", "strict", *flags)
    _zeroer_accepted(seen, "strict")  # under the simulation too: uint64 holds addresses >= 2**63
    message = seen["zeroer_corrupted"]
    assert message.startswith(f"PointerRoundTripError: entry 1 of {SEG}: address 0x"), message
    assert (
        "is not the address it was filled from (model.layers.1.self_attn's KV cache segment, 6 blocks at 0x" in message
    )
    assert seen["zeroer_block_out_of_range"].startswith(f"PointerBoundsError: {SEG}: block id 6 is outside [0, 6)")
    assert seen["zeroer_refused_untouched"] is True


def _block_tables_accepted(seen: dict, level: str) -> None:
    line = _installed(seen, "vllm.v1.worker.gpu.block_table")
    assert line.startswith(
        f"{BT}.{{block_table_ptrs,input_block_table_ptrs}} (uint64, raw addresses): "
        + _sites(
            level, "BlockTables._make_ptr_tensor", "apply_staged_writes, gather_block_tables, compute_slot_mappings"
        )
    )
    assert _installed(seen, "vllm.v1.worker.gpu.pcp_manager").startswith(
        "vllm.v1.worker.gpu.pcp_manager PCPManager._local_block_table_ptrs (uint64, raw addresses): checked at "
        f"{level} where filled (PCPManager.set_block_tables)"
    )
    assert seen["bt_fill"] == "accepted" and seen["bt_dtypes"] == ["torch.uint64", "torch.uint64"]
    # vLLM's gather and slot-mapping kernels ran on the checked tables: request 0's rows and slots
    assert seen["bt_gather"] == "accepted" and seen["bt_gathered"] == [
        [5, 1, 4, 0, 0, 0, 0, 0],
        [2, 7, 0, 0, 0, 0, 0, 0],
    ]
    assert seen["bt_slot_mappings"] == [[80, 81, 17], [32, 33, 113]]
    assert seen["pcp_fill"] == "accepted" and seen["pcp_dtype"] == "torch.uint64"
    assert seen["pcp_gathered"] == seen["bt_gathered"]  # prepare_attn's gather into the PCP manager's local tables
    _refused_at_strict(
        seen,
        "bt_wrapped_dtype",
        level,
        f"PointerDtypeError: {BT}.input_block_table_ptrs has dtype int64, but its kernel reads raw addresses in uint64",
    )


def test_block_tables_fast_checks_dtypes():
    seen = run_scenario("scenario_tables_034", "fast")
    _block_tables_accepted(seen, "fast")
    assert "bt_corrupted" not in seen and seen["pcp_swapped"] == "accepted"  # fast does not read entries


@pytest.mark.parametrize("flags", [("plugin",), ("plugin", "simulate")])
def test_block_tables_strict_refuses_a_bad_entry_and_a_swapped_out_table(flags):
    seen = run_scenario("scenario_tables_034", "strict", *flags)
    _block_tables_accepted(seen, "strict")
    message = seen["bt_corrupted"]
    assert message.startswith(f"PointerRoundTripError: entry 1 of {BT}.block_table_ptrs: address 0x"), message
    assert "is not the address it was filled from (block table 1 at 0x" in message
    assert seen["pcp_swapped"].startswith(
        f"PointerRoundTripError: entry 0 of {BT}.gather_block_tables out_ptrs (as vllm.v1.worker.gpu.pcp_manager "
        "PCPManager._local_block_table_ptrs): address 0x"
    )


def _replayssm_accepted(seen: dict, level: str) -> None:
    line = _installed(seen, "vllm.v1.worker.replayssm_utils")
    assert line.startswith(
        f"{RS}.{{block_table,ring_start,num_committed,src_slots,dst_slots}}_ptrs and "
        "materialize_tables.{state,x_cache,dt_cache,B_cache,A}_ptrs (int64, wrapped values): "
        + _sites(
            level, "_cuda_i64_ptrs, through ReplaySSMModelContext.create", "reset_new_slots, postprocess, _materialize"
        )
    )
    assert seen["rs_create"] == "accepted" and seen["rs_dtype"] == "torch.int64"
    assert seen["rs_reset"] == "accepted" and seen["rs_cursors"] == [11, 21]  # vLLM's kernel moved slot 1's cursors
    _refused_at_strict(
        seen,
        "rs_raw_dtype",
        level,
        f"PointerDtypeError: {RS}.ring_start_ptrs has dtype uint64, but its kernel reads wrapped values in int64",
    )


def test_replayssm_fast_checks_dtypes():
    seen = run_scenario("scenario_tables_034", "fast")
    _replayssm_accepted(seen, "fast")
    assert "rs_corrupted" not in seen


@pytest.mark.parametrize("flags", [("plugin",), ("plugin", "simulate")])
def test_replayssm_strict_refuses_an_overwritten_entry(flags):
    seen = run_scenario("scenario_tables_034", "strict", *flags)
    _replayssm_accepted(seen, "strict")  # under the simulation: wrapped values of addresses >= 2**63, accepted
    message = seen["rs_corrupted"]
    assert message.startswith(f"PointerRoundTripError: entry 0 of {RS}.ring_start_ptrs: address 0x"), message
    assert "is not the address it was filled from (source tensor 0 at 0x" in message


def _lora_accepted(seen: dict, level: str) -> None:
    assert _installed(seen, LORA).startswith(
        f"{LORA} _get_lora_a_ptr / _get_lora_b_ptr lora_ptr_tensor (uint64, raw addresses): checked at {level}"
    )
    assert seen["lora_rebound"] is True  # the ops that import the getter by name get the guarded one
    assert seen["lora_a"] == seen["lora_b"] == "accepted"
    assert seen["lora_a_dtype"] == seen["lora_b_dtype"] == "torch.uint64"


def test_lora_pointer_tables_fast():
    seen = run_scenario("scenario_tables_034", "fast")
    _lora_accepted(seen, "fast")
    assert "lora_a_corrupted" not in seen


@pytest.mark.parametrize("flags", [("plugin",), ("plugin", "simulate")])
def test_lora_strict_refuses_an_overwritten_cached_table(flags):
    seen = run_scenario("scenario_tables_034", "strict", *flags)
    _lora_accepted(seen, "strict")
    message = seen["lora_a_corrupted"]
    assert message.startswith(
        f"PointerRoundTripError: entry 1 of {LORA} _get_lora_a_ptr (the lora_ptr_tensor it returns): address 0x"
    ), message
    assert "is not the address it was filled from (LoRA weight stack 1 at 0x" in message
