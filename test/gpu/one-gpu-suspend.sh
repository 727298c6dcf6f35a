#!/usr/bin/env bash
# 1xH200: the independent reference's suspend/resume beside commcost's, on NCCL 2.30.7 built from
# .gpu/nccl-2.30.7-src.tar.xz (suspend runs at one rank there; grow needs 2 GPUs and is left to
# two-gpu-reference.sh). In ROUNDS turns (default 2): commcost `measure --experiments suspend`,
# then reference.py --only suspend, ITERATIONS recorded iterations each per turn (default 6); then
# compare.mjs pools both turns (±10% on the suspend call and on resume to first collective).
# Expects .gpu/node.xz, .gpu/nccl-2.30.7-src.tar.xz and dist/ carried; everything in $OUT/suspend1.tgz.
# About 180 s for the build (16 cores; skipped when /tmp/ncclb already holds it) + ~60 s per turn.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
rounds=${ROUNDS:-2}; iterations=${ITERATIONS:-6}
[[ $rounds =~ ^[1-9][0-9]*$ && $iterations =~ ^[1-9][0-9]*$ ]] || { echo "one-gpu-suspend: ROUNDS and ITERATIONS must be whole numbers ≥ 1 (got '$rounds', '$iterations')"; exit 2; }
[ -n "${OUT:-}" ] || { echo "one-gpu-suspend: set OUT to the folder that receives suspend1.tgz"; exit 2; }
W=/tmp/ws1; rm -rf $W; mkdir -p $W/runs
pack() { tar czf $OUT/suspend1.tgz -C $W . ; }
trap pack EXIT
n30=/tmp/ncclb/lib/libnccl.so.2; target=(--nccl $n30); ref_cuda=()
# SIMULATE=1: a dry run on the simulated NCCL as 2.30.7 (checks the script, not figures; node from PATH).
if [ "${SIMULATE:-0}" = 1 ]; then
  export COMMCOST_SIM_VERSION=23007 COMMCOST_SIM_GPUS=1
  n30=dist/native/libnccl-sim.so; target=(--simulate); ref_cuda=(--cuda $n30)
else
  mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH
fi
SECONDS=0
if [ ! -f $n30 ]; then
  mkdir -p /tmp/ncsrc && tar xJf .gpu/nccl-2.30.7-src.tar.xz -C /tmp/ncsrc \
    && timeout 300 make -C /tmp/ncsrc/nccl-2.30.7 -j16 src.build BUILDDIR=/tmp/ncclb NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > $W/nccl-build.log 2>&1
  echo "nccl build rc $? in ${SECONDS}s" | tee -a $W/steps.txt
fi
[ -f $n30 ] || { echo "one-gpu-suspend: no $n30 (see nccl-build.log)"; tail -20 $W/nccl-build.log; exit 1; }
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; nproc; date -u; echo "nccl=$n30"; } > $W/machine.txt 2>&1
status=0
runs=(); refs=()
for round in $(seq 1 "$rounds"); do
  SECONDS=0
  timeout 150 node bin/commcost.js measure "${target[@]}" --ranks 1 --experiments suspend --iterations "$iterations" --deadline 30 \
    --json $W/run-r$round.json --save-dir $W/runs > $W/measure-r$round.txt 2> $W/measure-r$round.log
  echo "round $round: commcost rc $? in ${SECONDS}s" | tee -a $W/steps.txt
  SECONDS=0
  timeout 150 python3 test/gpu/reference.py --nccl $n30 "${ref_cuda[@]}" --ranks 1 --only suspend --iterations "$iterations" --json $W/ref-r$round.json > /dev/null 2> $W/ref-r$round.log
  echo "round $round: reference rc $? in ${SECONDS}s" | tee -a $W/steps.txt
  [ -f $W/run-r$round.json ] && runs+=($W/run-r$round.json)
  [ -f $W/ref-r$round.json ] && refs+=($W/ref-r$round.json)
  [ -f $W/run-r$round.json ] && [ -f $W/ref-r$round.json ] && node test/gpu/compare.mjs $W/run-r$round.json $W/ref-r$round.json > $W/compare-r$round.txt
done
if [ ${#runs[@]} -gt 0 ] && [ ${#refs[@]} -gt 0 ]; then
  node test/gpu/compare.mjs "$(IFS=,; echo "${runs[*]}")" "$(IFS=,; echo "${refs[*]}")" > $W/compare.txt; rc=$?; echo "compare rc $rc" | tee -a $W/steps.txt; status=$rc
else
  echo "one-gpu-suspend: nothing to compare (commcost runs: ${#runs[@]}, reference files: ${#refs[@]}; see the logs)"; status=1
fi
grep -E "suspend default|memory suspend" $W/measure-r1.txt | cut -c1-200
for f in $W/compare-r*.txt; do echo "--- $f"; grep -E "suspend default|within" "$f"; done
echo "--- pooled"; cat $W/compare.txt 2>/dev/null
tail -5 $W/ref-r1.log
exit $status
