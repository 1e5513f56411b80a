#!/usr/bin/env bash
# The GPU self-check: run it whenever a CUDA GPU is at hand. CI has none, so this
# is where the cuda variant of every property, the CUDA-only mutants, the Triton kernel
# compiled and the CUDA latency are seen at all. It needs no network and takes a few minutes
# on one GPU; it prints one summary line per part (full logs go to $SIMACC_GPU_CHECK_LOGS,
# or /tmp/simacc-gpu-check) and exits 1 if any part failed.
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
py=${PYTHON:-python3}
workers=${SIMACC_GPU_CHECK_WORKERS:-6}
failed=0

# part NAME SUMMARY-COMMAND -- COMMAND...: run COMMAND (log in $logs/NAME.log), then print
# "NAME: <exit status>, <seconds> s: <what SUMMARY-COMMAND makes of the log>".
part() {
  local name=$1 summary=$2 start rc
  shift 3
  start=$(date +%s)
  "$@" >"$logs/$name.log" 2>&1
  rc=$?
  [ "$rc" -ne 0 ] && failed=1
  printf '%-22s exit %s, %4s s: %s\n' "$name" "$rc" "$(($(date +%s) - start))" "$(eval "$summary" <"$logs/$name.log")"
}
last() { grep -v '^\s*$' | tail -n 1; }

"$py" -c 'import torch, hypothesis, pytest; print(f"torch {torch.__version__}, cuda {torch.version.cuda}, " f"{torch.cuda.device_count()} x {torch.cuda.get_device_name()}, hypothesis {hypothesis.__version__}, pytest {pytest.__version__}")' || exit 1

part catalogue last -- env CI=true "$py" -m pytest properties -q -p no:cacheprovider -n "$workers" --simacc-device=all -rfE

# every torch reference and correct zoo entry (the JAX ones run on the CPU), at its level
checked=$("$py" -c 'from simacc import zoo
from simacc.harness.config import contracts
specs = [(c.reference, "exact") for c in contracts.CONTRACTS.values() if c.keyword_style != "jax"]
specs += [(e.spec, e.level) for e in zoo.CORRECT.values() if "jax" not in e.requires]
print(" ".join(f"{spec}@{level}" for spec, level in specs))')
for entry in $checked; do  # the references with the default profile (timed), the zoo with fewer examples
  impl=${entry%@*} level=${entry#*@}
  examples=$([ "${impl%%:*}" = simacc ] || echo "--max-examples 20")
  part "check-${impl##*:}" last -- "$py" -m simacc check "$impl" --device cuda --level "$level" -n "$workers" -q $examples
done

part cuda-mutants last -- "$py" -m simacc mutants --device cuda -n "$workers" \
  $("$py" -c 'from simacc import zoo; print(" ".join(f"--only {e.name}" for e in zoo.MUTANTS.values() if e.needs_cuda))')

part latency "grep 'median ratio'" -- "$py" benchmarks/latency.py --device cuda --repeats 500
part runner-profile "grep 'per call'" -- "$py" benchmarks/runner_profile.py --device cuda --calls 2000
if [ -n "${SIMACC_GPU_CHECK_BEFORE:-}" ]; then
  part runner-profile-before "grep 'per call'" -- env PYTHONPATH="$SIMACC_GPU_CHECK_BEFORE" \
    "$py" "$PWD/benchmarks/runner_profile.py" --device cuda --calls 2000
fi

echo "logs in $logs"
exit "$failed"
