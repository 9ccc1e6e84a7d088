#!/usr/bin/python3
"""Shard parity: gradsync's DistributedSamplerIndices vs PyTorch's
torch.utils.data.DistributedSampler over a grid of (N, W, rank, seed, epoch,
shuffle, drop_last). Usage: sampler_parity.py PATH/TO/sampler_dump"""
import itertools
import subprocess
import sys

import torch
from torch.utils.data import DistributedSampler


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def expected(n, w, rank, seed, epoch, shuffle, drop_last):
    s = DistributedSampler(Sized(n), num_replicas=w, rank=rank,
                           shuffle=shuffle, seed=seed, drop_last=drop_last)
    s.set_epoch(epoch)
    return list(s)


def main():
    dump = sys.argv[1]
    cases = []
    for n, w, seed, epoch, shuffle, drop_last in itertools.product(
            [1, 2, 7, 10, 64, 101, 1000, 13233, 60000], [1, 2, 3, 4, 7, 8],
            [0, 42, 2**31 + 5], [0, 1, 9], [True, False], [False, True]):
        if n < w and drop_last:
            continue  # PyTorch yields empty shards; covered by n >= w cases
        for rank in range(w):
            cases.append((n, w, rank, seed, epoch, shuffle, drop_last))
    lines = "".join(f"{n} {w} {r} {s} {e} {int(sh)} {int(dl)}\n"
                    for n, w, r, s, e, sh, dl in cases)
    out = subprocess.run([dump], input=lines, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(out) == len(cases), (len(out), len(cases))
    failures = 0
    for case, got in zip(cases, out):
        want = expected(*case)
        got_list = [int(x) for x in got.split()] if got else []
        if got_list != want:
            failures += 1
            if failures <= 5:
                print(f"MISMATCH (N, W, rank, seed, epoch, shuffle, "
                      f"drop_last)={case}: got {got_list[:10]}... "
                      f"want {want[:10]}...")
    print(f"sampler parity: {len(cases) - failures} passed, "
          f"{failures} failed (torch {torch.__version__})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
