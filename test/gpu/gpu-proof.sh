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
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2") if s else "")' 2>/dev/null)
[ -n "$wheel" ] && [ -f "$wheel" ] && libs+=("wheel:$wheel")
[ -f /lib/x86_64-linux-gnu/libnccl.so.2 ] && libs+=("system:/lib/x86_64-linux-gnu/libnccl.so.2")
[ -n "${NCCL_LIBS:-}" ] && libs=(${NCCL_LIBS})
# SIMULATE=1: a dry run of this script on the simulated NCCL (checks the pipeline, not figures).
[ "${SIMULATE:-0}" = 1 ] && libs=("simulated:dist/native/libnccl-sim.so")
# Both tools measure the same number of ranks: RANKS, else every visible GPU (the entries of
# CUDA_VISIBLE_DEVICES when it is set, else nvidia-smi -L).
if [ -n "${RANKS:-}" ]; then
  [[ $RANKS =~ ^[1-9][0-9]*$ ]] || { echo "gpu-proof: RANKS must be a whole number ≥ 1, got '$RANKS'"; exit 2; }
  ranks=$RANKS
elif [ "${SIMULATE:-0}" = 1 ]; then ranks=${COMMCOST_SIM_GPUS:-2}
elif [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then ranks=$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .)
else ranks=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); fi
[ "${SIMULATE:-0}" = 1 ] && export COMMCOST_SIM_GPUS=$ranks
[ "$ranks" -ge 1 ] || { echo "gpu-proof: no GPU visible (CUDA_VISIBLE_DEVICES / nvidia-smi -L); set RANKS"; exit 1; }
# commcost runs these experiments one after another in the same rank processes; the reference
# runs its sections in the same order, so both measure processes with the same history.
experiments=${PROOF_EXPERIMENTS:-init,split,shrink,destroy,abort,revoke,registration}
sections=${experiments//registration/window}
status=0
for entry in "${libs[@]}"; do
  label=${entry%%:*}; lib=${entry#*:}
  echo "=== $label: $lib"
  if [ "$label" = simulated ]; then target=(--simulate); ref_cuda=(--cuda "$lib"); else target=(--nccl "$lib"); ref_cuda=(); fi
  "$node" bin/commcost.js measure --host localhost "${target[@]}" --ranks "$ranks" --experiments "$experiments" \
    --iterations "$iterations" --json "$out/run-$label.json" --html "$out/report-$label.html" --save-dir "$out/runs" 2> "$out/cli-$label.log"
  rc=$?; [ $rc -ne 0 ] && { echo "commcost exited $rc (log: $out/cli-$label.log)"; tail -20 "$out/cli-$label.log"; status=1; }
  python3 test/gpu/reference.py --nccl "$lib" "${ref_cuda[@]}" --ranks "$ranks" --iterations "$iterations" --only "$sections" --json "$out/ref-$label.json" > /dev/null 2> "$out/ref-$label.log" \
    || { echo "reference failed"; tail -20 "$out/ref-$label.log"; status=1; continue; }
  "$node" test/gpu/compare.mjs "$out/run-$label.json" "$out/ref-$label.json" | tee "$out/compare-$label.txt" || status=1
done
exit $status
