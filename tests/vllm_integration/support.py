"""What the vLLM integration suites share: release gating, the scenario runner, a Mamba layer.

Each guarded release has its own suite (``test_vllm_033.py``, ``test_vllm_034.py``) and scenario,
run in that release's venv (``scripts/setup_vllm_env.sh VERSION``). A suite skips, with the reason,
where vLLM is absent or another release is installed; CI sets ``PTRLINT_REQUIRE_VLLM=VERSION`` so
that the suite of the release it installed can never skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def require_release(wanted: str) -> None:
    """Skip the calling module unless vLLM ``wanted`` is installed and importable (fail where CI requires it)."""
    required = os.environ.get("PTRLINT_REQUIRE_VLLM", "")
    try:
        installed = version("vllm")
        import vllm.v1.worker.mamba_utils  # noqa: F401
    except (PackageNotFoundError, Exception) as exc:  # absent, or a dependency that fails on import
        if required in ("1", wanted):
            pytest.fail(f"vLLM {wanted} is not importable but PTRLINT_REQUIRE_VLLM={required}: {exc!r}")
        pytest.skip(
            f"vLLM is not importable ({type(exc).__name__}: {exc}); run scripts/setup_vllm_env.sh {wanted}",
            allow_module_level=True,
        )
    if installed != wanted:
        if required == wanted:
            pytest.fail(f"PTRLINT_REQUIRE_VLLM={wanted} but this venv has vLLM {installed}")
        pytest.skip(
            f"this venv has vLLM {installed}; the {wanted} suite runs in scripts/setup_vllm_env.sh {wanted}",
            allow_module_level=True,
        )


def run_scenario(module: str, *args: str) -> dict:
    """Run ``tests.vllm_integration.<module>`` in a fresh process (install() patches vLLM process-wide)."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    env.pop("PTRLINT_GUARD", None)
    proc = subprocess.run(
        [sys.executable, "-m", f"tests.vllm_integration.{module}", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("SCENARIO ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-6000:]
    return json.loads(lines[-1].removeprefix("SCENARIO "))


def start_guard(level: str, flags: list[str]) -> dict:
    """Install the guard as a worker would ("plugin": PTRLINT_GUARD + vLLM's plugin loader; else install()),
    then, with "simulate", put the whole process under simulated high addresses. Returns the first observations."""
    import torch
    from ptrlint.runtime import vllm as guard

    seen: dict[str, object] = {}
    if "plugin" in flags:
        os.environ["PTRLINT_GUARD"] = level
        from vllm.plugins import load_general_plugins

        load_general_plugins()
    else:
        guard.install(check=level)
    seen["installed"] = list(guard.installed())
    if "simulate" in flags:
        from ptrlint.runtime import simulate_high_addresses

        simulate_high_addresses().__enter__()
        seen["simulated"] = torch.zeros(1).data_ptr() >= 2**63
    return seen


def emit(seen: dict) -> None:
    print("SCENARIO " + json.dumps(seen))


def layer(i: int) -> str:
    return f"model.layers.{i}.mixer"


def hybrid_groups(kind: str, mamba2, short_conv, block_size: int) -> tuple[object, object, dict]:
    """vLLM groups of a hybrid model: attention (group 0) and Mamba (group 1), with each Mamba layer's spec.

    "plain": two layers of one MambaSpec; "uniform": a UniformTypeKVCacheSpecs group mixing specs.
    """
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheGroupSpec, UniformTypeKVCacheSpecs

    attention = KVCacheGroupSpec(
        [layer(0)], FullAttentionSpec(block_size, num_kv_heads=1, head_size=8, dtype=torch.float16)
    )
    if kind == "plain":
        specs = {layer(1): mamba2, layer(2): mamba2}
        mamba = KVCacheGroupSpec(list(specs), mamba2)
    elif kind == "uniform":
        specs = {layer(1): mamba2, layer(2): short_conv, layer(3): mamba2}
        mamba = KVCacheGroupSpec(list(specs), UniformTypeKVCacheSpecs(block_size, kv_cache_specs=specs))
    else:
        raise ValueError(kind)
    return attention, mamba, specs


@dataclass
class StateLayer:
    """A Mamba-style layer of the forward context: vLLM's own ``MambaBase.bind_kv_cache`` unpacks its pages."""

    spec: object
    kv_cache: tuple = ()
    state_alignment: int = 1
    use_flashinfer_replayssm: bool = False

    def get_state_shape(self):
        return self.spec.shapes

    def get_state_dtype(self):
        return self.spec.dtypes

    def bind_kv_cache(self, kv_cache):
        from vllm.model_executor.layers.mamba.abstract import MambaBase

        return MambaBase.bind_kv_cache(self, kv_cache)


def expected_after_copy(layers: dict, copy_funcs: dict, blocks: list[int], src: int, dest: int, bias: int) -> dict:
    """vLLM's semantics: conv ``state[b[src], bias:]`` -> start of ``state[b[dest]]``; temporal ``state[b[src+bias]]``."""
    from vllm.model_executor.layers.mamba.mamba_utils import get_conv_copy_spec

    out = {}
    for name, layer in layers.items():
        states = [s.clone() for s in layer.kv_cache]
        for state, func in zip(states, copy_funcs[layer.spec.mamba_type]):
            if func is get_conv_copy_spec:
                n = state.shape[1] - bias
                state[blocks[dest]][:n] = state[blocks[src]][bias:].clone()
            else:
                state[blocks[dest]] = state[blocks[src + bias]].clone()
        out[name] = states
    return out
