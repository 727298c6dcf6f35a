#!/usr/bin/env bash
# 1xH200, after the one-host shared-memory barrier, NCCL's view in traces, --html and --interpose:
#   1. commcost's init, cold-start, destroy, abort and c10d experiments (5 iterations) on 2.28.9,
#      to set beside the same experiments of h200x1-trace-2026-12-01/ (the TCP barrier of that day);
#   2. the torch example traced at one rank (NCCL's Init timings joined by the trace itself) with
#      --html; the C example (NRANKS=1) traced with --interpose and --html on 2.28.9;
#   3. the bundled bench (dist/bench.js: barrier skew shm / JS TCP / C TCP / loopback at 2-16 ranks,
#      the fold, ...) and the trace overhead loop on the real NCCL (dist/traceOverhead.js --nccl).
# Expects .gpu/node.xz and dist/ (with bench.js and traceOverhead.js) carried; $OUT/check.tgz.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH
W=/tmp/wc; rm -rf $W; mkdir -p $W/runs $W/traces
pack() { tar czf $OUT/check.tgz -C $W . ; }
trap pack EXIT
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; echo wheel=$wheel; nproc; date -u; } > $W/machine.txt 2>&1
SECONDS=0
timeout 240 node bin/commcost.js measure --nccl "$wheel" --experiments init,cold-start,destroy,abort,c10d --iterations 5 --deadline 30 --save-dir $W/runs > $W/measure.txt 2> $W/measure.log; echo "measure rc $? in ${SECONDS}s" | tee -a $W/measure.txt
SECONDS=0
timeout 90 node bin/commcost.js trace --out $W/traces/trace-torch-1rank.json --html $W/traces/trace-torch-1rank.html --deadline 80 -- python3 -m torch.distributed.run --nproc-per-node=1 examples/trace/torch_tp_reshape.py > $W/trace-torch.txt 2>&1; echo "trace torch rc $? in ${SECONDS}s" | tee -a $W/trace-torch.txt
d=$(dirname "$wheel")
cc -std=c11 -O2 -g examples/trace/nccl_lifecycle.c -o /tmp/lifecycle -L"$d" -l:libnccl.so.2 -l:libcuda.so.1 -Wl,-rpath,"$d" > $W/cc.log 2>&1; echo "cc rc $?" >> $W/cc.log
SECONDS=0
NRANKS=1 timeout 90 node bin/commcost.js trace --interpose --out $W/traces/trace-c-1rank.json --html $W/traces/trace-c-1rank.html --deadline 80 -- /tmp/lifecycle > $W/trace-c.txt 2>&1; echo "trace c rc $? in ${SECONDS}s" | tee -a $W/trace-c.txt
SECONDS=0
timeout 120 node dist/traceOverhead.js --nccl "$wheel" --calls 20000 --rounds 9 > $W/overhead.txt 2>&1; echo "overhead rc $? in ${SECONDS}s" | tee -a $W/overhead.txt
SECONDS=0
timeout 230 node dist/bench.js > $W/bench.txt 2>&1; echo "bench rc $? in ${SECONDS}s" | tee -a $W/bench.txt
grep -E "rc |init default|cold-start default · call|destroy|abort|c10d" $W/measure.txt | cut -c1-200 | head -40
cat $W/trace-torch.txt | tail -25; tail -25 $W/trace-c.txt; tail -15 $W/overhead.txt; tail -40 $W/bench.txt
