#!/usr/bin/env bash
# 1xH200, issue #29: commcost's many-comms experiment (memory per GPU and the N-th creation as
# N = 1, 2, 4, 8, 16 communicators are made by init and split, splitShare 0/1, and over
# NCCL_BUFFSIZE, CTAs, NCCL_RUNTIME_CONNECT, NCCL_CUMEM_ENABLE, maxP2pPeers) on NCCL 2.28.9 (the
# PyTorch wheel) and, when /tmp/ncclb/lib/libnccl.so.2 exists or .gpu/nccl-2.30.7-src.tar.xz is
# carried (built first), on 2.30.7 — one `measure` invocation; then `commcost report` of each run;
# then an independent check of one point: many_comms_reference.py (ctypes over libcuda and
# libnccl, nvidia-smi memory.used and cuMemGetInfo before/after N one-rank communicators) beside
# commcost's `init` figure at the same N, for each library, with default settings and with
# NCCL_RUNTIME_CONNECT=0.
# Expects .gpu/node.xz and dist/ carried; writes $OUT/many.tgz and a summary on stdout.
# SIMULATE=1: a dry run of the script on the simulated NCCL (no GPU, no reference point).
# Knobs: ITER (recorded iterations, default 3), COUNTS (default 1,2,4,8,16), CHECK_N (default 4,
# one of COUNTS), MEASURE_S (time limit of the measure, default 420 s).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
[ -n "${OUT:-}" ] || { echo "many-comms: set OUT to the folder that receives many.tgz"; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -f .gpu/node.xz ]; then mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH; fi
W=/tmp/wmany; rm -rf $W; mkdir -p $W/runs
pack() { tar czf $OUT/many.tgz -C $W . ; }
trap pack EXIT
ITER=${ITER:-3}; COUNTS=${COUNTS:-1,2,4,8,16}; CHECK_N=${CHECK_N:-4}
n30=/tmp/ncclb/lib/libnccl.so.2
SECONDS=0
if [ "${SIMULATE:-0}" != 1 ] && [ ! -f $n30 ] && [ -f .gpu/nccl-2.30.7-src.tar.xz ]; then
  mkdir -p /tmp/ncsrc && tar xJf .gpu/nccl-2.30.7-src.tar.xz -C /tmp/ncsrc && make -C /tmp/ncsrc/nccl-2.30.7 -j32 src.build BUILDDIR=/tmp/ncclb NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > $W/nccl-build.log 2>&1
  echo "nccl 2.30.7 build rc $? in ${SECONDS}s" | tee -a $W/nccl-build.log
fi
if [ "${SIMULATE:-0}" = 1 ]; then wheel=""; else wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))'); fi
libs=(); [ -n "$wheel" ] && libs+=("$wheel"); [ -f $n30 ] && [ "${SIMULATE:-0}" != 1 ] && libs+=("$n30")
{ nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version --format=csv; echo "wheel=$wheel"; echo "libs=${libs[*]}"; nproc; date -u; } > $W/machine.txt 2>&1
nccl_flags=(); for l in "${libs[@]}"; do nccl_flags+=(--nccl "$l"); done
[ "${SIMULATE:-0}" = 1 ] && nccl_flags=(--simulate)  # dry run of this script on the simulated NCCL (no reference)
SECONDS=0
timeout ${MEASURE_S:-420} node bin/commcost.js measure "${nccl_flags[@]}" --experiments many-comms --comm-counts $COUNTS --ranks 1 --iterations $ITER --warmup 1 --deadline 120 --save-dir $W/runs > $W/measure.txt 2> $W/measure.log
echo "measure rc $? in ${SECONDS}s" | tee -a $W/measure.txt
i=0
for r in $W/runs/*.json; do
  i=$((i+1)); node bin/commcost.js report "$r" --html $W/report-$i.html > $W/report-$i.txt 2>&1; echo "report $(basename $r) rc $?" | tee -a $W/report-$i.txt
  node bin/commcost.js plan --run "$r" > $W/plan-$i.txt 2>&1; echo "plan $(basename $r) rc $?" >> $W/plan-$i.txt
done
# The independent point: N one-rank communicators by ctypes, default settings and NCCL_RUNTIME_CONNECT=0.
for l in "${libs[@]}"; do
  for envs in "" "NCCL_RUNTIME_CONNECT=0"; do
    timeout 120 python3 "$HERE/many_comms_reference.py" "$l" $CHECK_N $envs >> $W/reference.jsonl 2>> $W/reference.log || echo "reference $l $envs rc $?" | tee -a $W/reference.log
  done
done
echo "agent processes left: [$(pgrep -f "$PWD/dist/agent.js" | tr '\n' ' ')]" | tee -a $W/machine.txt
echo "== commcost many-comms (per run) =="
i=0
for r in $W/runs/*.json; do
  i=$((i+1)); echo "-- $(basename $r): $(head -2 $W/report-$i.txt | tail -1 | cut -c1-160)"
  sed -n '/^many-comms: memory per GPU/,/^\(skipped\|\*\*\*\|verdict\)/p' $W/report-$i.txt | head -60
  grep -E "GPUs \(estimate\)" $W/plan-$i.txt | cut -c1-260
done
echo "== independent check (N=$CHECK_N one-rank communicators, ctypes + nvidia-smi) beside commcost's init and init/runtimeConnect=0 at N=$CHECK_N =="
cat $W/reference.jsonl 2>/dev/null
node -e '
const fs = require("fs"); const dir = process.argv[1]; const n = Number(process.argv[2]);
for (const f of fs.readdirSync(dir).filter((x) => x.endsWith(".json"))) {
  const run = JSON.parse(fs.readFileSync(dir + "/" + f, "utf8"));
  const e = run.experiments.find((x) => x.experiment === "many-comms"); if (!e) continue;
  for (const v of e.variants.filter((x) => x.variant === "init" || x.variant === "init/runtimeConnect=0")) {
    const b = v.memoryBytes?.[`after ${n} communicator${n === 1 ? "" : "s"}`];
    console.log(`commcost NCCL ${run.stamp?.ncclVersion} ${v.variant} N=${n}: ${b === undefined ? "no figure" : (b / 2 ** 20).toFixed(1) + " MiB"} (free-memory delta, median)`);
  }
}' $W/runs $CHECK_N
grep -E "rc |skipped|timed out|error" $W/measure.txt | cut -c1-220 | head -20
