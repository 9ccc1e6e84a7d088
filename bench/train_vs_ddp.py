#!/usr/bin/python3
"""Training benchmark against the anchor (a script, not a test): same
machine, same run, real Fashion-MNIST, FashionCNN (the seeds' model), Adam
1e-3, batch 100 per rank, no augmentation, 1 compute thread per rank, 2 ranks:
  * PyTorch DDP (python3-torch, gloo, DistributedSampler) fed two ways:
    "folders": torchvision ImageFolder + ToTensor over the PNG folders,
    2 DataLoader workers per rank;
    "memory": torchvision's FashionMNIST (the seeds' fashion_trainer.py),
    whose images sit in memory as one uint8 tensor, DataLoader in the rank
    process (num_workers=0). Its idx files are written once from the same
    PNG folders before anything is timed;
  * gradsync: a coordinator and two gradsync-worker processes.
Both sides use the same libblas.so.3 (python3-torch and Debian's LibTorch
call it; the script prints which library that is) with one thread per rank:
DDP ranks get OMP_NUM_THREADS=1 as torchrun gives every rank by default
(OpenBLAS reads it too), gradsync's workers set the same in-process.
Both are timed over training plus an exact test evaluation after every
epoch (gradsync: its RUNNING -> SUCCEEDED transitions; DDP: the same loop in
the rank processes). Prints samples/s of each, the ratio, and the test
accuracy of both after the same number of epochs. --scaling also runs gradsync on 1 worker.

--model-file also trains the same FashionCNN module scripted with
torch.jit.script through `gradsync submit --model-file` (issue 40's speed
goal: at least DDP's speed on the same module run eagerly).

Usage: bench/train_vs_ddp.py [--bin build/bin] [--data data/fashion-mnist]
       [--epochs 1] [--seeds 0,1,2] [--baselines memory,folders] [--scaling]
       [--model-file]
       bench/train_vs_ddp.py --device cuda [--bin build-gpu/cmake/bin]
       [--results DIR] [--profile]   (GPUs, nccl: bench/train_vs_ddp_cuda.py)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def write_idx(data, root):
    """Writes torchvision's FashionMNIST raw files (idx format, big endian)
    from the PNG folders, so that datasets.FashionMNIST loads the same
    images. Labels follow ImageFolder's sorted class folders."""
    import struct
    import numpy as np
    from PIL import Image
    from torchvision import datasets
    raw = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for split, prefix in (("train", "train"), ("test", "t10k")):
        folder = datasets.ImageFolder(os.path.join(data, split))
        images = np.stack([np.asarray(Image.open(path).convert("L"))
                           for path, _ in folder.samples])
        labels = np.array([label for _, label in folder.samples], np.uint8)
        n, rows, cols = images.shape
        with open(os.path.join(raw, f"{prefix}-images-idx3-ubyte"), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, rows, cols))
            f.write(images.astype(np.uint8).tobytes())
        with open(os.path.join(raw, f"{prefix}-labels-idx1-ubyte"), "wb") as f:
            f.write(struct.pack(">II", 0x801, n))
            f.write(labels.tobytes())


def fashion_cnn():
    """The seeds' FashionCNN, as PyTorch users write it (DDP trains it
    eagerly; --model-file scripts this same module for gradsync)."""
    import torch.nn as nn

    class FashionCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1),
                                        nn.BatchNorm2d(32), nn.ReLU(),
                                        nn.MaxPool2d(2, 2))
            self.layer2 = nn.Sequential(nn.Conv2d(32, 64, 3), nn.BatchNorm2d(64),
                                        nn.ReLU(), nn.MaxPool2d(2))
            self.fc1 = nn.Linear(64 * 6 * 6, 600)
            self.drop = nn.Dropout2d(0.25)
            self.fc2 = nn.Linear(600, 120)
            self.fc3 = nn.Linear(120, 10)

        def forward(self, x):
            out = self.layer2(self.layer1(x)).view(x.size(0), -1)
            return self.fc3(self.fc2(self.drop(self.fc1(out))))

    return FashionCNN()


def ddp_rank(rank, world, init, data, epochs, out, seed, feed):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler
    from torchvision import datasets, transforms
    torch.set_num_threads(1)
    import datetime
    dist.init_process_group("gloo", init_method=init, rank=rank,
                            world_size=world,
                            timeout=datetime.timedelta(minutes=5))
    torch.manual_seed(seed)

    if feed == "memory":
        # data is the root holding FashionMNIST/raw (write_idx).
        tf = transforms.ToTensor()
        train = datasets.FashionMNIST(data, train=True, transform=tf)
        test = datasets.FashionMNIST(data, train=False, transform=tf)
        loader_workers = 0
    else:
        tf = transforms.Compose([transforms.Grayscale(), transforms.ToTensor()])
        train = datasets.ImageFolder(os.path.join(data, "train"), tf)
        test = datasets.ImageFolder(os.path.join(data, "test"), tf)
        loader_workers = 2
    sampler = DistributedSampler(train, num_replicas=world, rank=rank,
                                 seed=seed)
    loader = DataLoader(train, batch_size=100, sampler=sampler,
                        num_workers=loader_workers)
    model = nn.parallel.DistributedDataParallel(fashion_cnn())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    # Exact evaluation after every epoch, as gradsync does: rank r takes
    # test[r::world], no padding.
    idx = list(range(rank, len(test), world))
    tl = DataLoader(torch.utils.data.Subset(test, idx), batch_size=500)

    def evaluate():
        model.eval()
        correct = torch.zeros(2)
        with torch.no_grad():
            for x, y in tl:
                correct[0] += (model(x).argmax(1) == y).sum()
                correct[1] += y.numel()
        dist.all_reduce(correct)
        return (correct[0] / correct[1]).item()

    # Timed like gradsync's RUNNING -> SUCCEEDED: training plus the
    # per-epoch evaluations.
    samples, start = 0, time.perf_counter()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        model.train()
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            samples += x.size(0)
        accuracy = evaluate()
    elapsed = time.perf_counter() - start
    rate = torch.tensor([samples / elapsed])
    dist.all_reduce(rate)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"samples_per_s": rate.item(),
                       "accuracy": accuracy,
                       "seconds": elapsed}, f)
    # No destroy_process_group(): once, with the FileStore, rank 0 hung in
    # it for minutes after rank 1 had exited; exiting ends the group.


# glibc malloc settings equal to gradsync's KeepFreedHostMemory
# (worker/train/host_allocator.h), for the "memory-malloc" baseline.
KEEP_FREED = ("glibc.malloc.mmap_threshold=33554432:"
              "glibc.malloc.trim_threshold=1073741824")


def run_ddp(data, epochs, seed, feed):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if feed == "memory-malloc":
        env["GLIBC_TUNABLES"] = KEEP_FREED
        feed = "memory"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ddp.json")
        procs = [subprocess.Popen(
            [sys.executable, __file__, "--ddp-rank", str(r), "--init",
             f"file://{tmp}/store", "--out", out, "--data", data, "--epochs",
             str(epochs), "--seed", str(seed), "--feed", feed], env=env)
            for r in range(2)]
        for p in procs:
            if p.wait(timeout=1800) != 0:
                raise RuntimeError(f"DDP rank exited with {p.returncode}")
        with open(out) as f:
            return json.load(f)


def run_gradsync(bin_dir, data, epochs, workers, seed, model_file=None):
    with tempfile.TemporaryDirectory() as tmp:
        coord = subprocess.Popen(
            [f"{bin_dir}/gradsync-coordinator", "--listen", "127.0.0.1:0"],
            stderr=subprocess.PIPE, text=True)
        for line in coord.stderr:
            m = re.search(r"listening on port (\d+)", line)
            if m:
                address = f"127.0.0.1:{m.group(1)}"
                break
        procs = [subprocess.Popen(
            [f"{bin_dir}/gradsync-worker", "-c", address, "--log-every", "0"],
            stderr=subprocess.DEVNULL) for _ in range(workers)]
        try:
            job = json.loads(subprocess.run(
                [f"{bin_dir}/gradsync", "-c", address, "--json", "submit",
                 "--dataset", data, "--eval-split", "test"] +
                (["--model-file", model_file] if model_file else
                 ["--model", "fashion_cnn"]) +
                ["--epochs", str(epochs), "--batch-size", "100",
                 "--optimizer", "adam", "--lr", "0.001", "--loader-threads", "2",
                 "--seed", str(seed), "-n", str(workers)], check=True, capture_output=True,
                text=True).stdout)
            subprocess.run([f"{bin_dir}/gradsync", "-c", address, "watch",
                            job["id"]], check=True, capture_output=True)
            done = json.loads(subprocess.run(
                [f"{bin_dir}/gradsync", "-c", address, "--json", "status",
                 job["id"]], check=True, capture_output=True, text=True).stdout)
        finally:
            for p in procs + [coord]:
                p.terminate()
                p.wait()
        # RUNNING -> SUCCEEDED on the coordinator's clock: model set-up,
        # training and the per-epoch evaluations.
        at = {t["to"]: int(t["time_unix_ms"]) for t in done["transitions"]}
        wall = (at["JOB_STATE_SUCCEEDED"] - at["JOB_STATE_RUNNING"]) / 1000
        ranks = done["metrics"]["ranks"]
        # Samples/s over the whole run from the workers' step counts.
        steps = sum(int(r["steps_reported"]) for r in ranks)
        return {"samples_per_s": steps * 100 / wall,
                "last_samples_per_s": done["metrics"]["samples_per_sec"],
                "accuracy": done["metrics"]["eval"][-1]["accuracy"],
                "seconds": wall}


def blas_library():
    """The file libblas.so.3 resolves to: the BLAS both sides multiply with."""
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"):
        path = os.path.join(d, "libblas.so.3")
        if os.path.exists(path):
            return os.path.realpath(path)
    return "unknown"


def report(name, r):
    print(f"  {name}: {r['samples_per_s']:.0f} samples/s, {r['seconds']:.1f} s, "
          f"accuracy {100 * r['accuracy']:.2f}%", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default="build/bin")
    p.add_argument("--data", default="data/fashion-mnist")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seeds", default="0,1,2",
                   help="comma-separated seeds; one run of each side per seed")
    p.add_argument("--baselines", default="memory,folders",
                   help="DDP baselines, comma-separated: memory, folders, "
                        "memory-malloc (memory with glibc malloc set as "
                        "gradsync sets it)")
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--scaling", action="store_true")
    p.add_argument("--model-file", action="store_true",
                   help="also train the same FashionCNN, scripted with "
                        "torch.jit.script, through gradsync --model-file")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--gpus", type=int, default=0, help="cuda: 0 = all")
    p.add_argument("--batch-size", type=int, default=256, help="cuda")
    p.add_argument("--loader-workers", type=int, default=8, help="cuda")
    p.add_argument("--precision", default="32",
                   choices=["32", "bf16-mixed"], help="cuda")
    p.add_argument("--results", help="cuda: write the figures here (JSON)")
    p.add_argument("--profile", action="store_true",
                   help="cuda: instead of timing, profile steps 31-40 of "
                        "both sides and compare the GPU's work per step "
                        "(tables in --results)")
    p.add_argument("--ddp-rank", type=int, help=argparse.SUPPRESS)
    p.add_argument("--feed", help=argparse.SUPPRESS)
    p.add_argument("--init", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.device == "cuda":
        import train_vs_ddp_cuda
        return train_vs_ddp_cuda.main(a)
    if a.ddp_rank is not None:
        ddp_rank(a.ddp_rank, 2, a.init, a.data, a.epochs, a.out, a.seed,
                 a.feed)
        return 0
    data = os.path.abspath(a.data)
    subprocess.run([f"{a.bin}/gradsync", "data", "fetch", "fashion-mnist", data],
                   check=True, capture_output=True)
    baselines = [b for b in a.baselines.split(",") if b]
    print(f"libblas.so.3 -> {blas_library()}", flush=True)
    mean = lambda xs: sum(xs) / len(xs)
    with tempfile.TemporaryDirectory() as idx_root:
        if any(b.startswith("memory") for b in baselines):
            write_idx(data, idx_root)
        rows = []
        for seed in [int(v) for v in a.seeds.split(",")]:
            print(f"seed {seed}:", flush=True)
            row = {"gradsync": run_gradsync(a.bin, data, a.epochs, 2, seed)}
            report("gradsync, 2 workers", row["gradsync"])
            if a.model_file:
                scripted = os.path.join(idx_root, f"fashion_cnn-{seed}.pt")
                import torch
                torch.manual_seed(seed)
                torch.jit.save(torch.jit.script(fashion_cnn()), scripted)
                row["scripted"] = run_gradsync(a.bin, data, a.epochs, 2, seed,
                                               scripted)
                report("gradsync --model-file (scripted FashionCNN), 2 "
                       "workers", row["scripted"])
            for feed in baselines:
                root = idx_root if feed.startswith("memory") else data
                row[feed] = run_ddp(root, a.epochs, seed, feed)
                report(f"PyTorch DDP, 2 ranks, {feed}", row[feed])
            rows.append(row)
    ours = mean([r["gradsync"]["samples_per_s"] for r in rows])
    acc_ours = mean([r["gradsync"]["accuracy"] for r in rows])
    print(f"mean of {len(rows)} seed(s), {a.epochs} epoch(s): gradsync "
          f"{ours:.0f} samples/s, accuracy {100 * acc_ours:.2f}%")
    goals = {"memory": 1.25, "folders": 1.5, "memory-malloc": 1.25}
    for feed in baselines:
        theirs = mean([r[feed]["samples_per_s"] for r in rows])
        acc = mean([r[feed]["accuracy"] for r in rows])
        print(f"  vs DDP {feed}: {theirs:.0f} samples/s, ratio "
              f"{ours / theirs:.2f}x (goal >= {goals[feed]}); accuracy "
              f"{100 * acc:.2f}%, difference {100 * (acc_ours - acc):+.2f} "
              f"points (goal within 0.5)")
    if a.model_file:
        scripted = mean([r["scripted"]["samples_per_s"] for r in rows])
        acc = mean([r["scripted"]["accuracy"] for r in rows])
        print(f"gradsync --model-file: {scripted:.0f} samples/s, accuracy "
              f"{100 * acc:.2f}%; {scripted / ours:.2f}x the built-in "
              f"fashion_cnn")
        for feed in baselines:
            theirs = mean([r[feed]["samples_per_s"] for r in rows])
            print(f"  vs DDP {feed} (the same module, eager): "
                  f"{scripted / theirs:.2f}x (goal >= 1.0)")
    if a.scaling:
        one = run_gradsync(a.bin, data, a.epochs, 1, 0)
        print(f"gradsync 1 worker: {one['samples_per_s']:.0f} samples/s; "
              f"2 workers (first seed) / 1 worker = "
              f"{rows[0]['gradsync']['samples_per_s'] / one['samples_per_s']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
