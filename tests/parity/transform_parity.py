#!/usr/bin/python3
"""Transform parity: gradsync's RandomAffine warp (AffineNearest) against
torchvision.transforms.functional.affine on PIL images (NEAREST, fill 0)
with the same fixed parameters, on grayscale 28x28 and RGB 250x250 images.
Outputs must be pixel-close: at most 1% of pixels may differ; in practice
they are identical (gradsync follows Pillow's three sampling paths).

Usage: transform_parity.py PATH/TO/affine_dump"""
import itertools
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.transforms import InterpolationMode

MAX_MISMATCH = 0.01


def make_image(h, w, channels, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = ((x * 7 + y * 13) % 256).astype(np.uint8)
    noise = rng.integers(0, 256, size=(h, w), dtype=np.uint8)
    img = np.where((x // 4 + y // 4) % 2 == 0, base, noise)
    if channels == 3:
        img = np.stack([img, 255 - img, (img * 3) % 256], axis=-1).astype(np.uint8)
    return Image.fromarray(img)


def main():
    dump = sys.argv[1]
    cases = list(itertools.product(
        [(28, 28, 1), (250, 250, 3), (31, 17, 1)],
        [0.0, 3.7, -5.0, 45.0, 90.0],
        [(0, 0), (2, -3), (-25, 11)],
        [1.0, 0.5, 1.37, 2.0]))
    worst = 0.0
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        # One affine_dump run for all cases (it loads LibTorch once).
        lines, expected = [], []
        for i, ((h, w, c), angle, (tx, ty), scale) in enumerate(cases):
            src = make_image(h, w, c, seed=h * 1000 + w)
            src_path = os.path.join(tmp, f"in{i}.png")
            out_path = os.path.join(tmp, f"out{i}.png")
            src.save(src_path)
            lines.append(f"{src_path} {out_path} {angle} {tx} {ty} {scale}\n")
            expected.append(np.array(F.affine(
                src, angle=angle, translate=[tx, ty], scale=scale,
                shear=[0.0, 0.0], interpolation=InterpolationMode.NEAREST,
                fill=0)))
        subprocess.run([dump], input="".join(lines), text=True, check=True)
        for i, ((h, w, c), angle, (tx, ty), scale) in enumerate(cases):
            ours = np.array(Image.open(os.path.join(tmp, f"out{i}.png")))
            theirs = expected[i]
            assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
            differ = np.any(ours != theirs, axis=-1) if c == 3 else ours != theirs
            frac = float(differ.mean())
            worst = max(worst, frac)
            if frac > MAX_MISMATCH:
                failures += 1
                print(f"MISMATCH {h}x{w}x{c} angle={angle} t=({tx},{ty}) "
                      f"scale={scale}: {100 * frac:.2f}% pixels differ")
    print(f"transform parity: {len(cases) - failures} passed, {failures} "
          f"failed (worst {100 * worst:.3f}% pixels differ; torch "
          f"{torch.__version__})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
