#!/usr/bin/env bash
# GPU host, issue #29, on NCCL 2.30.7 built from source (/work/shared/nccl/README.md): builds
# libnccl 2.30.7 (≈3 min on 16 cores) unless /tmp/ncclb/lib/libnccl.so.2 is already there, then
#   (1) commcost's many-comms curve on one GPU: N = 1, 2, 4, 8, 16 communicators by init and by
#       split with splitShare 0 and 1, and over the knobs (config minCTAs/maxCTAs and maxP2pPeers —
#       2.30.3 and later —, NCCL_BUFFSIZE, NCCL_RUNTIME_CONNECT, NCCL_CUMEM_ENABLE), with
#       ncclCommMemStats beside the free-memory delta (2.29.7 and later);
#   (2) the init experiment, whose `scalable` variant times ncclCommInitRankScalable with several
#       unique ids beside ncclCommInitRankConfig, on every GPU of the host and on one (where it
#       passes one id: the step's label says how many);
# then `commcost report` (and its HTML) of each run and a check of what the runs must hold.
# Expects .gpu/node.xz (optional: node on PATH otherwise), dist/ built and
# .gpu/nccl-2.30.7-src.tar.xz carried; writes $OUT/many2307.tgz (runs, reports, logs) and a
# summary on stdout. Never changes GPU settings; NCCL_NVLS_ENABLE=0 as the other GPU scripts.
# SIMULATE=1: a dry run of the script on the simulated NCCL as 2.30.7 (no GPU, no build).
# Knobs: ITER (recorded iterations, default 3), COUNTS (default 1,2,4,8,16), MEASURE_S (time limit
# of each measure, default 240 s).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
[ -n "${OUT:-}" ] || { echo "many-comms-2307: set OUT to the folder that receives many2307.tgz"; exit 2; }
if [ -f .gpu/node.xz ]; then mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH; fi
W=$(mktemp -d /tmp/wmany2307.XXXXXX); mkdir -p $W/runs-many $W/runs-init
pack() { tar czf $OUT/many2307.tgz -C $W . ; rm -rf "$W"; }
trap pack EXIT
ITER=${ITER:-3}; COUNTS=${COUNTS:-1,2,4,8,16}; LIMIT=${MEASURE_S:-240}
lib=/tmp/ncclb/lib/libnccl.so.2
SECONDS=0
if [ "${SIMULATE:-0}" = 1 ]; then
  nccl_flags=(--simulate); export COMMCOST_SIM_VERSION=23007; gpus=${SIM_GPUS:-2}; export COMMCOST_SIM_GPUS=$gpus
else
  if [ ! -f $lib ]; then
    [ -f .gpu/nccl-2.30.7-src.tar.xz ] || { echo "many-comms-2307: carry .gpu/nccl-2.30.7-src.tar.xz (or build $lib first)"; exit 2; }
    mkdir -p /tmp/ncsrc && tar xJf .gpu/nccl-2.30.7-src.tar.xz -C /tmp/ncsrc \
      && make -C /tmp/ncsrc/nccl-2.30.7 -j"$(nproc)" src.build BUILDDIR=/tmp/ncclb NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > $W/nccl-build.log 2>&1
    echo "nccl 2.30.7 build rc $? in ${SECONDS}s" | tee -a $W/nccl-build.log
    [ -f $lib ] || { echo "many-comms-2307: no $lib after the build (see nccl-build.log)"; exit 1; }
  fi
  nccl_flags=(--nccl "$lib")
  gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
fi
{ nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version --format=csv 2>&1; echo "lib=$lib gpus=$gpus simulate=${SIMULATE:-0}"; nproc; date -u; } > $W/machine.txt
measure() { # $1 name, $2 save dir, rest: flags
  local name=$1 dir=$2; shift 2; SECONDS=0
  timeout $LIMIT node bin/commcost.js measure "${nccl_flags[@]}" "$@" --iterations $ITER --warmup 1 --deadline 120 --save-dir "$dir" > $W/$name.txt 2> $W/$name.log
  echo "$name: measure rc $? in ${SECONDS}s" | tee -a $W/$name.txt
}
# (1) the curve: one GPU (memory per GPU is meaningful there), every variant of many-comms.
measure many $W/runs-many --experiments many-comms --comm-counts $COUNTS --ranks 1
# (2) init with the scalable variant: every GPU (2 ids from 2 ranks), and one GPU (1 id).
[ "$gpus" -ge 2 ] && measure init-all $W/runs-init --experiments init --ranks $gpus
measure init-one $W/runs-init --experiments init --ranks 1
i=0
for r in $W/runs-many/*.json $W/runs-init/*.json; do
  [ -f "$r" ] || continue
  i=$((i+1)); node bin/commcost.js report "$r" --html $W/report-$i.html > $W/report-$i.txt 2>&1; echo "report $(basename $r) rc $?" | tee -a $W/report-$i.txt
done
echo "agent processes left: [$(pgrep -f "$PWD/dist/agent.js" | tr '\n' ' ')]" | tee -a $W/machine.txt
echo "== what the runs hold (NCCL version, variants, skips; MemStats at the many-comms points; the scalable init) =="
node -e '
const fs = require("fs"); const path = require("path");
for (const dir of process.argv.slice(1)) for (const f of fs.readdirSync(dir).filter((x) => x.endsWith(".json"))) {
  const run = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
  console.log(`-- ${f}: NCCL ${run.stamp?.ncclVersion} ${run.stamp?.simulated ? "SIMULATED " : ""}${run.ranks} rank(s), status ${run.status}`);
  for (const s of run.skipped ?? []) console.log(`   skipped ${s.experiment} ${s.variant ?? ""}: ${s.reason}`);
  for (const e of run.experiments) for (const v of e.variants) {
    const total = v.steps.find((x) => x.step === "total" || x.step.startsWith("total/n"));
    const memStats = Object.keys(v.memStats ?? {}).length;
    const call = v.steps.find((x) => x.step === "call")?.label ?? "";
    console.log(`   ${e.experiment} ${v.variant}: ${v.steps.length} steps${total ? `, ${total.step} median ${total.stats.median.toFixed(2)} ms` : ""}${e.experiment === "many-comms" ? `, MemStats at ${memStats} point(s)` : ""}${call ? `, call: ${call}` : ""}`);
  }
}' $W/runs-many $W/runs-init
for t in $W/report-*.txt; do echo "-- $(basename $t)"; sed -n '/^many-comms: /,/^$/p' $t | head -60; grep -E "^ *(init|scalable|default)" $t | head -12; grep -E "MemStats|skipped" $t | cut -c1-220 | head -8; done
grep -hE "rc |skipped|timed out|error" $W/many.txt $W/init-*.txt 2>/dev/null | cut -c1-220 | head -30
