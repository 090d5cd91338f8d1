#!/usr/bin/env bash
# A reproducible venv for the vLLM integration suite (tests/vllm_integration, `pytest -m vllm`).
#
# vLLM is installed with --no-deps: its full dependency set pulls CUDA torch, flashinfer and GPU
# kernels. What `vllm.v1.worker.mamba_utils`, `vllm.v1.worker.utils`, `vllm.plugins`, the CPU
# platform and the Mamba start-up paths import on a CPU host is listed below by name, pinned to
# the release's own ranges where it declares one; torch stays the 2.13 CPU build.
#
# usage: scripts/setup_vllm_env.sh VERSION [VENV]   (VERSION 0.33.0 or 0.34.0; default VENV
#        .venv-vllm-VERSION); then VENV/bin/python -m pytest -m vllm tests/vllm_integration
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: scripts/setup_vllm_env.sh VERSION [VENV] (0.33.0 or 0.34.0)}
venv=${2:-.venv-vllm-$version}

case "$version" in  # the pins each release declares (Requires-Dist) where they differ
  0.33.0) pins=('transformers>=5.16.1,<5.21.0' 'huggingface_hub>=1.31.0' 'tokenizers>=0.23.2') ;;
  0.34.0) pins=('transformers>=5.16.1,<5.23.0' 'huggingface_hub>=2.0.0' 'tokenizers>=0.23.3') ;;
  *) echo "setup_vllm_env.sh: vLLM $version is not one of the guarded releases (0.33.0, 0.34.0)" >&2; exit 2 ;;
esac

python3 -m venv "$venv"
"$venv/bin/pip" install -q torch==2.13.0 -e '.[runtime,test]'
"$venv/bin/pip" install -q --no-deps "vllm==$version"
"$venv/bin/pip" install -q --no-deps "${pins[@]}" 'safetensors>=0.6.2' \
  sentencepiece regex tqdm 'requests>=2.33.0' 'certifi>=2026.10.19' urllib3 idna \
  'pydantic>=2.12.0' pydantic_core typing-inspection annotated-types \
  'fastapi>=0.133.0,<0.137.0' 'starlette>=1.0.1' annotated-doc anyio sniffio \
  httpx2 httpcore2 h11 truststore \
  'aiohttp>=3.14.4' 'multidict>=6.9.1' yarl propcache aiohappyeyeballs aiosignal frozenlist \
  'openai>=2.25.0' openai-harmony \
  cbor2 psutil 'pyzmq>=25.0.0' pillow pybase64 cachetools uvloop py-cpuinfo msgspec cloudpickle \
  'prometheus_client>=0.18.0' partial-json-parser einops \
  'llguidance>=1.7.0,<1.8.0' xgrammar==0.2.8 apache-tvm-ffi==0.1.11

"$venv/bin/python" - <<'PY'
import importlib
from importlib.metadata import version

modules = ["vllm.v1.worker.mamba_utils", "vllm.v1.worker.utils", "vllm.plugins", "vllm.platforms.cpu"]
modules.append("vllm.model_executor.warmup.mamba_triton_warmup" if version("vllm") == "0.33.0"
               else "vllm.v1.worker.cpu.attn_utils")
for name in modules:
    importlib.import_module(name)
print(f"vLLM {version('vllm')} importable with torch {version('torch')} in this venv")
PY
