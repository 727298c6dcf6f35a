#!/usr/bin/env bash
# 1xH200, one call: (1) test/gpu/grouped-trace.sh — grouped and non-blocking creation traced with
# --interpose on the real NCCL 2.28.9 beside NCCL's own Init timings; (2) `commcost measure` of
# init, destroy and c10d (the host's torch, the c10d driver written into a private 0700 folder of
# the agent's own, never a fixed name in /tmp) on the same wheel, 3 iterations, then its report;
# and what the agent left in /tmp afterwards (nothing of commcost's may be left).
# Expects .gpu/node.xz and dist/ carried; writes $OUT/grouped.tgz, $OUT/session.tgz.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
[ -n "${OUT:-}" ] || { echo "one-gpu-session: set OUT"; exit 2; }
mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH
bash test/gpu/grouped-trace.sh
W=/tmp/wsess; rm -rf $W; mkdir -p $W/runs
pack() { tar czf $OUT/session.tgz -C $W . ; }
trap pack EXIT
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
ls -la /tmp | grep -i commcost > $W/tmp-before.txt
SECONDS=0
timeout 300 node bin/commcost.js measure --nccl "$wheel" --experiments init,destroy,c10d --iterations 3 --deadline 60 --save-dir $W/runs > $W/measure.txt 2> $W/measure.log
echo "measure rc $? in ${SECONDS}s" | tee -a $W/measure.txt
for r in $W/runs/*.json; do node bin/commcost.js report "$r" > $W/report.txt 2>&1; echo "report rc $?" >> $W/report.txt; done
ls -la /tmp | grep -i commcost > $W/tmp-after.txt
echo "== /tmp entries of commcost's before and after the measure"; cat $W/tmp-before.txt; echo ---; cat $W/tmp-after.txt
echo "agent processes left: [$(pgrep -f "$PWD/dist/agent.js" | tr '\n' ' ')]" | tee -a $W/measure.txt
grep -E "rc |skipped|timed out|error|c10d" $W/measure.txt | cut -c1-220 | head -40
head -80 $W/report.txt | cut -c1-200
