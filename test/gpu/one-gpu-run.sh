#!/usr/bin/env bash
# 1xH200, call 2: build NCCL 2.30.7, then with nothing else running: the one-rank catalogue on
# 2.28.9, 2.28.3, 2.30.7 in one invocation; cold-start on each; the independent cold reference.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH
W=/tmp/w2; rm -rf $W; mkdir -p $W/runs
pack() { tar czf $OUT/runs2.tgz -C $W . ; }
trap pack EXIT
mkdir -p /tmp/ncsrc && tar xJf .gpu/nccl-2.30.7-src.tar.xz -C /tmp/ncsrc && make -C /tmp/ncsrc/nccl-2.30.7 -j16 src.build BUILDDIR=/tmp/ncclb NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > $W/nccl-build.log 2>&1; echo "nccl build rc $?"
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
sys=/lib/x86_64-linux-gnu/libnccl.so.2; n30=/tmp/ncclb/lib/libnccl.so.2
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; echo wheel=$wheel; nproc; date -u; } > $W/machine.txt
EXP=init,destroy,abort,revoke,registration,drain,pool,connect-mode,suspend,grow,split,shrink,cold-start
SECONDS=0
timeout 380 node bin/commcost.js measure --nccl "$wheel" --nccl $sys --nccl $n30 --experiments $EXP --iterations 5 --deadline 30 --save-dir $W/runs > $W/catalogue.txt 2> $W/catalogue.log; echo "catalogue rc $? in ${SECONDS}s" | tee -a $W/catalogue.txt
for l in "$wheel" $n30; do timeout 60 python3 test/gpu/cold_reference.py --nccl $l --iterations 5 --json $W/coldref-$(basename $(dirname $(dirname $l))).json > /dev/null 2>> $W/coldref.log; echo "coldref rc $?"; done
grep -E "verdict|•|cold-start|suspend|drain|skipped|saved|rc " $W/catalogue.txt | cut -c1-400 | head -120
ls -la $W/runs $W
