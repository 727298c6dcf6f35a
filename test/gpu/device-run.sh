#!/usr/bin/env bash
# One batched session on a GPU host that has no Node (the project's device machine): unpack the
# carried Node, print the machine, then run the phases asked for and pack every file under
# $OUT/device.tgz (the device tool brings back at most 8 files). Expects dist/ (with
# dist/bench.js for the bench phase) and .gpu/node.xz carried. Exits 1 when a phase failed.
#   PHASES      comma-separated, of: proof (gpu-proof.sh, every library), c10d (host torch),
#               cases (split-share, connect-mode, shrink-abort, split-subset, init-abort, revoke,
#               grow, suspend on every library), bench; default proof,c10d,cases
#   ITERATIONS  recorded iterations of proof (10) and of c10d/cases (5)
#   RANKS       ranks (default: every visible GPU)
#   ROUNDS      proof: turns each tool takes, ITERATIONS split between them (1; see gpu-proof.sh)
#   PROOF_LIMIT seconds the proof phase may take (400)
#   NCCL_LIBS   libraries as label:path … (default: the torch wheel's and the system's)
# Each phase has its own time limit, so one that hangs cannot take the others' time.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-test-output/device}
work=/tmp/commcost-device
rm -rf "$work"   # a warm machine keeps /tmp: never pack an earlier call's files
mkdir -p "$out" "$work" /tmp/nodebin
[ -x /tmp/nodebin/node ] || { xz -dc .gpu/node.xz > /tmp/nodebin/node && chmod +x /tmp/nodebin/node; }
export PATH=/tmp/nodebin:$PATH NCCL_NVLS_ENABLE=0
phases=",${PHASES:-proof,c10d,cases},"
ranks=(); [ -n "${RANKS:-}" ] && ranks=(--ranks "$RANKS")
wheel=$(python3 -c 'import importlib.util,os;s=importlib.util.find_spec("nvidia.nccl");print(os.path.join(list(s.submodule_search_locations)[0],"lib","libnccl.so.2") if s else "")' 2>/dev/null)
libs=(); [ -n "$wheel" ] && [ -f "$wheel" ] && libs+=("wheel:$wheel")
[ -f /lib/x86_64-linux-gnu/libnccl.so.2 ] && libs+=("system:/lib/x86_64-linux-gnu/libnccl.so.2")
[ -n "${NCCL_LIBS:-}" ] && read -r -a libs <<< "$NCCL_LIBS"   # label:path … (as gpu-proof.sh)
status=0
note() { echo "$1" | tee -a "$out/machine.txt"; }
{
  echo "node $(node -v)"
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  nvidia-smi topo -m
  python3 -c 'import torch;print("torch",torch.__version__,"nccl",torch.cuda.nccl.version())'
  printf 'library %s\n' "${libs[@]}"
} 2>&1 | tee "$out/machine.txt"
if [[ $phases == *,proof,* ]]; then
  ITERATIONS=${ITERATIONS:-10} timeout "${PROOF_LIMIT:-400}" test/gpu/gpu-proof.sh "$work/proof" > "$work/proof.txt" 2>&1
  rc=$?; echo "proof exit $rc" | tee -a "$work/proof.txt"; [ $rc -eq 0 ] || status=1
  grep -v '^  •' "$work/proof.txt" | grep -A40 '^NCCL ' | tee "$out/proof-compare.txt"
fi
if [[ $phases == *,c10d,* ]]; then
  timeout 240 node bin/commcost.js measure --experiments c10d "${ranks[@]}" --iterations "${ITERATIONS:-5}" --deadline 40 \
    --json "$work/c10d.json" --html "$work/c10d.html" --save-dir "$work/runs" > "$work/c10d.txt" 2> "$work/c10d.log"
  rc=$?; echo "c10d exit $rc" | tee -a "$work/c10d.txt"; [ $rc -eq 0 ] || status=1
fi
if [[ $phases == *,cases,* ]]; then
  [ ${#libs[@]} -gt 0 ] || { note "cases: no NCCL library found (no torch wheel, no /lib/x86_64-linux-gnu/libnccl.so.2); set NCCL_LIBS"; status=1; }
  for entry in "${libs[@]}"; do
    label=${entry%%:*}; lib=${entry#*:}
    timeout 300 node bin/commcost.js measure --nccl "$lib" "${ranks[@]}" --experiments split-share,connect-mode,shrink-abort,split-subset,init-abort,revoke,grow,suspend \
      --iterations "${ITERATIONS:-5}" --deadline 6 --json "$work/cases-$label.json" --html "$work/cases-$label.html" --save-dir "$work/runs" > "$work/cases-$label.txt" 2>&1
    rc=$?; echo "cases $label exit $rc" | tee -a "$work/cases-$label.txt"
    # The field cases end with hang-guard stops on purpose (C4, C5, C6): the run is partial, exit 1.
    [ $rc -le 1 ] || status=1
  done
fi
if [[ $phases == *,bench,* ]]; then
  node dist/bench.js > "$work/bench.txt" 2>&1
  tail -40 "$work/bench.txt"
fi
tar czf "$out/device.tgz" -C "$work" . || status=1
exit $status
