#!/usr/bin/env bash
# 2xH200, call 3: build NCCL 2.30.7 (alone), then the catalogue at 2 ranks on 2.28.9 and 2.30.7 in
# one invocation (pool with and without splitShare, the drain sweep with work in flight, revoke
# and shrink-abort drop checks, grow and suspend on 2.30.7, cold start at 2 ranks), then the torch
# TP 2->1->2 example traced on both libraries.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH
W=/tmp/w3; rm -rf $W; mkdir -p $W/runs $W/traces
pack() { tar czf $OUT/runs3.tgz -C $W . ; }
trap pack EXIT
SECONDS=0
mkdir -p /tmp/ncsrc && tar xJf .gpu/nccl-2.30.7-src.tar.xz -C /tmp/ncsrc && make -C /tmp/ncsrc/nccl-2.30.7 -j32 src.build BUILDDIR=/tmp/ncclb NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > $W/nccl-build.log 2>&1; echo "nccl build rc $? in ${SECONDS}s"
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
n30=/tmp/ncclb/lib/libnccl.so.2
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; nvidia-smi topo -m; echo wheel=$wheel; nproc; date -u; } > $W/machine.txt 2>&1
EXP=init,split,shrink,grow,destroy,abort,revoke,drain,pool,suspend,cold-start
SECONDS=0
timeout 330 node bin/commcost.js measure --nccl "$wheel" --nccl $n30 --experiments $EXP --iterations 5 --deadline 30 --save-dir $W/runs > $W/catalogue.txt 2> $W/catalogue.log; echo "catalogue rc $? in ${SECONDS}s" | tee -a $W/catalogue.txt
PYBIN=$(dirname $(python3 -c 'import sys;print(sys.executable)'))
for lib in wheel n30; do
  SECONDS=0
  if [ $lib = n30 ]; then pre="LD_PRELOAD=$n30"; else pre=""; fi
  timeout 90 env $pre node bin/commcost.js trace --out $W/traces/trace-$lib.json --deadline 80 -- python3 -m torch.distributed.run --nproc-per-node=2 examples/trace/torch_tp_reshape.py > $W/trace-$lib.txt 2>&1; echo "trace $lib rc $? in ${SECONDS}s" | tee -a $W/trace-$lib.txt
done
grep -E "verdict|•|rc " $W/catalogue.txt | cut -c1-300 | head -60
tail -30 $W/trace-wheel.txt; tail -30 $W/trace-n30.txt
ls -la $W/runs $W/traces
