#!/usr/bin/env bash
# 1xH200: every one-rank experiment of the catalogue on the real library, made by today's native
# addon (after a refactor of native/src/, the timed code must still run every lifecycle call):
# NCCL 2.30.7 built from .gpu/nccl-2.30.7-src.tar.xz (grow needs a peer, so suspend and MemStats
# are what 2.30.7 adds at one rank) and 2.28.9 (PyTorch wheel) in one invocation, 5 iterations;
# then `commcost report` of each run and the comparison of the two.
# Expects .gpu/node.xz, .gpu/nccl-2.30.7-src.tar.xz and dist/ carried; writes $OUT/confirm.tgz.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
[ -n "${OUT:-}" ] || { echo "one-gpu-confirm: set OUT to the folder that receives confirm.tgz"; exit 2; }
mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH
W=/tmp/wf; rm -rf $W; mkdir -p $W/runs
pack() { tar czf $OUT/confirm.tgz -C $W . ; }
trap pack EXIT
n30=/tmp/ncclb/lib/libnccl.so.2
SECONDS=0
if [ ! -f $n30 ]; then
  mkdir -p /tmp/ncsrc && tar xJf .gpu/nccl-2.30.7-src.tar.xz -C /tmp/ncsrc && make -C /tmp/ncsrc/nccl-2.30.7 -j32 src.build BUILDDIR=/tmp/ncclb NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > $W/nccl-build.log 2>&1
  echo "nccl 2.30.7 build rc $? in ${SECONDS}s" | tee -a $W/nccl-build.log
fi
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; echo wheel=$wheel; nproc; date -u; } > $W/machine.txt 2>&1
EXP=init,split,shrink,destroy,abort,revoke,registration,drain,pool,connect-mode,suspend,split-share,shrink-abort,init-abort,cold-start
SECONDS=0
timeout ${MEASURE_S:-300} node bin/commcost.js measure --nccl $n30 --nccl "$wheel" --experiments $EXP --iterations 5 --deadline 30 --save-dir $W/runs > $W/measure.txt 2> $W/measure.log
echo "measure rc $? in ${SECONDS}s" | tee -a $W/measure.txt
i=0
for r in $W/runs/*.json; do
  i=$((i+1)); node bin/commcost.js report "$r" --html $W/report-$i.html > $W/report-$i.txt 2>&1; echo "report $(basename $r) rc $?" | tee -a $W/report-$i.txt
done
runs=($W/runs/*.json)
[ ${#runs[@]} -ge 2 ] && { node bin/commcost.js report "${runs[0]}" "${runs[1]}" --html $W/compare.html > $W/compare.txt 2>&1; echo "compare rc $?" | tee -a $W/compare.txt; }
echo "agent processes left: [$(pgrep -f "$PWD/dist/agent.js" | tr '\n' ' ')]" | tee -a $W/machine.txt
grep -E "rc |skipped|timed out|error" $W/measure.txt | cut -c1-220 | head -40
