#!/usr/bin/env bash
# 1xH200: the trace cross-check of issue 16 and the GPU overhead of tracing, with NCCL 2.28.9 (the
# torch wheel). In one call, with nothing else running:
#   1. commcost's own init, cold-start and c10d experiments (5 iterations) on the wheel;
#   2. the torch example traced 3 times at one rank (torchrun), with NCCL's INIT logs per process
#      (NCCL_DEBUG_FILE) kept beside each trace for the Init timings;
#   3. the plugin's overhead on 20,000 small allreduces (test/gpu/trace_overhead.c), traced and
#      untraced rounds alternating;
#   4. npm run bench's bundled copy (dist/bench.js), when carried: barrier skew on this host.
# Expects .gpu/node.xz and dist/ carried; everything lands in $OUT/trace1.tgz.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH
W=/tmp/wt; rm -rf $W; mkdir -p $W/runs $W/traces
pack() { tar czf $OUT/trace1.tgz -C $W . ; }
trap pack EXIT
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; echo wheel=$wheel; nproc; date -u; python3 -c 'import torch;print("torch",torch.__version__)'; } > $W/machine.txt 2>&1
SECONDS=0
timeout 240 node bin/commcost.js measure --nccl "$wheel" --experiments init,cold-start,c10d --iterations 5 --deadline 30 --save-dir $W/runs > $W/measure.txt 2> $W/measure.log; echo "measure rc $? in ${SECONDS}s" | tee -a $W/measure.txt
for i in 1 2 3; do
  SECONDS=0; mkdir -p $W/ncclinfo$i
  timeout 90 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_DEBUG_FILE=$W/ncclinfo$i/nccl.%h.%p.log \
    node bin/commcost.js trace --out $W/traces/trace-1rank-$i.json --deadline 80 -- python3 -m torch.distributed.run --nproc-per-node=1 examples/trace/torch_tp_reshape.py > $W/trace-$i.txt 2>&1
  echo "trace $i rc $? in ${SECONDS}s" | tee -a $W/trace-$i.txt
done
cc -O2 -o /tmp/trace_overhead test/gpu/trace_overhead.c -ldl
plugin=$PWD/dist/native/libcommcost-profiler.so; td=$(mktemp -d)
{ echo "calls=20000 rounds=7 lib=$wheel; ns per collective (host wall to stream sync / calls)"
  for r in 1 2 3 4 5 6 7; do
    u=$(timeout 60 /tmp/trace_overhead "$wheel" 20000); t=$(timeout 60 env NCCL_PROFILER_PLUGIN=$plugin COMMCOST_TRACE_DIR=$td /tmp/trace_overhead "$wheel" 20000)
    echo "round $r untraced $u traced $t"
  done; ls -la $td | head; } > $W/overhead.txt 2>&1
cat $W/overhead.txt
if [ -f dist/bench.js ]; then timeout 200 node dist/bench.js > $W/bench.txt 2>&1; echo "bench rc $?"; tail -12 $W/bench.txt; fi
grep -E "rc |cold|init|c10d" $W/measure.txt | cut -c1-250 | head -40
tail -25 $W/trace-1.txt
