#!/usr/bin/python3
"""Loader benchmark against the anchor (a script, not a test).

Same machine, same run, same LFW-shaped files, same transforms
(RandomAffine(5, (0.1, 0.1), (0.5, 2.0)) + ToTensor, batch 512, no shuffle):
  * gradsync's loader (gradsync-data loader-bench) at 1 and 2 threads, on
    the image folder and on the same images as WebDataset shards
    (gradsync-data to-shards, 1000 a shard; made once into --out),
  * PyTorch's DataLoader (PIL decode, torchvision transforms) at 1 and 2
    worker processes, as the seeds' lfw_dataset.py does,
  * the bare OpenCV decode rate of the same files (cv::imdecode, one thread,
    bytes in memory): the issue's ceiling per thread; and, stricter, the
    bare rate of the decoder gradsync's loader runs (TurboJPEG for JPEGs),
    which can be well above cv::imdecode's.
Prints images/s for each and the ratios; writes a CSV and an error-bar plot.

Usage: bench/loader_vs_pytorch.py [--data data/lfw] [--bin build/bin]
       [--batches 26] [--repetitions 3] [--workers 1,2] [--out build/bench]
"""
import argparse
import csv
import os
import subprocess
import sys
import time

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms


class LFWDataset(Dataset):
    """The seeds' LFW dataset: every image under the folder, sorted."""

    def __init__(self, root, transform):
        self.paths = sorted(
            os.path.join(d, f) for d, _, files in os.walk(root) for f in files
            if f.lower().endswith((".jpg", ".jpeg", ".png")))
        self.transform = transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return self.transform(Image.open(self.paths[i]).convert("RGB")), 0


def time_pytorch(root, workers, batch_size, batches, repetitions):
    trans = transforms.Compose([
        transforms.RandomAffine(5, (0.1, 0.1), (0.5, 2.0)),
        transforms.ToTensor()])
    loader = DataLoader(LFWDataset(root, trans), batch_size=batch_size,
                        shuffle=False, num_workers=workers)
    runs, images = [], 0
    for _ in range(repetitions):
        start = time.time()
        images = 0
        for i, (x, _) in enumerate(loader):
            images += x.shape[0]
            if i + 1 >= batches:
                break
        runs.append(time.time() - start)
    return np.mean(runs), np.std(runs), images


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data/lfw")
    p.add_argument("--bin", default="build/bin")
    p.add_argument("--batches", type=int, default=26)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--repetitions", type=int, default=3)
    p.add_argument("--workers", default="1,2")
    p.add_argument("--out", default="build/bench")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tool = os.path.join(a.bin, "gradsync-data")
    torch.set_num_threads(1)
    if not os.path.isdir(a.data):
        subprocess.run([tool, "make-lfw", a.data], check=True)
    workers = [int(w) for w in a.workers.split(",")]

    print(f"== loader benchmark: {a.data}, batch {a.batch_size}, "
          f"{a.batches} batches x {a.repetitions} repetitions, "
          f"{os.cpu_count()} cores ==", flush=True)
    subprocess.run([tool, "loader-bench", "-path_to_folder", a.data,
                    "-batch_size", str(a.batch_size), "-batches_to_check",
                    str(a.batches), "--repetitions", str(a.repetitions),
                    "--sweep", a.workers, "--out-dir", a.out], check=True)
    ours = {}
    with open(os.path.join(a.out, "loader_timing.csv")) as f:
        for row in csv.DictReader(f):
            ours[int(row["workers"])] = row
    shards = os.path.join(a.out, "shards")
    if not os.path.isdir(shards):
        subprocess.run([tool, "to-shards", a.data, shards, "--shard-size",
                        "1000"], check=True, stdout=subprocess.DEVNULL)
    shard_out = os.path.join(a.out, "shard-timing")
    subprocess.run([tool, "loader-bench", "-path_to_folder", shards,
                    "-batch_size", str(a.batch_size), "-batches_to_check",
                    str(a.batches), "--repetitions", str(a.repetitions),
                    "--sweep", a.workers, "--out-dir", shard_out], check=True)
    sharded = {}
    with open(os.path.join(shard_out, "loader_timing.csv")) as f:
        for row in csv.DictReader(f):
            sharded[int(row["workers"])] = float(row["images_per_s"])
    def decode_rate(decoder):
        out = subprocess.run([tool, "decode-bench", a.data, "--images", "2000",
                              "--decoder", decoder], check=True,
                             capture_output=True, text=True).stdout
        print(out.strip(), flush=True)
        return float(out.split(":")[1].split()[0])
    ceiling = decode_rate("opencv")
    own_ceiling = decode_rate("gradsync")

    rows = []
    for w in workers:
        mean, std, images = time_pytorch(a.data, w, a.batch_size, a.batches,
                                         a.repetitions)
        theirs = images / mean
        g = float(ours[w]["images_per_s"])
        rows.append((w, g, float(ours[w]["mean_s"]), float(ours[w]["std_s"]),
                     theirs, mean, std, ceiling * w, own_ceiling * w))
        print(f"pytorch DataLoader workers {w}: Timing: {mean:.4f}+-{std:.4f} s "
              f"({theirs:.0f} images/s)", flush=True)

    print("\nworkers  gradsync img/s  pytorch img/s  ratio  "
          "opencv ceiling x w  gradsync/ceiling  "
          "own-decoder ceiling x w  gradsync/own  shards img/s  "
          "shards/folder")
    for w, g, _, _, t, _, _, c, oc in rows:
        print(f"{w:7d}  {g:14.0f}  {t:13.0f}  {g / t:5.2f}x  {c:18.0f}  "
              f"{g / c:16.2f}  {oc:23.0f}  {g / oc:12.2f}  "
              f"{sharded[w]:12.0f}  {sharded[w] / g:12.2f}x")
    with open(os.path.join(a.out, "loader_vs_pytorch.csv"), "w") as f:
        f.write("workers,gradsync_images_per_s,gradsync_mean_s,gradsync_std_s,"
                "pytorch_images_per_s,pytorch_mean_s,pytorch_std_s,"
                "decode_ceiling_images_per_s,own_decoder_ceiling_images_per_s\n")
        for r in rows:
            f.write(",".join(f"{v:.6g}" for v in r) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.errorbar([r[0] for r in rows], [r[2] for r in rows],
                    yerr=[r[3] for r in rows], marker="o", capsize=5,
                    label="gradsync loader (C++ threads, OpenCV)")
        ax.errorbar([r[0] for r in rows], [r[5] for r in rows],
                    yerr=[r[6] for r in rows], marker="s", capsize=5,
                    label="PyTorch DataLoader (processes, PIL)")
        ax.set_xlabel("workers")
        ax.set_ylabel(f"seconds for {a.batches} batches of {a.batch_size}")
        ax.set_xticks([r[0] for r in rows])
        ax.set_ylim(bottom=0)
        ax.set_title("LFW-shaped set, RandomAffine + ToTensor (mean +- std)")
        ax.legend()
        fig.tight_layout()
        path = os.path.join(a.out, "loader_vs_pytorch.png")
        fig.savefig(path, dpi=100)
        print(f"\nplot: {path}")
    except ImportError:
        print("matplotlib missing: no plot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
