#!/usr/bin/env bash
# 2xH200: the independent reference's grow and suspend beside commcost's, on NCCL 2.30.7 (built
# from .gpu/nccl-2.30.7-src.tar.xz; kept when /tmp/ncclb already holds it), 2.28.9 (the PyTorch
# wheel's) and 2.28.3 (/lib/x86_64-linux-gnu/libnccl.so.2). In ROUNDS turns (default 2): ONE
# commcost `measure` invocation over the three libraries (--nccl three times, EXP in this order),
# then reference.py --only <EXP's sections> on each library; then compare.mjs per library, every
# turn pooled. Grow and suspend exist from 2.29.2 / 2.29.7 on: on 2.28.x both tools skip them with
# the reason, and that library's comparison says "nothing compared" unless EXP adds experiments the
# reference has (e.g. EXP=init,grow,suspend). ITERATIONS (default 6) recorded iterations per turn.
# Expects .gpu/node.xz, .gpu/nccl-2.30.7-src.tar.xz and dist/ carried; everything in $OUT/ref2.tgz.
# SIMULATE=1: a dry run on the simulated NCCL as 2.30.7, one library, 2 ranks (checks the script).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
rounds=${ROUNDS:-2}; iterations=${ITERATIONS:-6}; exp=${EXP:-grow,suspend}
[[ $rounds =~ ^[1-9][0-9]*$ && $iterations =~ ^[1-9][0-9]*$ ]] || { echo "two-gpu-reference: ROUNDS and ITERATIONS must be whole numbers ≥ 1 (got '$rounds', '$iterations')"; exit 2; }
[ -n "${OUT:-}" ] || { echo "two-gpu-reference: set OUT to the folder that receives ref2.tgz"; exit 2; }
# The reference's sections: the experiments it has (registration is its 'window'), in EXP's order.
sections=$(tr ',' '\n' <<< "$exp" | sed 's/^registration$/window/' | grep -xE 'init|split|shrink|grow|destroy|abort|revoke|window|suspend' | paste -sd, -)
[ -n "$sections" ] || { echo "two-gpu-reference: none of EXP ($exp) is measured by the reference"; exit 2; }
W=/tmp/wr2; rm -rf $W; mkdir -p $W
pack() { tar czf $OUT/ref2.tgz -C $W . ; }
trap pack EXIT
n30=/tmp/ncclb/lib/libnccl.so.2
if [ "${SIMULATE:-0}" = 1 ]; then
  export COMMCOST_SIM_VERSION=23007 COMMCOST_SIM_GPUS=2
  libs=("simulated:dist/native/libnccl-sim.so"); target=(--simulate); ref_cuda=(--cuda dist/native/libnccl-sim.so)
else
  mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH
  SECONDS=0
  if [ ! -f $n30 ]; then
    mkdir -p /tmp/ncsrc && tar xJf .gpu/nccl-2.30.7-src.tar.xz -C /tmp/ncsrc \
      && timeout 300 make -C /tmp/ncsrc/nccl-2.30.7 -j32 src.build BUILDDIR=/tmp/ncclb NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > $W/nccl-build.log 2>&1
    echo "nccl build rc $? in ${SECONDS}s" | tee -a $W/steps.txt
  fi
  wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2") if s else "")' 2>/dev/null)
  libs=()
  [ -f $n30 ] && libs+=("n30:$n30") || echo "two-gpu-reference: no $n30 (see nccl-build.log): 2.30.7 left out" | tee -a $W/steps.txt
  [ -n "$wheel" ] && [ -f "$wheel" ] && libs+=("wheel:$wheel")
  [ -f /lib/x86_64-linux-gnu/libnccl.so.2 ] && libs+=("system:/lib/x86_64-linux-gnu/libnccl.so.2")
  target=(); for e in "${libs[@]}"; do target+=(--nccl "${e#*:}"); done; ref_cuda=()
fi
[ ${#libs[@]} -gt 0 ] || { echo "two-gpu-reference: no library to measure"; exit 1; }
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; nproc; date -u; printf '%s\n' "${libs[@]}"; echo "EXP=$exp sections=$sections"; } > $W/machine.txt 2>&1
for round in $(seq 1 "$rounds"); do
  SECONDS=0
  mkdir -p $W/runs-r$round
  timeout 240 node bin/commcost.js measure "${target[@]}" --ranks 2 --experiments "$exp" --iterations "$iterations" --deadline 30 \
    --save-dir $W/runs-r$round > $W/measure-r$round.txt 2> $W/measure-r$round.log
  echo "round $round: commcost (${#libs[@]} libraries, one invocation) rc $? in ${SECONDS}s" | tee -a $W/steps.txt
  # Each saved run under the label of the library it measured (options.ncclPath; the simulated run is the only one).
  for f in $W/runs-r$round/*.json; do
    [ -f "$f" ] || continue
    path=$(node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));console.log(r.simulated?"dist/native/libnccl-sim.so":r.options?.ncclPath??"")' "$f")
    for e in "${libs[@]}"; do [ "${e#*:}" = "$path" ] && cp "$f" "$W/run-${e%%:*}-r$round.json"; done
  done
  for e in "${libs[@]}"; do
    label=${e%%:*}; lib=${e#*:}; SECONDS=0
    timeout 150 python3 test/gpu/reference.py --nccl "$lib" "${ref_cuda[@]}" --ranks 2 --only "$sections" --iterations "$iterations" --json $W/ref-$label-r$round.json > /dev/null 2> $W/ref-$label-r$round.log
    echo "round $round: reference $label rc $? in ${SECONDS}s" | tee -a $W/steps.txt
  done
done
status=0
for e in "${libs[@]}"; do
  label=${e%%:*}
  runs=$(ls $W/run-$label-r*.json 2>/dev/null | paste -sd, -); refs=$(ls $W/ref-$label-r*.json 2>/dev/null | paste -sd, -)
  echo "=== $label: ${e#*:}"
  if [ -z "$runs" ] || [ -z "$refs" ]; then echo "nothing to compare for $label (commcost runs: '${runs}', reference files: '${refs}'; see the logs)"; status=1; continue; fi
  node test/gpu/compare.mjs "$runs" "$refs" | tee $W/compare-$label.txt || status=1
done
grep -hE "skipped|grow|suspend" $W/measure-r1.txt | cut -c1-220 | head -30
exit $status
