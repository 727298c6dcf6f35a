#!/usr/bin/env bash
# GPU proof: on a GPU host, measure init and split with the commcost CLI on localhost (real
# NCCL) and, in the same session, with the independent reference (test/gpu/reference.py),
# for every NCCL library given (default: the PyTorch wheel's and the system's). Prints both
# side by side. Needs: node >= 18 on PATH (or NODE=...), python3, a built dist/.
# Usage: test/gpu/gpu-proof.sh [outdir]
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-test-output/gpu}
mkdir -p "$out"
node=${NODE:-node}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
iterations=${ITERATIONS:-10}
libs=()
wheel=$(python3 -c 'import nvidia.nccl,os;print(os.path.join(os.path.dirname(nvidia.nccl.__file__),"lib","libnccl.so.2"))' 2>/dev/null)
[ -n "$wheel" ] && [ -f "$wheel" ] && libs+=("wheel:$wheel")
[ -f /lib/x86_64-linux-gnu/libnccl.so.2 ] && libs+=("system:/lib/x86_64-linux-gnu/libnccl.so.2")
[ -n "${NCCL_LIBS:-}" ] && libs=(${NCCL_LIBS})
status=0
for entry in "${libs[@]}"; do
  label=${entry%%:*}; lib=${entry#*:}
  echo "=== $label: $lib"
  "$node" bin/commcost.js measure --host localhost --nccl "$lib" --experiments init,split,destroy,abort \
    --iterations "$iterations" --json "$out/run-$label.json" --html "$out/report-$label.html" --save-dir "$out/runs" 2> "$out/cli-$label.log"
  rc=$?; [ $rc -ne 0 ] && { echo "commcost exited $rc (log: $out/cli-$label.log)"; tail -20 "$out/cli-$label.log"; status=1; }
  python3 test/gpu/reference.py --nccl "$lib" --iterations "$iterations" --json "$out/ref-$label.json" > /dev/null 2> "$out/ref-$label.log" \
    || { echo "reference failed"; tail -20 "$out/ref-$label.log"; status=1; continue; }
  "$node" test/gpu/compare.mjs "$out/run-$label.json" "$out/ref-$label.json" | tee "$out/compare-$label.txt" || status=1
done
exit $status
