set -uo pipefail
mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH NCCL_NVLS_ENABLE=0
lib=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
d=test-output/diag; mkdir -p $d
UV_THREADPOOL_SIZE=1 node bin/commcost.js measure --nccl $lib --experiments init,split --json $d/tp1.json --save-dir $d/runs 2>$d/tp1.log >/dev/null
python3 test/gpu/reference.py --nccl $lib --json $d/ref.json >/dev/null 2>$d/ref.log
echo "== threadpool 1"; node test/gpu/compare.mjs $d/tp1.json $d/ref.json
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE node bin/commcost.js measure --verbose --nccl $lib --experiments init --iterations 4 --json $d/dbg.json --save-dir $d/runs 2>$d/dbg.log >/dev/null
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE python3 test/gpu/reference.py --nccl $lib --iterations 4 --json $d/refdbg.json >/dev/null 2>$d/refdbg.log
echo "== product init timings"; grep -h "Init timings" $d/dbg.log | tail -6
echo "== reference init timings"; grep -h "Init timings" $d/refdbg.log | tail -6
tar czf $OUT/diag.tgz $d
