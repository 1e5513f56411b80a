#!/bin/bash
# The Python environment in which `simacc engines` checks one engine's own code (docs/engines.md):
#
#   benchmarks/engine_env.sh vllm   /tmp/engines-env/vllm     # then --python vllm=/tmp/engines-env/vllm/bin/python
#   benchmarks/engine_env.sh sglang /tmp/engines-env/sglang   # then --python sglang=/tmp/engines-env/sglang/bin/python
#
# Neither installs the engine: `simacc engines --version NAME==VERSION` puts its wheel's files on PYTHONPATH.
# Each installs the fewest real packages its modules import (no stubs), then simacc itself (--no-deps, editable, from
# the checkout this script lies in) with its own requirements.
#
# vllm: docs/vllm.md's environment: the CPU build of torch 2.13 (the constraint keeps pip from swapping in a CUDA
#   build), Triton for its interpreter, and what vLLM 0.33.0's and 0.34.0's synthetic paths import. One
#   environment serves both versions.
# sglang: what sglang 0.5.23's spec_utils.py, dflash_utils.py and DSpark's serving modules import (29 packages,
#   about 5 GB). Their import
#   chain imports torchvision unconditionally, and every torchvision on PyPI for Linux x86_64 is linked against
#   CUDA torch, so this takes PyPI's torch 2.13.0 (a CUDA build, which runs on a CPU) with torchvision 0.28.0.
#   --isolated makes pip ignore this machine's configuration (a find-links folder could serve a CPU torch that
#   torchvision cannot load with); it also drops a configured certificate, which PIP_CERT passes back.
set -euo pipefail
engine=${1:?usage: engine_env.sh vllm|sglang PATH}
venv=${2:?usage: engine_env.sh vllm|sglang PATH}
simacc=$(cd "$(dirname "$0")/.." && pwd)
harness=(hypothesis pytest pytest-xdist)  # simacc's own requirements besides torch and numpy

case "$engine" in
vllm)
    python3.11 -m venv "$venv"
    echo 'torch==2.13.0' >"$venv/constraints.txt"
    "$venv/bin/pip" install -q -c "$venv/constraints.txt" torch==2.13.0 'triton==3.9.*' numpy "${harness[@]}" \
        pydantic 'transformers>=5.16.1,<5.21' psutil msgspec cloudpickle pyzmq cbor2 fastapi openai \
        'xgrammar==0.2.8' urllib3 aiohttp requests openai-harmony 'pillow>=13' pybase64 cachetools uvloop \
        py-cpuinfo prometheus-client partial-json-parser llguidance
    ;;
sglang)
    python3.11 -m venv "$venv"  # sglang 0.5.23's wheel is for CPython 3.11
    "$venv/bin/pip" install -q --isolated ${PIP_CERT:+--cert "$PIP_CERT"} \
        torch==2.13.0 torchvision==0.28.0 numpy "${harness[@]}" \
        orjson psutil pybase64 requests pillow starlette msgspec pyzmq ipython pydantic aiohttp \
        transformers==5.19.0 dill sentencepiece==0.2.1 openai==2.8.0 partial_json_parser \
        apache-tvm-ffi==0.1.11 compressed-tensors==0.18.0 gguf einops \
        setproctitle uvicorn fastapi opentelemetry-api  # DSpark's serving modules (dspark_serving_glue)
    ;;
*)
    echo "engine_env.sh: unknown engine '$engine': vllm or sglang" >&2
    exit 2
    ;;
esac
"$venv/bin/pip" install -q --no-deps -e "$simacc"
echo "$venv/bin/python"
