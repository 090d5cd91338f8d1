"""ptrlint.runtime against the real vLLM 0.34.0 (``pytest -m vllm``; ``scripts/setup_vllm_env.sh 0.34.0``).

0.34 has no ``MambaCopyBuffers``: its Mamba state copies are fused Triton kernels reading int64
address tables of a ``MambaSpecDecodeGPUContext``. The scenario runs vLLM's own CPU start-up and
those kernels (Triton interpreter) with the guard installed. Skipped with a reason where vLLM
0.34.0 is not the importable release; CI sets PTRLINT_REQUIRE_VLLM=0.34.0 in its venv.
"""

from __future__ import annotations

import pytest

from .support import require_release, run_scenario

pytestmark = pytest.mark.vllm
require_release("0.34.0")

from ptrlint.runtime import fused  # noqa: E402
from ptrlint.runtime import vllm as guard  # noqa: E402
from vllm.v1.worker import mamba_utils as mu  # noqa: E402

LAUNCHES = {"run_fused_precopy", "run_fused_postprocess_align", "compute_aligned_state_indices"}
ROUND_TRIP = "PointerRoundTripError: entry 1 of MambaSpecDecodeGPUContext.state_base_addrs: address 0x"
NARROW = "PointerDtypeError: MambaSpecDecodeGPUContext.state_base_addrs has dtype int32"


def test_the_guard_finds_034s_launch_sites_and_tables():
    sites = fused.launch_sites(mu.MambaSpecDecodeGPUContext)
    assert set(sites) == LAUNCHES
    assert sites["run_fused_precopy"] == ("state_base_addrs", "block_table_ptrs")
    assert sites["compute_aligned_state_indices"] == ("aligned_index_block_table_ptrs",)
    assert not hasattr(mu, "MambaCopyBuffers") and not hasattr(mu, "batch_memcpy")  # what 0.33 had


def _common(seen: dict) -> None:
    assert seen["triton_kernels"] is True  # vLLM's own @triton.jit kernels ran (interpreter), not placeholders
    assert seen["initialized"] is True and seen["tables_real"] is True
    assert seen["table_dtypes"] == ["torch.int64", "torch.int64"]  # vLLM's layout, accepted as u64 bit patterns
    assert seen["precopy_exact"] is True  # the fused pre-copy moved exactly what vLLM's copy specs say
    assert seen["postprocess_ran"] is True
    assert seen["narrow_precopy"].startswith(NARROW) and seen["narrow_precopy_untouched"] is True
    assert seen["narrow_aligned"].startswith(
        "PointerDtypeError: MambaSpecDecodeGPUContext.aligned_index_block_table_ptrs has dtype int32"
    )
    installed = " ".join(seen["installed"])
    assert all(name in installed for name in LAUNCHES) and "where filled (_populate_metadata)" in installed


@pytest.mark.parametrize("kind", ["plain", "uniform"])
def test_fast_guard_checks_dtypes_at_every_launch(kind):
    seen = run_scenario("scenario_034", "fast", kind)
    _common(seen)
    assert seen["registered"] == 0 and "bind_kv_cache_to_layers" not in " ".join(seen["installed"])
    assert seen["corrupted_check"] == "accepted" and seen["unbound_fill"] == "accepted"  # fast is O(1)


@pytest.mark.parametrize("kind", ["plain", "uniform"])
def test_strict_start_up_through_vllms_plugin_loader(kind):
    seen = run_scenario("scenario_034", "strict", kind, "plugin")  # PTRLINT_GUARD=strict + load_general_plugins()
    _common(seen)
    assert "bind_kv_cache_to_layers" in " ".join(seen["installed"])
    assert seen["registered"] == (3 if kind == "uniform" else 2)  # every state view vLLM's CPU runner bound
    for key in ("corrupted_precopy", "corrupted_postprocess", "corrupted_check"):
        assert seen[key].startswith(ROUND_TRIP), seen[key]
        assert "is not the address it was filled from (model.layers.1.mixer state 1 at 0x" in seen[key]
        assert seen[key + "_untouched"] is True  # refused before a byte moved
    assert seen["unbound_fill"].startswith("PointerBoundsError: entry 0 of MambaSpecDecodeGPUContext.state_base_addrs")
    assert "is not inside one registered region; nearest registered region [0x" in seen["unbound_fill"]
    assert "Bind the caches through vLLM's bind_kv_cache_to_layers" in seen["unbound_fill"]


def test_strict_under_simulated_high_addresses():
    seen = run_scenario("scenario_034", "strict", "uniform", "plugin", "simulate")
    _common(seen)
    assert seen["simulated"] is True  # tables were filled with addresses >= 2**63 (negative int64 patterns)
    assert seen["corrupted_precopy"].startswith(ROUND_TRIP) and seen["corrupted_precopy_untouched"] is True
    assert "(real 0x" in seen["unbound_fill"]  # shown as the table holds it, and the real address


def test_install_is_idempotent_and_reports_no_buffers_to_patch():
    assert guard.install(check="fast") is True
    first = guard.installed()
    assert guard.install(check="fast") is True and guard.installed() == first
    assert not any("MambaCopyBuffers" in line or "batch_memcpy" in line for line in first)


@pytest.mark.parametrize("kind", ["plain", "uniform"])
def test_runtime_helpers_size_groups_like_034(kind):
    from ptrlint.runtime import get_mamba_group_ids, get_mamba_groups, validate_mamba_state_copy_funcs

    from . import scenario_034 as scenario

    cfg = scenario.config(kind)
    theirs = mu.get_mamba_groups(cfg)
    assert get_mamba_groups(cfg) == theirs
    assert get_mamba_group_ids(theirs) == mu.get_mamba_group_ids(theirs) == [1]
    mu.validate_mamba_state_copy_funcs(theirs, scenario.COPY_FUNCS)
    validate_mamba_state_copy_funcs(theirs, scenario.COPY_FUNCS)
