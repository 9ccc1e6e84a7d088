#!/usr/bin/python3
"""The Python client's examples (issue 42) against a real coordinator and
two workers: python/examples/fashion_cnn.py as a script, and
fashion_cnn.ipynb executed headless with nbclient; each trains the seeds'
FashionCNN written in Python through gradsync and measures the pulled
weights in PyTorch to the job's reported accuracy (within 0.1 points). The
notebook is kept with its outputs stripped.

Usage: notebook_test.py BIN_DIR PYTHON_PACKAGE_DIR WORK_DIR"""
import os
import re
import shutil
import subprocess
import sys

bin_dir, package_dir, work = (os.path.abspath(a) for a in sys.argv[1:4])
here = os.path.dirname(os.path.abspath(__file__))
examples = os.path.join(here, "..", "..", "python", "examples")
sys.path.insert(0, os.path.join(here, "..", "integration"))
sys.path.insert(0, os.path.join(here, "..", "parity"))

import nbclient  # noqa: E402
import nbformat  # noqa: E402

from e2e_train import Cluster  # noqa: E402
from script_model_parity import make_folder  # noqa: E402

LINE = re.compile(r"(job-\d+): gradsync reported ([0-9.]+)%, PyTorch "
                  r"measures ([0-9.]+)%")


def check(text, what):
    found = LINE.search(text)
    assert found, f"{what} printed no result:\n{text[-2000:]}"
    reported, measured = float(found.group(2)), float(found.group(3))
    assert abs(reported - measured) <= 0.1, (what, reported, measured)
    print(f"notebook_test: {what}: {found.group(0)}")


def main():
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    data = os.path.join(work, "data")
    make_folder(data, per_class_train=40, per_class_test=10)
    notebook = nbformat.read(os.path.join(examples, "fashion_cnn.ipynb"), 4)
    for cell in notebook.cells:
        assert not cell.get("outputs") and not cell.get("execution_count"), \
            "fashion_cnn.ipynb is kept with its outputs stripped"
    with Cluster(bin_dir, work, workers=2, secure=False) as cluster:
        cluster.cli("workers", "--wait", "2", "--timeout", "60")
        os.environ.update(GRADSYNC_COORDINATOR=cluster.address,
                          GRADSYNC_EXAMPLE_DATA=data,
                          PYTHONPATH=package_dir)
        script = subprocess.run(
            [sys.executable, os.path.join(examples, "fashion_cnn.py"), data],
            capture_output=True, text=True, timeout=300)
        assert script.returncode == 0, script.stderr[-3000:]
        check(script.stdout, "fashion_cnn.py")

        client = nbclient.NotebookClient(
            notebook, timeout=300, kernel_name="python3",
            resources={"metadata": {"path": work}})
        client.execute()
        printed = "".join(output.get("text", "")
                          for cell in notebook.cells
                          for output in cell.get("outputs", []))
        check(printed, "fashion_cnn.ipynb")


if __name__ == "__main__":
    main()
