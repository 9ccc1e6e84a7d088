"""The --device cuda half of bench/train_vs_ddp.py (a benchmark, not a
test): gradsync against PyTorch DDP (nccl) on the GPUs of this machine, in
the same run. The seeds' DDP model (ResNet-18, CIFAR stem), CIFAR-10-shaped
synthetic data (gradsync's synthetic:cifar10; on the DDP side a Dataset of
the same shape and per-sample cost: uint8 HWC pixels, ToTensor), batch 256
per GPU, SGD 0.1 momentum 0.9, one epoch (195 steps per GPU), 8 loader
workers per rank with pinned memory on both sides.

Prints images/s of each side over the steps after the warm-up (wall clock
between two synchronised points), the fraction of that time each rank 0
spent waiting for its data loader, and the ratio. Precision: both sides run
--precision (the issue's figure is bf16-mixed; the first line says which).

--profile: both sides record steps 31-40 with the same recorder (LibTorch's
profiler: gradsync-launch --profile-steps; torch.profiler for DDP), and
instead of a ratio this prints the GPU time per step of each side and the
kernels whose time differs most. The tables go to --results.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

WARMUP = 20
PROFILE_STEPS = (31, 40)  # 1-based, as gradsync-launch --profile-steps counts


def resnet18_cifar(classes=10):
    import torch.nn as nn
    import torchvision
    m = torchvision.models.resnet18(num_classes=classes)
    m.conv1 = nn.Conv2d(3, 64, 3, padding=1, bias=False)
    m.maxpool = nn.Identity()
    return m


class SyntheticCifar:
    """Per-sample work like gradsync's synthetic set: pixels made up from
    the index, then ToTensor. A module-level class, so DataLoader workers
    started by spawn can unpickle it."""

    def __init__(self, size):
        self.size = size
        self.tf = None

    def __len__(self):
        return self.size

    def __getitem__(self, i):
        import numpy as np
        if self.tf is None:
            from torchvision import transforms
            self.tf = transforms.ToTensor()
        rng = np.random.default_rng(i)
        label = int(rng.integers(10))
        base = (32 + 19 * label) % 224
        img = (base + rng.integers(-48, 48, (32, 32, 3))).clip(0, 255)
        return self.tf(img.astype(np.uint8)), label


def write_ops_table(result, device, path):
    """What gradsync's StepProfiler writes (worker/train/step_profiler.h),
    from the same recorder's events: one row per (device, name)."""
    totals = {}
    for e in result.events():
        device_type = str(e.device_type()).split(".")[-1].lower()
        us = (e.duration_ns() // 1000 if hasattr(e, "duration_ns")
              else e.duration_us())
        t = totals.setdefault((device_type, e.name()), [0, 0])
        t[0] += 1
        t[1] += us
    first, last = PROFILE_STEPS
    with open(path, "w") as f:
        f.write(f"# steps {first}-{last} ({last - first + 1} steps) on "
                f"{device}\n# PyTorch DDP\ndevice\tcalls\ttotal_us\tname\n")
        for (dev, name), (calls, us) in sorted(totals.items(),
                                               key=lambda kv: -kv[1][1]):
            f.write(f"{dev}\t{calls}\t{us}\t{name}\n")


def read_rows(path, device="cuda"):
    """name -> [calls, total_us] of a table's rows for `device`."""
    rows = {}
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t", 3)
            if line.startswith("#") or len(fields) != 4 or fields[0] != device:
                continue
            rows[fields[3]] = [int(fields[1]), int(fields[2])]
    return rows


def compare_profiles(ours_path, ddp_path, device="cuda", top=15):
    steps = PROFILE_STEPS[1] - PROFILE_STEPS[0] + 1
    ours, ddp = read_rows(ours_path, device), read_rows(ddp_path, device)
    for name, rows in (("gradsync", ours), ("PyTorch DDP", ddp)):
        print(f"{name}: {device} busy "
              f"{sum(r[1] for r in rows.values()) / steps / 1e3:.2f} ms per "
              f"step (kernels and copies, all streams), "
              f"{sum(r[0] for r in rows.values()) / steps:.0f} of them per "
              f"step")
    print(f"per step: gradsync us, DDP us, difference, calls (gradsync/DDP), "
          f"name; the {top} largest differences")
    diff = []
    for name in set(ours) | set(ddp):
        o, d = ours.get(name, [0, 0]), ddp.get(name, [0, 0])
        diff.append((o[1] - d[1], o, d, name))
    for delta, o, d, name in sorted(diff, key=lambda x: -abs(x[0]))[:top]:
        print(f"{o[1] / steps:9.1f} {d[1] / steps:9.1f} {delta / steps:+9.1f} "
              f"{o[0] / steps:5.1f}/{d[0] / steps:<5.1f} {name[:110]}")


def ddp_rank(rank, world, init, a, out):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=init, rank=rank,
                            world_size=world)
    torch.manual_seed(0)
    model = DDP(resnet18_cifar().cuda(), device_ids=[rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = SyntheticCifar(50000)
    loader = DataLoader(data, batch_size=a.batch_size,
                        sampler=DistributedSampler(data, world, rank, seed=0),
                        num_workers=a.loader_workers, pin_memory=True,
                        persistent_workers=True)
    bf16 = a.precision == "bf16-mixed"
    it = iter(loader)
    waited, steps, t0, prof = 0.0, 0, None, None
    while True:
        if a.profile and rank == 0 and steps + 1 == PROFILE_STEPS[0]:
            prof = torch.profiler.profile(activities=[
                torch.profiler.ProfilerActivity.CPU,
                torch.profiler.ProfilerActivity.CUDA])
            prof.start()
        w = time.perf_counter()
        try:
            x, y = next(it)
        except StopIteration:
            break
        if steps >= WARMUP:
            waited += time.perf_counter() - w
        x = x.cuda(non_blocking=True)
        y = y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        steps += 1
        if prof is not None and steps == PROFILE_STEPS[1]:
            torch.cuda.synchronize()
            prof.stop()
            write_ops_table(prof.profiler.kineto_results, f"cuda:{rank}",
                            out + ".ops.tsv")
            prof = None
        if steps == WARMUP:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"images_per_s": (steps - WARMUP) * a.batch_size * world
                       / seconds, "data_wait": waited / seconds,
                       "steps": steps}, f)
    dist.destroy_process_group()


def run_ddp(a, world):
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ddp.json")
        init = "file://" + os.path.join(tmp, "rendezvous")
        mp.spawn(ddp_rank, args=(world, init, a, out), nprocs=world)
        if a.profile:
            shutil.copy(out + ".ops.tsv",
                        os.path.join(a.results, "ddp_rank0.ops.tsv"))
        with open(out) as f:
            return json.load(f)


def run_gradsync(a, world):
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "steps.jsonl")
        cmd = [os.path.join(a.bin, "gradsync-launch"), "--nproc-per-node",
               str(world), "--backend", "nccl", "--dataset",
               "synthetic:cifar10", "--model", "resnet18", "--batch-size",
               str(a.batch_size), "--optimizer", "sgd", "--lr", "0.1",
               "--momentum", "0.9", "--loader-threads",
               str(a.loader_workers), "--log-every", "50", "--metrics-out",
               metrics]
        if a.precision != "32":
            cmd += ["--precision", a.precision]
        if a.profile:
            cmd += ["--profile-steps", "%d:%d" % PROFILE_STEPS,
                    "--profile-dir", a.results]
        subprocess.run(cmd, check=True)
        with open(metrics) as f:
            steps = [json.loads(line) for line in f]
    timed = steps[WARMUP:]
    seconds = (timed[-1]["time_unix_ms"] - steps[WARMUP - 1]["time_unix_ms"]) / 1e3
    return {"images_per_s": len(timed) * a.batch_size * world / seconds,
            "data_wait": sum(s["data_wait_ms"] for s in timed) / 1e3 / seconds,
            "steps": len(steps)}


def main(a):
    import torch
    world = a.gpus or torch.cuda.device_count()
    if world < 1:
        print("train_vs_ddp --device cuda: no GPU (torch.cuda.device_count() "
              "is 0)", file=sys.stderr)
        return 1
    if a.profile and not a.results:
        print("train_vs_ddp --profile: give --results DIR for the tables",
              file=sys.stderr)
        return 2
    if a.profile:
        os.makedirs(a.results, exist_ok=True)
    name = torch.cuda.get_device_name(0)
    print(f"{world} x {name}, ResNet-18 on synthetic CIFAR-10 shapes, batch "
          f"{a.batch_size} per GPU, precision {a.precision}", flush=True)
    ours = run_gradsync(a, world)
    print(f"gradsync:    {ours['images_per_s']:.0f} images/s, data wait "
          f"{100 * ours['data_wait']:.1f}% of step time", flush=True)
    ddp = run_ddp(a, world)
    print(f"PyTorch DDP: {ddp['images_per_s']:.0f} images/s, data wait "
          f"{100 * ddp['data_wait']:.1f}% of step time", flush=True)
    if a.profile:
        print(f"profiled steps {PROFILE_STEPS[0]}-{PROFILE_STEPS[1]} "
              f"(the figures above include the profiler: not a comparison)")
        compare_profiles(os.path.join(a.results, "rank0.ops.tsv"),
                         os.path.join(a.results, "ddp_rank0.ops.tsv"))
        return 0
    ratio = ours["images_per_s"] / ddp["images_per_s"]
    print(f"ratio gradsync / DDP: {ratio:.2f}x (goal >= 1.0; data wait goal "
          f"< 5%)")
    if a.results:
        with open(os.path.join(a.results,
                               f"train_vs_ddp_cuda_{a.precision}.json"), "w") as f:
            json.dump({"gpu": name, "gpus": world, "gradsync": ours,
                       "ddp": ddp, "ratio": ratio,
                       "precision": a.precision,
                       "batch_size": a.batch_size}, f, indent=1)
    return 0
