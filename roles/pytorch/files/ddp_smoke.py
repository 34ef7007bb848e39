#!/usr/bin/env python3
"""clusterforge's acceptance training job: a small DDP model on synthetic data with a fixed seed.

One process per rank. The rank and world come from torchrun (RANK, WORLD_SIZE, LOCAL_RANK) or from
Slurm's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID); the rendezvous is env:// (MASTER_ADDR,
MASTER_PORT). Debian 13's torch has no libuv: set USE_LIBUV=0 there (this script does when the
variable is unset, for the env:// store it creates).

Every --checkpoint-every steps rank 0 writes the model and optimizer to --checkpoint-dir (a
temporary file renamed into place, so a rank killed mid-write leaves the previous checkpoint);
a start where rank 0 finds one resumes from it: rank 0 reads it and broadcasts it to the other
ranks, so the directory need only be on rank 0's node (a shared tier works the same). The data
of step s on rank r depends only on the seed, s and r, so a resumed run computes exactly what
the uninterrupted one did: the same final loss.
--kill-rank R --kill-at-step S makes rank R SIGKILL itself before step S of a run that did not
resume (the lost rank of the acceptance test); the other ranks then fail at the next collective,
within --timeout seconds, never hang. --stall-rank R makes rank R sleep instead of joining (a
hung node; the others give up after --timeout). Each rank prints its record (rank, host,
final_loss, steps, seconds, resumed_from, rc; error and phase when it failed; restart, torchrun's
restart count, under torchrun) as one line
"ddp_smoke: {json}" and writes it to --result-dir/rank-<rank>.json when given; training_judge
judges the records.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import socket
import sys
import time


def _env_rank() -> tuple[int, int, int]:
    if "RANK" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", "0"))
    if "SLURM_PROCID" in os.environ:
        rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
        os.environ["RANK"], os.environ["WORLD_SIZE"] = str(rank), str(world)
        return rank, world, int(os.environ.get("SLURM_LOCALID", "0"))
    sys.exit("ddp_smoke: no RANK/WORLD_SIZE (torchrun) or SLURM_PROCID/SLURM_NTASKS (srun) in the environment")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--checkpoint-every", type=int, default=5)
    parser.add_argument("--checkpoint-dir", required=True)
    parser.add_argument("--result-dir", default="")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a rendezvous or collective may take")
    parser.add_argument("--kill-rank", type=int, default=-1)
    parser.add_argument("--kill-at-step", type=int, default=-1)
    parser.add_argument("--bandwidth-mb", type=int, default=256, help="nccl: all-reduce size measured after training")
    parser.add_argument("--stall-rank", type=int, default=-1, help="this rank never joins (fault injection)")
    args = parser.parse_args(argv)

    os.environ.setdefault("USE_LIBUV", "0")
    # cuBLAS is deterministic only with a fixed workspace (torch.use_deterministic_algorithms).
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    rank, world, local_rank = _env_rank()
    started = time.monotonic()
    if rank == args.stall_rank:
        print(f"ddp_smoke: rank {rank} on {socket.gethostname()} stalls instead of joining", flush=True)
        time.sleep(10 * args.timeout + 3600)
    phase = "import"
    try:
        import torch.distributed as dist

        phase = "rendezvous"
        dist.init_process_group(args.backend, init_method="env://", timeout=datetime.timedelta(seconds=args.timeout))
        phase = "training"
        return _train(args, rank, world, local_rank, started)
    # Any failure becomes this rank's record (which phase, why), then a non-zero exit.
    except Exception as exc:
        _report(args, {"rank": rank, "host": socket.gethostname(), "rc": 1, "phase": phase, "error": str(exc)[:500]})
        return 1


def _report(args: argparse.Namespace, record: dict) -> None:
    # Under torchrun: which of its restarts of the ranks printed this (0: the first start).
    if "TORCHELASTIC_RESTART_COUNT" in os.environ:
        record["restart"] = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    print("ddp_smoke: " + json.dumps(record), flush=True)
    if args.result_dir:
        os.makedirs(args.result_dir, exist_ok=True)
        with open(os.path.join(args.result_dir, f"rank-{record['rank']}.json"), "w", encoding="utf-8") as out:
            json.dump(record, out)


def _allreduce_busbw(torch, dist, device, world: int, megabytes: int) -> float | None:
    """All-reduce bus bandwidth in GB/s over `megabytes` of float32, as nccl-tests counts it
    (algorithm bandwidth times 2(n-1)/n), so the judge holds it to the nccl-tests floor."""
    if megabytes <= 0 or world < 2:
        return None
    tensor = torch.ones(megabytes * 2**20 // 4, dtype=torch.float32, device=device)
    for _ in range(2):  # warm-up: NCCL's first collectives set up its channels
        dist.all_reduce(tensor)
    torch.cuda.synchronize(device)
    iterations = 5
    began = time.perf_counter()
    for _ in range(iterations):
        dist.all_reduce(tensor)
    torch.cuda.synchronize(device)
    seconds = (time.perf_counter() - began) / iterations
    return round(tensor.numel() * 4 / seconds / 1e9 * 2 * (world - 1) / world, 2)


def _train(args: argparse.Namespace, rank: int, world: int, local_rank: int, started: float) -> int:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    device = torch.device(f"cuda:{local_rank}" if args.backend == "nccl" else "cpu")
    if args.backend == "nccl":
        torch.cuda.set_device(device)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    checkpoint = os.path.join(args.checkpoint_dir, "checkpoint.pt")
    resumed_from = None
    first = 0
    # Rank 0 reads the checkpoint and sends it to every rank: only its node needs the directory.
    shared = [torch.load(checkpoint, map_location="cpu") if rank == 0 and os.path.exists(checkpoint) else None]
    dist.broadcast_object_list(shared, src=0)
    state = shared[0]
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        resumed_from = first = state["step"]
    ddp = DistributedDataParallel(model)
    target = torch.linspace(-1, 1, 16, device=device)
    loss_value = float("nan")
    for step in range(first, args.steps):
        if rank == args.kill_rank and step == args.kill_at_step and resumed_from is None:
            print(f"ddp_smoke: rank {rank} on {socket.gethostname()} kills itself before step {step}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        generator = torch.Generator().manual_seed(args.seed * 1_000_003 + step * world + rank)
        inputs = torch.randn(32, 16, generator=generator).to(device)
        labels = (inputs @ target).unsqueeze(1)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(inputs), labels)
        loss.backward()
        optimizer.step()
        # The mean over ranks: the same number on every rank, the number the judge compares.
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        loss_value = mean.item() / world
        done = step + 1
        if done % args.checkpoint_every == 0:
            if rank == 0:
                os.makedirs(args.checkpoint_dir, exist_ok=True)
                partial = f"{checkpoint}.tmp"
                torch.save({"step": done, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, partial)
                os.replace(partial, checkpoint)
            dist.barrier()
    busbw = _allreduce_busbw(torch, dist, device, world, args.bandwidth_mb) if args.backend == "nccl" else None
    record = {
        "rank": rank,
        "host": socket.gethostname(),
        "final_loss": loss_value,
        "steps": args.steps - first,
        "seconds": round(time.monotonic() - started, 3),
        "resumed_from": resumed_from,
        "rc": 0,
    }
    if busbw is not None:
        record["allreduce_busbw_gbps"] = busbw
    _report(args, record)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
