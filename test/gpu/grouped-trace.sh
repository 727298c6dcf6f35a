#!/usr/bin/env bash
# 1xH200: grouped and non-blocking creation on the real NCCL (issue "Trace the jobs our users
# really run", part 1). test/gpu/grouped_create.c (a grouped ncclCommInitRank — the process's cold
# first communicator —, ncclCommInitAll of 1 device, a non-blocking init, a grouped non-blocking
# init, a plain init) built against NCCL 2.28.9 (the torch wheel; its nccl.h, else /usr/include),
# then:
#   1. run alone with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT (its own clock per creation beside
#      NCCL's "Init timings" lines on stdout);
#   2. `commcost trace --interpose --html` (commcost asks NCCL for its INIT log itself and joins
#      the Init timings to the sites: the table's "NCCL's view");
#   3. the same trace with the user's own NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT and
#      NCCL_DEBUG_FILE under $OUT (NCCL's log files kept as NCCL wrote them).
# Expected: every creating line of grouped_create.c has a creation figure; the grouped init's note
# says "created in a group: paid at grouped_create.c:<line> of ncclGroupEnd" and its figure is close
# to the program's own "created after" and to NCCL's Init timings total (~380 ms cold on 1xH200);
# the non-blocking ones say "completed at … of ncclCommGetAsyncError".
# Expects .gpu/node.xz and dist/ carried (node scripts/build.mjs); writes $OUT/grouped.tgz and a
# summary on stdout. SIMULATE=1: the same on the simulated NCCL (dist/native/libnccl-sim.so, no
# GPU, the fixture's declarations instead of nccl.h: a dry run of this script).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
[ -n "${OUT:-}" ] || { echo "grouped-trace: set OUT to the folder that receives grouped.tgz"; exit 2; }
if [ -f .gpu/node.xz ]; then mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH; fi
W=/tmp/wgrp; rm -rf $W; mkdir -p $W/traces $W/ncclinfo
pack() { tar czf $OUT/grouped.tgz -C $W . ; }
trap pack EXIT
exe=/tmp/grouped_create
if [ "${SIMULATE:-0}" = 1 ]; then
  sim=$PWD/dist/native/libnccl-sim.so; SIM=--simulate
  # The CI fixture (its 2-rank group needs 2 simulated devices); a cold first creation like a GPU's.
  export COMMCOST_SIM_GPUS=2 COMMCOST_SIM_KERNELS_MS=300 COMMCOST_SIM_INIT_MS=40
  cc -std=c11 -O2 -g test/fixtures/trace/nccl_grouped.c -o $exe "$sim" -Wl,-rpath,"$(dirname "$sim")" > $W/cc.log 2>&1; echo "cc rc $?" | tee -a $W/cc.log
  { echo simulated; nproc; date -u; } > $W/machine.txt
else
  SIM=
  wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
  d=$(dirname "$wheel"); inc=$(cd "$d/../include" 2>/dev/null && pwd)
  [ -f "$inc/nccl.h" ] || inc=/usr/include
  # nccl.h includes cuda_runtime.h: the toolkit's, else the wheel's nvidia/cuda_runtime; neither: our own declarations.
  cudainc=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.cuda_runtime");print(os.path.join(list(s.submodule_search_locations)[0],"include"))' 2>/dev/null)
  for c in /usr/local/cuda/include "$cudainc"; do [ -f "$c/cuda_runtime.h" ] && { cudainc=$c; break; }; done
  flags=(-I"$inc" -I"$cudainc"); { [ -f "$inc/nccl.h" ] && [ -f "$cudainc/cuda_runtime.h" ]; } || flags=(-DGROUPED_OWN_DECLS)
  { nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; echo "wheel=$wheel"; echo "nccl.h=$inc/nccl.h cuda=$cudainc flags=${flags[*]}"; grep -m3 -E 'define NCCL_(MAJOR|MINOR|PATCH)' "$inc/nccl.h"; nproc; date -u; } > $W/machine.txt 2>&1
  cc -std=c11 -O2 -g "${flags[@]}" test/gpu/grouped_create.c -o $exe -L"$d" -l:libnccl.so.2 -Wl,-rpath,"$d" > $W/cc.log 2>&1; echo "cc rc $? (${flags[*]})" | tee -a $W/cc.log
fi
SECONDS=0
timeout 120 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT $exe > $W/plain.txt 2>&1; echo "plain rc $? in ${SECONDS}s" | tee -a $W/plain.txt
SECONDS=0
timeout 150 node bin/commcost.js trace $SIM --interpose --out $W/traces/grouped.json --html $W/traces/grouped.html --deadline 140 -- $exe > $W/trace.txt 2>&1; echo "trace rc $? in ${SECONDS}s" | tee -a $W/trace.txt
SECONDS=0
timeout 150 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_DEBUG_FILE=$W/ncclinfo/nccl.%h.%p.log \
  node bin/commcost.js trace $SIM --interpose --out $W/traces/grouped-userlog.json --deadline 140 -- $exe > $W/trace-userlog.txt 2>&1; echo "trace (user's NCCL log) rc $? in ${SECONDS}s" | tee -a $W/trace-userlog.txt
echo "== the program's own clock, and NCCL's Init timings (untraced run)"
grep -E 'grouped_create:|nccl_grouped:|Init timings|Init COMPLETE' $W/plain.txt | cut -c1-230
echo "== commcost trace --interpose"
grep -vE '^ *$' $W/trace.txt | cut -c1-260 | head -60
echo "== NCCL's Init timings in the user's log files of the second trace"
grep -h 'Init timings' $W/ncclinfo/*.log 2>/dev/null | cut -c1-230
grep -E '^note: (created in a group|non-blocking)' $W/trace-userlog.txt | cut -c1-230
