"""A torch job to trace with `commcost trace`: tensor parallelism reshaped TP 2 -> 1 -> 2.

  world communicator   init_process_group(device_id=...)  (eager: created in the call)
  TP 2                 new_group(ranks 0..1)              (on an eager default group: created in
                                                          the call, connected at its first collective)
  TP 1                 split_group (every rank alone)     (a split of the world communicator)
  TP 2 again           new_group(ranks 0..1)              (the same again)
  teardown             destroy_process_group(group), then destroy_process_group()

Traced on 2x H200 (docs/results/h200x2-2026-12-01/): each new_group paid ~35 ms in the call and
~144 ms in its first collective. World size from the launcher (torchrun: RANK, WORLD_SIZE, LOCAL_RANK); with one rank the TP 2
groups have one rank (one GPU cannot host two NCCL ranks).

  torchrun --nproc-per-node=1 examples/trace/torch_tp_reshape.py      # under trace:
  commcost trace -- torchrun --nproc-per-node=1 examples/trace/torch_tp_reshape.py
"""
import os

import torch
import torch.distributed as dist


def main():
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", str(rank)))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    x = torch.ones(1 << 18, device=device)

    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    dist.all_reduce(x)

    tp = min(2, world)
    tp2 = dist.new_group(list(range(tp)))
    if rank < tp:
        dist.all_reduce(x, group=tp2)

    if hasattr(dist, "split_group"):
        tp1 = dist.split_group(split_ranks=[[r] for r in range(world)])
    else:  # torch < 2.6: no split_group
        tp1 = dist.new_group([rank]) if world == 1 else None
    if tp1 is not None:
        dist.all_reduce(x, group=tp1)
        dist.destroy_process_group(tp1)

    back = dist.new_group(list(range(tp)))
    if rank < tp:
        dist.all_reduce(x, group=back)
    torch.cuda.synchronize()
    dist.destroy_process_group()
    print("torch_tp_reshape: rank %d of %d done" % (rank, world))


if __name__ == "__main__":
    main()
