#!/usr/bin/env bash
# 1xH200 (issue #32): the first broadcast at one rank, measured: `commcost measure --first-use
# allreduce,broadcast,sendrecv` of init and split on the PyTorch wheel's NCCL (2.28.9; the send/recv
# variant is skipped at one rank with why: a pair needs 2 GPUs), 10 iterations, then `commcost report`;
# and `commcost trace` of test/fixtures/trace/nccl_first_use.c at NRANKS=1 (the world first used by a
# broadcast, a split child by a send/recv with itself), its table read from stderr, the trace file
# re-rendered by `commcost report <trace.json>`.
# Expects .gpu/node.xz and dist/ carried; writes $OUT/first-use.tgz.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
[ -n "${OUT:-}" ] || { echo "first-use: set OUT to the folder that receives first-use.tgz"; exit 2; }
mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH
W=/tmp/wfu; rm -rf $W; mkdir -p $W/runs $W/trace
pack() { tar czf $OUT/first-use.tgz -C $W . ; }
trap pack EXIT
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; echo wheel=$wheel; nproc; date -u; } > $W/machine.txt 2>&1
SECONDS=0
timeout ${MEASURE_S:-300} node bin/commcost.js measure --nccl "$wheel" --ranks 1 --experiments init,split --first-use allreduce,broadcast,sendrecv \
  --iterations 10 --deadline 30 --save-dir $W/runs > $W/measure.txt 2> $W/measure.log
echo "measure rc $? in ${SECONDS}s" | tee -a $W/measure.txt
for r in $W/runs/*.json; do node bin/commcost.js report "$r" --html $W/report.html > $W/report.txt 2>&1; echo "report rc $?" | tee -a $W/report.txt; done
# The trace: the C fixture against the wheel's NCCL and the driver's libcuda.
libdir=$(dirname "$wheel")
cc -std=c11 -O2 test/fixtures/trace/nccl_first_use.c -o $W/first_use "$wheel" -l:libcuda.so.1 -Wl,-rpath,"$libdir" > $W/cc.log 2>&1; echo "cc rc $?" | tee -a $W/cc.log
(cd $W/trace && NRANKS=1 timeout 120 node $OLDPWD/bin/commcost.js trace --out $W/trace/first-use.json --html $W/trace/first-use.html -- $W/first_use > $W/trace/stdout.txt 2> $W/trace/stderr.txt; echo "trace rc $?" | tee -a $W/trace/stderr.txt)
node bin/commcost.js report $W/trace/first-use.json --html $W/trace/report.html > $W/trace/report.txt 2>&1; echo "trace report rc $?" | tee -a $W/trace/report.txt
echo "agent processes left: [$(pgrep -f "$PWD/dist/agent.js" | tr '\n' ' ')]" | tee -a $W/machine.txt
grep -E "rc |skipped|first=|broadcast|error" $W/measure.txt | cut -c1-220 | head -30
grep -E "first use|broadcast|send|environment" $W/trace/stderr.txt | cut -c1-220 | head -10
