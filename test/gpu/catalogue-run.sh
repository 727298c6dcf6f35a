#!/usr/bin/env bash
# The rest of the catalogue on a GPU host, one NCCL library after the other, with a time budget:
# each run saved as JSON + HTML under $OUT (or test-output/catalogue). Expects dist/ and .gpu/node.xz.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-test-output/catalogue}; mkdir -p "$out" /tmp/nodebin
[ -x /tmp/nodebin/node ] || { xz -dc .gpu/node.xz > /tmp/nodebin/node && chmod +x /tmp/nodebin/node; }
export PATH=/tmp/nodebin:$PATH NCCL_NVLS_ENABLE=0
experiments=${EXPERIMENTS:-shrink,grow,revoke,registration,drain,pool,connect-mode,suspend,split-subset,init-abort}
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2"))')
start=$SECONDS
for entry in "wheel:$wheel:${ITER_WHEEL:-5}" "system:/lib/x86_64-linux-gnu/libnccl.so.2:${ITER_SYSTEM:-3}"; do
  IFS=: read -r label lib iters <<< "$entry"
  if [ $((SECONDS - start)) -gt "${BUDGET_S:-150}" ]; then echo "skipping $label: time budget spent"; continue; fi
  echo "=== $label $lib ($iters iterations)"
  node bin/commcost.js measure --nccl "$lib" --experiments "$experiments" --iterations "$iters" --deadline "${DEADLINE:-10}" \
    --json "$out/catalogue-$label.json" --html "$out/catalogue-$label.html" --save-dir /tmp/runs 2> "$out/catalogue-$label.log"
  echo "exit $?"
done
