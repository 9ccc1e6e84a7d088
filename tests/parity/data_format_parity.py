#!/usr/bin/python3
"""Shards and tensor files train as the image folder they were made from
(issue 41):

  * the folder written as WebDataset shards by `gradsync data to-shards`,
    the same job: per-step losses bitwise equal, the same test accuracy;
  * the same images as a folder of PNGs and as a tensor file
    {"x": uint8 [N, 1, 28, 28], "y": int64 [N]} (decoded by PIL, in
    torchvision ImageFolder's order), the same job (fashion_cnn, seed,
    batch, 2 ranks over gloo): per-step losses within 1e-5 relative and the
    same test accuracy (bytes become the same floats either way, so the
    losses are expected bitwise equal);
  * float targets: {"x": float32 [N, 784], "y": float32 [N, 10]} (one-hot
    rows) with --loss mse trains (the loss falls);
  * a tensor file whose pickle names a foreign global (a
    collections.Counter beside the tensors) is refused by gradsync-launch,
    naming the file and the global, before any step.

Usage: data_format_parity.py PATH/TO/gradsync-launch [--fashion-mnist DIR]
(gradsync-data is taken from the same directory)
(DIR: an image folder with train/ and test/, e.g. data/fashion_mnist; the
default is a small generated one)."""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(__file__))
from script_model_parity import make_folder  # noqa: E402

BATCH = 20


def folder_to_tensors(folder, out_dir, split, limit=None):
    """torchvision ImageFolder's order: sorted classes, sorted files."""
    classes = sorted(d for d in os.listdir(os.path.join(folder, split)))
    xs, ys = [], []
    for label, name in enumerate(classes):
        d = os.path.join(folder, split, name)
        for f in sorted(os.listdir(d)):
            with Image.open(os.path.join(d, f)) as im:
                xs.append(np.asarray(im.convert("L"), dtype=np.uint8))
            ys.append(label)
    x = torch.from_numpy(np.stack(xs)).unsqueeze(1)
    y = torch.tensor(ys, dtype=torch.int64)
    torch.save({"x": x, "y": y}, os.path.join(out_dir, f"{split}.pt"))
    return x, y


def run(launch, work, data, tag, *extra, model="fashion_cnn", check=True):
    metrics = os.path.join(work, f"{tag}.jsonl")
    cmd = [launch, "--nproc-per-node", "2", "--backend", "gloo",
           "--dataset", data, "--eval-split", "test", "--model",
           model, "--epochs", "1", "--batch-size", str(BATCH),
           "--seed", "3", "--loader-threads", "1", "--metrics-out", metrics,
           "--timeout", "120", *extra]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          timeout=1800)
    if not check:
        return done
    if done.returncode != 0:
        sys.exit(f"FAIL: gradsync-launch ({tag}) exited {done.returncode}:\n"
                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    found = re.search(r"test accuracy ([0-9.]+)%", done.stdout)
    with open(metrics) as f:
        losses = [json.loads(line)["loss"] for line in f if line.strip()]
    return losses, float(found.group(1)) if found else None


def main():
    launch = sys.argv[1]
    fashion = None
    if "--fashion-mnist" in sys.argv:
        fashion = sys.argv[sys.argv.index("--fashion-mnist") + 1]
    work = tempfile.mkdtemp(prefix="tensor_file_parity_")
    folder = fashion or os.path.join(work, "folder")
    if not fashion:
        make_folder(folder, per_class_train=40, per_class_test=10)
    tensors = os.path.join(work, "tensors")
    os.makedirs(tensors)
    for split in ("train", "test"):
        folder_to_tensors(folder, tensors, split)
    good = True

    base, base_acc = run(launch, work, folder, "folder")

    shards = os.path.join(work, "shards")
    data_tool = os.path.join(os.path.dirname(launch), "gradsync-data")
    for split in ("train", "test"):
        subprocess.run([data_tool, "to-shards", os.path.join(folder, split),
                        os.path.join(shards, split), "--shard-size", "1000"],
                       check=True, capture_output=True)
    sharded, sharded_acc = run(launch, work, shards, "shards")
    ok = sharded == base and sharded_acc == base_acc
    good &= ok
    print(f"{'PASS' if ok else 'FAIL'}: folder vs shards (to-shards, 1000 "
          f"a shard), {len(base)} steps: per-step losses "
          f"{'bitwise equal' if sharded == base else 'differ'}; test "
          f"accuracy {base_acc}% vs {sharded_acc}%")
    ours, ours_acc = run(launch, work, tensors, "tensors")
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(ours, base))
    bitwise = ours == base
    ok = len(ours) == len(base) and worst <= 1e-5 and ours_acc == base_acc
    good &= ok
    print(f"{'PASS' if ok else 'FAIL'}: folder vs tensor file, "
          f"{len(base)} steps: worst relative loss difference {worst:.3g} "
          f"({'bitwise equal' if bitwise else 'not bitwise'}); test accuracy "
          f"{base_acc}% vs {ours_acc}%")

    floats = os.path.join(work, "floats")
    os.makedirs(floats)
    for split in ("train", "test"):
        data = torch.load(os.path.join(tensors, f"{split}.pt"))
        x = data["x"].flatten(1).float() / 255
        y = torch.nn.functional.one_hot(data["y"], 10).float()
        torch.save({"x": x, "y": y}, os.path.join(floats, f"{split}.pt"))
    losses, _ = run(launch, work, floats, "floats", "--loss", "mse",
                    model="mlp")
    ok = losses[-1] < losses[0]
    good &= ok
    print(f"{'PASS' if ok else 'FAIL'}: float targets [N, 10] with --loss "
          f"mse and mlp on rows [N, 784]: loss {losses[0]:.4f} -> "
          f"{losses[-1]:.4f} over {len(losses)} steps")

    hostile = os.path.join(work, "hostile")
    os.makedirs(hostile)
    data = torch.load(os.path.join(tensors, "train.pt"))
    torch.save({"x": data["x"], "y": data["y"],
                "note": collections.Counter(a=1)},
               os.path.join(hostile, "train.pt"))
    done = run(launch, work, hostile, "hostile", check=False)
    said = done.stdout + done.stderr
    ok = (done.returncode != 0 and "collections Counter" in said and
          os.path.join(hostile, "train.pt") in said)
    good &= ok
    print(f"{'PASS' if ok else 'FAIL'}: a tensor file naming a foreign "
          f"global is refused: "
          + next((line for line in said.splitlines()
                  if "Counter" in line), said[-300:])[:240])
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
