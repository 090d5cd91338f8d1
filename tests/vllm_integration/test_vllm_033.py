"""ptrlint.runtime against the real vLLM 0.33.0 (``pytest -m vllm``; ``scripts/setup_vllm_env.sh 0.33.0``).

Skipped with a reason where vLLM 0.33.0 is not the importable release (the README's venv has no
vLLM); CI sets PTRLINT_REQUIRE_VLLM=0.33.0 in that venv so that the suite can never skip there.
"""

from __future__ import annotations

import pytest

from .support import require_release, run_scenario

pytestmark = pytest.mark.vllm

require_release("0.33.0")

from ptrlint.runtime import (  # noqa: E402
    MambaCopyBuffers,
    get_mamba_group_ids,
    get_mamba_groups,
    validate_mamba_state_copy_funcs,
)
from ptrlint.runtime import vllm as guard  # noqa: E402
from vllm.v1.worker import mamba_utils as mu  # noqa: E402

from . import scenario_033 as scenario  # noqa: E402


@pytest.mark.parametrize("kind", ["plain", "uniform"])
def test_create_and_helpers_size_like_vllm(kind):
    cfg = scenario.config(kind)
    theirs_groups = mu.get_mamba_groups(cfg)
    ours_groups = get_mamba_groups(cfg)
    assert ours_groups == theirs_groups
    assert get_mamba_group_ids(ours_groups) == mu.get_mamba_group_ids(theirs_groups)
    mu.validate_mamba_state_copy_funcs(theirs_groups, scenario.COPY_FUNCS)
    validate_mamba_state_copy_funcs(ours_groups, scenario.COPY_FUNCS)

    theirs = mu.MambaCopyBuffers.create(scenario.MAX_REQS, cfg, scenario.COPY_FUNCS, scenario.make_buffer)
    ours = MambaCopyBuffers.create(scenario.MAX_REQS, cfg, scenario.COPY_FUNCS, scenario.make_buffer)
    assert len(ours.src_ptrs.cpu) == len(theirs.src_ptrs.cpu) == scenario.MAX_REQS * (5 if kind == "uniform" else 4)
    assert ours.mamba_group_ids == theirs.mamba_group_ids == [1]
    assert ours.mamba_spec == theirs.mamba_spec
    for name in ("src_ptrs", "dst_ptrs", "sizes"):
        assert getattr(ours, name).cpu.dtype == getattr(theirs, name).cpu.dtype


def test_vllm_033_allocates_uint64_so_install_keeps_its_create():
    assert guard.create_layout(mu.MambaCopyBuffers) == "uint64"


def test_older_layout_copy_funcs_still_work_with_vllm_specs():
    cfg = scenario.config("plain")  # one MambaSpec per group: a plain tuple is the older shape
    ours = MambaCopyBuffers.create(2, cfg, scenario.COPY_FUNCS[scenario.MAMBA2.mamba_type], scenario.make_buffer)
    assert len(ours.src_ptrs.cpu) == 2 * 2 * 2


def _scenario(*args: str) -> dict:
    return run_scenario("scenario_033", *args)


def _common(seen: dict) -> None:
    assert seen["warmup"] == "ok"
    assert seen["buffers"] == ["vllm.v1.worker.mamba_utils", "torch.uint64", seen["buffers"][2]]  # vLLM's own
    assert seen["copy_exact"] is True  # collect + copy moved exactly the bytes vLLM's semantics ask for
    assert seen["override_calls"][0] >= 1 and seen["override_exact"] is True  # the platform's kernel moved them
    assert "has dtype int64" in seen["signed"] or "Overflow when unpacking" in seen["signed"]  # refused / unbuildable
    assert seen["fused_initialized"] is True
    assert seen["fused_int32"].startswith("MambaSpecDecodeGPUContext.state_base_addrs has dtype int32")
    assert any("MambaCopyBuffers.create kept" in line for line in seen["installed"])


@pytest.mark.parametrize("kind", ["plain", "uniform"])
def test_fast_guard_end_to_end(kind):
    seen = _scenario("fast", kind)
    _common(seen)
    assert seen["unregistered"] == "copied"  # fast is O(1): it checks dtypes and shapes, not ranges
    assert seen["fused_truncated"] == "accepted"
    assert not any("bind_kv_cache_to_layers" in line for line in seen["installed"])
    # the other table families this release has are guarded too (0.33 ships the same RecoverSSM tables)
    for head in (
        "vllm.models.kimi_k3.nvidia.ops.recoverssm KDARecoverSSMCommitContext.",
        "vllm.v1.worker.utils KVBlockZeroer.seg_addrs (uint64, raw addresses): checked at fast",
    ):
        assert any(line.startswith(head) and "checked at fast where filled" in line for line in seen["installed"])
    # a family this release lacks is skipped and said so, never an error (ReplaySSM came with 0.34)
    assert any(
        line.startswith("vllm.v1.worker.replayssm_utils ReplaySSMModelContext.")
        and line.endswith(": skipped, this vLLM release has no vllm.v1.worker.replayssm_utils")
        for line in seen["installed"]
    )


@pytest.mark.parametrize("kind", ["plain", "uniform"])
def test_strict_starts_through_vllms_plugin_loader(kind):
    seen = _scenario("strict", kind, "plugin")  # PTRLINT_GUARD=strict + vllm.plugins.load_general_plugins()
    _common(seen)
    assert any("bind_kv_cache_to_layers" in line for line in seen["installed"])
    assert seen["registered"] == (3 if kind == "uniform" else 2)  # every bound Mamba cache
    assert (
        seen["unregistered"].startswith("entry 0: source range [0x") and "Register the buffer" in seen["unregistered"]
    )
    assert seen["fused_truncated"].startswith("entry 0 of MambaSpecDecodeGPUContext.state_base_addrs: address 0x")
    assert "is not the address it was filled from (model.layers.1.mixer state 0 at 0x" in seen["fused_truncated"]


def test_strict_under_simulated_high_addresses():
    seen = _scenario("strict", "uniform", "plugin", "simulate")
    _common(seen)
    assert seen["simulated"] is True
    assert "Overflow when unpacking long long" in seen["signed"]
    assert seen["fused_real"] is True  # checked as written, handed to the kernels as real addresses
