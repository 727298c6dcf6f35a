#!/usr/bin/env bash
# Diagnostic for the GPU proof: NCCL's own "Init timings" phase breakdown for the same calls
# made by commcost and by the independent reference (NCCL_DEBUG_FILE, one file per process).
set -uo pipefail
cd "$(dirname "$0")/../.."
mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH NCCL_NVLS_ENABLE=0
lib=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
d=test-output/diag; mkdir -p $d/p $d/r
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE
NCCL_DEBUG_FILE=$d/p/nccl.%p.log node bin/commcost.js measure --nccl "$lib" --experiments split --iterations 5 --json $d/p.json --save-dir $d/runs >/dev/null 2>&1
NCCL_DEBUG_FILE=$d/r/nccl.%p.log python3 test/gpu/reference.py --nccl "$lib" --iterations 5 --json $d/r.json >/dev/null 2>&1
for w in p r; do echo "== $w"; grep -h "Init timings" $d/$w/*.log | sed 's/.*Init timings - //' | sort | uniq -c | sort -rn | head -12; done
node test/gpu/compare.mjs $d/p.json $d/r.json | grep split
tar czf ${OUT:-/tmp}/diag.tgz $d
