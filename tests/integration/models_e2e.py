#!/usr/bin/python3
"""The shipped Python models (python/gradsync/models.py) against the jobs
that train the built-in ones: for lenet, mlp and resnet18 a short job on
synthetic:tiny (3x12x12, 4 classes) runs on a real coordinator and worker;
`gradsync model pull --state-dict` writes a file that torch.load(...,
weights_only=True) opens (PyTorch 1.13's own loader here; the globals 2.x's
allows are checked too), the Python model loads it with strict=True, and
predicts, logit for logit, what the C++ model (tests/tools/predict_dump)
predicts from the full snapshot. fashion_cnn is checked the same way by
e2e_train.py on real Fashion-MNIST.

Usage: models_e2e.py BIN_DIR WORK_DIR"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from e2e_train import Cluster, WEIGHTS_ONLY_GLOBALS  # noqa: E402


def check_weights_only(path):
    """Both loaders' rules: 2.x's allowed globals, then 1.13's real loader
    (which also has no BINFLOAT)."""
    import pickletools
    import zipfile
    import torch
    with zipfile.ZipFile(path) as z:
        pkl = next(n for n in z.namelist() if n.endswith("data.pkl"))
        for op, arg, _ in pickletools.genops(z.read(pkl)):
            assert op.name not in ("STACK_GLOBAL", "BINFLOAT", "BUILD"), op.name
            if op.name == "GLOBAL":
                assert arg in WEIGHTS_ONLY_GLOBALS, f"{path} names {arg}"
    return torch.load(path, weights_only=True)


def images(work, count=4):
    from PIL import Image
    rng = np.random.default_rng(7)
    paths = []
    for i in range(count):
        path = os.path.join(work, f"probe{i}.png")
        Image.fromarray(rng.integers(0, 256, (12, 12, 3), dtype=np.uint8),
                        "RGB").save(path)
        paths.append(path)
    return paths


def main():
    bin_dir, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    import subprocess
    import torch
    from gradsync import models
    cluster = Cluster(bin_dir, work, workers=1, secure=False)
    ok = False
    try:
        cluster.cli("workers", "--wait", "1", "--timeout", "60")
        probes = images(work)
        for name in ("lenet", "mlp", "resnet18"):
            job = cluster.cli("submit", "-q", "--name", name, "--dataset",
                              "synthetic:tiny", "--model", name,
                              "--batch-size", "128", "-n", "1").stdout.strip()
            cluster.cli("watch", job, timeout=300)
            full = os.path.join(work, f"{name}-full.pt")
            state = os.path.join(work, f"{name}.pt")
            cluster.cli("model", "pull", job, "-o", full)
            out = cluster.cli("model", "pull", job, "--state-dict", "-o",
                              state).stdout
            assert "weights_only=True" in out, out
            weights = check_weights_only(state)
            model = models.create(name, channels=3, height=12, width=12,
                                  classes=4)
            model.load_state_dict(weights, strict=True)
            model.eval()
            lines = subprocess.run(
                [f"{bin_dir}/predict_dump", f"{name}:4", full] + probes, check=True,
                capture_output=True, text=True).stdout.split("\n")
            from PIL import Image
            for path, line in zip(probes, lines):
                x = torch.from_numpy(np.array(Image.open(path), dtype=np.float32)
                                     .transpose(2, 0, 1) / 255)
                with torch.no_grad():
                    py = model(x.unsqueeze(0))[0].numpy()
                cpp = np.array([float(v) for v in line.split()[1:]])
                assert np.allclose(cpp, py, atol=1e-4), (name, path, cpp, py)
            print(f"models_e2e: {name}: {len(weights)} tensors load strictly "
                  f"with weights_only=True; {len(probes)} predictions equal "
                  f"the C++ model's")
        ok = True
    finally:
        cluster.stop()
        if not ok:
            cluster.dump_logs()


if __name__ == "__main__":
    main()
