#!/usr/bin/env bash
# 1xH200: the readings of fresh runs made by today's code on the real library, on two NCCL
# versions: the default one-GPU set on 2.28.9 (PyTorch wheel) and on 2.28.3 (system), 5 iterations
# each; then `commcost report` of each (summary and verdict) and of the two together (the
# comparison, rank counts equal, versions differing). Expects .gpu/node.xz and dist/ carried;
# writes $OUT/readings.tgz.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH
W=/tmp/wr; rm -rf $W; mkdir -p $W/runs9 $W/runs3
pack() { tar czf $OUT/readings.tgz -C $W . ; }
trap pack EXIT
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
sys=/lib/x86_64-linux-gnu/libnccl.so.2
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; echo wheel=$wheel; nproc; date -u; } > $W/machine.txt 2>&1
SECONDS=0
timeout 280 node bin/commcost.js measure --nccl "$wheel" --iterations 5 --save-dir $W/runs9 > $W/measure-2.28.9.txt 2> $W/measure-2.28.9.log; echo "measure 2.28.9 rc $? in ${SECONDS}s" | tee -a $W/measure-2.28.9.txt
SECONDS=0
timeout 280 node bin/commcost.js measure --nccl "$sys" --iterations 5 --save-dir $W/runs3 > $W/measure-2.28.3.txt 2> $W/measure-2.28.3.log; echo "measure 2.28.3 rc $? in ${SECONDS}s" | tee -a $W/measure-2.28.3.txt
r9=$(ls $W/runs9/*.json | head -1); r3=$(ls $W/runs3/*.json | head -1)
node bin/commcost.js report "$r9" --html $W/report-2.28.9.html > $W/report-2.28.9.txt 2>&1; echo "report rc $?" >> $W/report-2.28.9.txt
node bin/commcost.js report "$r3" --html $W/report-2.28.3.html > $W/report-2.28.3.txt 2>&1; echo "report rc $?" >> $W/report-2.28.3.txt
node bin/commcost.js report "$r9" "$r3" --html $W/compare.html > $W/compare.txt 2>&1; echo "compare rc $?" >> $W/compare.txt
echo "agent processes left: [$(pgrep -f "$PWD/dist/agent.js" | tr '\n' ' ')]" >> $W/machine.txt
