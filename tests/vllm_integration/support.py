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
        pytest.skip(f"vLLM is not importable ({type(exc).__name__}: {exc}); run scripts/setup_vllm_env.sh {wanted}",
                    allow_module_level=True)
    if installed != wanted:
        if required == wanted:
            pytest.fail(f"PTRLINT_REQUIRE_VLLM={wanted} but this venv has vLLM {installed}")
        pytest.skip(f"this venv has vLLM {installed}; the {wanted} suite runs in scripts/setup_vllm_env.sh {wanted}",
                    allow_module_level=True)


def run_scenario(module: str, *args: str) -> dict:
    """Run ``tests.vllm_integration.<module>`` in a fresh process (install() patches vLLM process-wide)."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    env.pop("PTRLINT_GUARD", None)
    proc = subprocess.run([sys.executable, "-m", f"tests.vllm_integration.{module}", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("SCENARIO ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-6000:]
    return json.loads(lines[-1].removeprefix("SCENARIO "))


def emit(seen: dict) -> None:
    print("SCENARIO " + json.dumps(seen))


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
