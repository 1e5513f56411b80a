#!/usr/bin/env bash
# The GPU self-check: run it whenever a CUDA GPU is at hand. CI has none, so this
# is where the cuda variant of every property, the CUDA-only mutants, the Triton kernel
# compiled and the CUDA latency are seen at all. It needs no network and takes about five
# minutes on one H200 with 16 cores. It prints one summary line per part as each ends (full
# logs go to $SIMACC_GPU_CHECK_LOGS, or /tmp/simacc-gpu-check, and the failing cases' repro
# files to its failures/ folder) and exits 1 if any part failed.
# The parts that check run $SIMACC_GPU_CHECK_JOBS at a time (default 4, each with
# $SIMACC_GPU_CHECK_WORKERS xdist workers, default 6): the 43 checks' own times add up to
# about 15 minutes there. The timed parts run last, alone.
#
#   benchmarks/gpu_check.sh                    # from a checkout, installed with pip install -e .
#   SIMACC_GPU_CHECK_BEFORE=path/to/old/checkout benchmarks/gpu_check.sh
#                                              # also profile an older runner, for a before/after
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
export JAX_PLATFORMS=cpu  # the functional contract runs on the CPU; JAX must not take the GPU's memory
logs=${SIMACC_GPU_CHECK_LOGS:-/tmp/simacc-gpu-check}
mkdir -p "$logs"
# a failing case's repro file beside the logs, so that one folder holds what a lent machine found
export SIMACC_REPRO_DIR=${SIMACC_REPRO_DIR:-$logs/failures}
py=${PYTHON:-python3}
workers=${SIMACC_GPU_CHECK_WORKERS:-6}
jobs=${SIMACC_GPU_CHECK_JOBS:-4}
statuses=$(mktemp -d)  # each part's exit status, read once every part has ended
trap 'rm -rf "$statuses"' EXIT

# part NAME SUMMARY-COMMAND -- COMMAND...: run COMMAND (log in $logs/NAME.log), then print
# "NAME exit <status>, <seconds> s: <what SUMMARY-COMMAND makes of the log>".
part() {
  local name=$1 summary=$2 start rc
  shift 3
  start=$(date +%s)
  "$@" >"$logs/$name.log" 2>&1
  rc=$?
  echo "$rc" >"$statuses/$name"
  printf '%-22s exit %s, %4s s: %s\n' "$name" "$rc" "$(($(date +%s) - start))" "$(eval "$summary" <"$logs/$name.log")"
}
# pooled ARGS...: part ARGS in the background, once fewer than $jobs parts run.
pooled() {
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  part "$@" &
}
last() { grep -v '^\s*$' | tail -n 1; }

"$py" -c 'import torch, hypothesis, pytest; print(f"torch {torch.__version__}, cuda {torch.version.cuda}, " f"{torch.cuda.device_count()} x {torch.cuda.get_device_name()}, hypothesis {hypothesis.__version__}, pytest {pytest.__version__}")' || exit 1

pooled catalogue last -- env CI=true "$py" -m pytest properties -q -p no:cacheprovider -n "$workers" --simacc-device=all -rfE

checked=$("$py" -c 'from simacc import zoo
from simacc.harness.config import contracts
specs = [(c.reference, "exact") for c in contracts.CONTRACTS.values() if c.keyword_style != "jax"]
specs += [(e.spec, e.level) for e in zoo.CORRECT.values() if "jax" not in e.requires]
print(" ".join(f"{spec}@{level}" for spec, level in specs))')
# every torch reference and correct zoo entry (the JAX ones run on the CPU), at its level: the
# references with the default profile (timed), the zoo with fewer examples and a longer per-call
# limit (its per-row loops make tens of thousands of small CUDA calls for a batch past 2048: with
# four checks at a time on an H200, one took over 30 s and was reported hung)
for entry in $checked; do
  impl=${entry%@*} level=${entry#*@}
  examples=$([ "${impl%%:*}" = simacc ] || echo "--max-examples 20 --timeout 120")
  pooled "check-${impl##*:}" last -- "$py" -m simacc check "$impl" --device cuda --level "$level" -n "$workers" -q $examples
done

pooled cuda-mutants last -- "$py" -m simacc mutants --device cuda -n "$workers" \
  $("$py" -c 'from simacc import zoo; print(" ".join(f"--only {e.name}" for e in zoo.MUTANTS.values() if e.needs_cuda))')

wait

part latency "grep 'median ratio'" -- "$py" benchmarks/latency.py --device cuda --repeats 500
part runner-profile "grep 'per call'" -- "$py" benchmarks/runner_profile.py --device cuda --calls 2000
if [ -n "${SIMACC_GPU_CHECK_BEFORE:-}" ]; then
  part runner-profile-before "grep 'per call'" -- env PYTHONPATH="$SIMACC_GPU_CHECK_BEFORE" \
    "$py" "$PWD/benchmarks/runner_profile.py" --device cuda --calls 2000
fi

echo "logs in $logs"
! grep -qvx 0 "$statuses"/*
