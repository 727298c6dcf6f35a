#!/usr/bin/env bash
# 1xH200 (issue #32): test/gpu/ctypes_weight_sync.py — a weight-sync communicator made, first used
# by a 1 MiB broadcast and destroyed per sync through ctypes (as vLLM's PyNcclCommunicator does),
# then two communicators made through ctypes inside ncclGroupStart/ncclGroupEnd — on the PyTorch
# wheel's NCCL (2.28.9):
#   1. run alone with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT (its own clock per step beside NCCL's
#      Init timings);
#   2. `commcost trace --html` (no --interpose: ctypes calls are seen by the Python hook), its table
#      from stderr, then `commcost report <trace.json>`.
# Expected: each ctypes site at its Python line with a figure; the grouped creations at their own
# lines, "paid at … of ncclGroupEnd"; the environment line names the GPU and the driver version.
# Expects .gpu/node.xz and dist/ carried; writes $OUT/ctypes.tgz and a summary on stdout.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
[ -n "${OUT:-}" ] || { echo "ctypes-trace: set OUT"; exit 2; }
if [ -f .gpu/node.xz ] && ! command -v node >/dev/null; then mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH; fi
W=/tmp/wctypes; rm -rf $W; mkdir -p $W/trace
pack() { tar czf $OUT/ctypes.tgz -C $W . ; }
trap pack EXIT
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
export NCCL_LIB=${NCCL_LIB:-$wheel}
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; echo "NCCL_LIB=$NCCL_LIB"; head -1 /proc/driver/nvidia/version; nproc; date -u; } > $W/machine.txt 2>&1
SECONDS=0
timeout 120 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT python3 test/gpu/ctypes_weight_sync.py > $W/plain.txt 2>&1; echo "plain rc $? in ${SECONDS}s" | tee -a $W/plain.txt
SECONDS=0
(cd $W/trace && timeout 150 node $OLDPWD/bin/commcost.js trace --out $W/trace/ctypes.json --html $W/trace/ctypes.html --deadline 140 -- python3 $OLDPWD/test/gpu/ctypes_weight_sync.py > $W/trace/stdout.txt 2> $W/trace/stderr.txt; echo "trace rc $? in ${SECONDS}s" | tee -a $W/trace/stderr.txt)
node bin/commcost.js report $W/trace/ctypes.json > $W/trace/report.txt 2>&1; echo "report rc $?" | tee -a $W/trace/report.txt
echo "== own clock and NCCL's Init timings"; grep -E "^own:|Init timings|rc " $W/plain.txt | cut -c1-220 | head -20
echo "== trace"; cut -c1-260 $W/trace/stderr.txt | head -30
