#!/usr/bin/env bash
# One batched session on a GPU host that has no Node (the project's device machine): unpack the
# carried Node, print the machine, run the GPU proof for every NCCL library and the benchmarks,
# and pack everything under $OUT. Expects dist/ (with dist/bench.js) and .gpu/node.xz carried.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-test-output/device}
mkdir -p "$out" /tmp/nodebin
xz -dc .gpu/node.xz > /tmp/nodebin/node && chmod +x /tmp/nodebin/node
export PATH=/tmp/nodebin:$PATH NCCL_NVLS_ENABLE=0
{
  echo "node $(node -v)"
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  nvidia-smi topo -m
  python3 -c 'import torch,nvidia.nccl,os;print("torch",torch.__version__,"nccl wheel",os.path.dirname(nvidia.nccl.__file__))'
} 2>&1 | tee "$out/machine.txt"
test/gpu/gpu-proof.sh test-output/gpu 2>&1 | tee "$out/proof.txt"
node dist/bench.js 2>&1 | tee "$out/bench.txt"
tar czf "$out/gpu.tgz" test-output/gpu
