#!/usr/bin/env bash
# 1xH200: the default one-GPU catalogue after the liveness protocol and the parallel rank start,
# and faults on the real library:
#   1. `commcost measure` of the default one-GPU set on 2.28.9 (5 iterations, --verbose): the wall
#      split (process starts' share), no malformed message, the agent's heartbeats;
#   2. a silent agent: the agent SIGSTOPped during a real run (init on 2.28.9): the CLI must stop
#      with AGENT_SILENT within the liveness deadline, keep the run partial, and leave no agent or
#      rank process (a rank holding a CUDA context and a communicator);
#   3. a silent CLI: the CLI SIGSTOPped: the agent and its ranks must be gone within the deadline;
#   4. the bundled bench (dist/bench.js): barrier skew and the default-suite accounting on 16 cores.
# Expects .gpu/node.xz and dist/ (with bench.js) carried; writes $OUT/faults.tgz.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
mkdir -p /tmp/nodebin; xz -dc .gpu/node.xz > /tmp/nodebin/node; chmod +x /tmp/nodebin/node; export PATH=/tmp/nodebin:$PATH
W=/tmp/wf; rm -rf $W; mkdir -p $W/runs $W/silent
pack() { tar czf $OUT/faults.tgz -C $W . ; }
trap pack EXIT
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; echo wheel=$wheel; nproc; date -u; } > $W/machine.txt 2>&1
agents() { pgrep -f "$PWD/dist/agent.js" | tr '\n' ' '; }

SECONDS=0
[ "${SKIP_TO_FAULTS:-}" = 1 ] || timeout 300 node bin/commcost.js measure --nccl "$wheel" --iterations 5 --verbose --save-dir $W/runs > $W/measure.txt 2> $W/measure.log; echo "measure rc $? in ${SECONDS}s" | tee -a $W/measure.txt
echo "malformed lines: $(grep -c 'malformed' $W/measure.log)" | tee -a $W/measure.txt

# 2. The agent goes silent (SIGSTOP) 4 s into a run; deadline 6 s, heartbeat 1 s.
SECONDS=0
COMMCOST_HEARTBEAT_MS=1000 COMMCOST_LIVENESS_DEADLINE_MS=6000 timeout 120 node bin/commcost.js measure --nccl "$wheel" --experiments init,destroy --iterations 40 --save-dir $W/silent > $W/silent-agent.txt 2>&1 &
cli=$!
sleep 4
a=$(pgrep -f "$PWD/dist/agent.js" | head -1); echo "agent pid $a stopped at ${SECONDS}s" >> $W/silent-agent.txt
[ -n "$a" ] && kill -STOP $a
wait $cli; echo "cli rc $? at ${SECONDS}s" >> $W/silent-agent.txt
sleep 2; echo "agent and rank processes left after: [$(agents)]" >> $W/silent-agent.txt
ls -la $W/silent >> $W/silent-agent.txt
pkill -KILL -f "$PWD/dist/agent.js" 2>/dev/null

# 3. The CLI goes silent (SIGSTOP) 4 s into a run: the agent must exit with its ranks.
SECONDS=0
COMMCOST_HEARTBEAT_MS=1000 COMMCOST_LIVENESS_DEADLINE_MS=6000 timeout 120 node bin/commcost.js measure --nccl "$wheel" --experiments init,destroy --iterations 40 --save-dir $W/silent > $W/silent-cli.txt 2>&1 &
sleep 4
# $! is the timeout wrapper: stop the CLI's own Node process.
cli=$(pgrep -f "^node bin/commcost.js measure" | head -1)
kill -STOP $cli; echo "cli $cli stopped at ${SECONDS}s; agents [$(agents)]" >> $W/silent-cli.txt
for i in $(seq 1 30); do sleep 1; [ -z "$(agents)" ] && break; done
echo "agents after ${SECONDS}s: [$(agents)]" >> $W/silent-cli.txt
kill -KILL $cli 2>/dev/null; pkill -KILL -f "$PWD/dist/agent.js" 2>/dev/null
[ "${SKIP_TO_FAULTS:-}" = 1 ] && exit 0

SECONDS=0
timeout 240 node dist/bench.js > $W/bench.txt 2>&1; echo "bench rc $? in ${SECONDS}s" | tee -a $W/bench.txt
grep -E "rc |wall |process starts|default ·" $W/measure.txt | cut -c1-220 | head -30
cat $W/silent-agent.txt | tail -12; cat $W/silent-cli.txt | tail -6
sed -n '/^Targets/,$p' $W/bench.txt | head -60
