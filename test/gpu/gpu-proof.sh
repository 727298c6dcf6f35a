#!/usr/bin/env bash
# GPU proof: on a GPU host, measure the proof's experiments (PROOF_EXPERIMENTS, default init, split,
# shrink, grow, destroy, abort, revoke, registration, suspend) with the commcost CLI on localhost (real
# NCCL) and, in the same session, with the independent reference (test/gpu/reference.py),
# for every NCCL library given (default: the PyTorch wheel's and the system's). Prints both
# side by side. Needs: node >= 18 on PATH (or NODE=...), python3, a built dist/.
# Usage: [ITERATIONS=10] [ROUNDS=1] [RANKS=n] [NCCL_LIBS='label:path …'] test/gpu/gpu-proof.sh [outdir]
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-test-output/gpu}
mkdir -p "$out"
node=${NODE:-node}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
iterations=${ITERATIONS:-10}
[[ $iterations =~ ^[1-9][0-9]*$ ]] || { echo "gpu-proof: ITERATIONS must be a whole number ≥ 1, got '$iterations'"; exit 2; }
# ROUNDS > 1: the tools take turns (commcost, reference, commcost, …), the ITERATIONS recorded
# iterations of each tool shared out between the turns, and the comparison pools every turn's
# samples, so a drift of the machine during the session reaches both tools alike. Each round's own
# comparison is printed too.
rounds=${ROUNDS:-1}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "gpu-proof: ROUNDS must be a whole number ≥ 1, got '$rounds'"; exit 2; }
[ "$rounds" -le "$iterations" ] || { echo "gpu-proof: ROUNDS ($rounds) must not exceed ITERATIONS ($iterations): every turn records at least one iteration"; exit 2; }
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
experiments=${PROOF_EXPERIMENTS:-init,split,shrink,grow,destroy,abort,revoke,registration,suspend}
# The reference's sections: the experiments it has (registration is its 'window'), in that order.
sections=$(tr ',' '\n' <<< "$experiments" | sed 's/^registration$/window/' | grep -xE 'init|split|shrink|grow|destroy|abort|revoke|window|suspend' | paste -sd, -)
[ -n "$sections" ] || { echo "gpu-proof: none of PROOF_EXPERIMENTS ($experiments) is measured by the reference (init, split, shrink, grow, destroy, abort, revoke, registration, suspend)"; exit 2; }
status=0
for entry in "${libs[@]}"; do
  label=${entry%%:*}; lib=${entry#*:}
  echo "=== $label: $lib"
  if [ "$label" = simulated ]; then target=(--simulate); ref_cuda=(--cuda "$lib"); else target=(--nccl "$lib"); ref_cuda=(); fi
  run_files=(); ref_files=()
  for round in $(seq 1 "$rounds"); do
    suffix=$label; [ "$rounds" -gt 1 ] && suffix=$label-r$round
    # This turn's share of ITERATIONS: the first ITERATIONS % ROUNDS turns take one more.
    per_round=$(( iterations / rounds + (round <= iterations % rounds ? 1 : 0) ))
    rm -f "$out/run-$suffix.json" "$out/ref-$suffix.json"   # never pool an earlier session's file
    "$node" bin/commcost.js measure --host localhost "${target[@]}" --ranks "$ranks" --experiments "$experiments" \
      --iterations "$per_round" --json "$out/run-$suffix.json" --html "$out/report-$suffix.html" --save-dir "$out/runs" 2> "$out/cli-$suffix.log"
    rc=$?; [ $rc -ne 0 ] && { echo "commcost exited $rc (log: $out/cli-$suffix.log)"; tail -20 "$out/cli-$suffix.log"; status=1; }
    python3 test/gpu/reference.py --nccl "$lib" "${ref_cuda[@]}" --ranks "$ranks" --iterations "$per_round" --only "$sections" --json "$out/ref-$suffix.json" > /dev/null 2> "$out/ref-$suffix.log" \
      || { echo "reference failed"; tail -20 "$out/ref-$suffix.log"; status=1; continue 2; }
    [ -f "$out/run-$suffix.json" ] && run_files+=("$out/run-$suffix.json")
    ref_files+=("$out/ref-$suffix.json")
    [ "$rounds" -gt 1 ] && { echo "--- round $round"; "$node" test/gpu/compare.mjs "$out/run-$suffix.json" "$out/ref-$suffix.json" | grep -E 'total|within|suspend default suspend'; }
  done
  [ ${#run_files[@]} -gt 0 ] || { echo "no commcost run to compare for $label"; continue; }
  joined_runs=$(IFS=,; echo "${run_files[*]}"); joined_refs=$(IFS=,; echo "${ref_files[*]}")
  [ "$rounds" -gt 1 ] && echo "--- all $rounds rounds"
  "$node" test/gpu/compare.mjs "$joined_runs" "$joined_refs" | tee "$out/compare-$label.txt" || status=1
done
exit $status
