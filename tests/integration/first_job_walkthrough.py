#!/usr/bin/python3
"""README's "Your first job" walkthrough, run exactly as printed.

The shell block that follows the marker line in README.md (not a copy of
it) runs with bash in a fresh directory that holds the built tree (`build`,
`python`, `data` linked in), on a free port (GRADSYNC_PORT): it fetches
Fashion-MNIST, starts a coordinator and two workers, trains fashion_cnn for
one epoch, pulls the weights with --state-dict and evaluates them in
PyTorch after torch.load(weights_only=True) into the shipped model. The
test then checks that the accuracy PyTorch measured is the job's (what
`gradsync watch` ended with) within 0.1 points, and that nothing the block
started is left running.

Usage: first_job_walkthrough.py SOURCE_DIR BUILD_DIR WORK_DIR"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

MARKER = "<!-- first-job: tested by tests/integration/first_job_walkthrough.py -->"


def walkthrough(readme):
    text = open(readme).read()
    at = text.index(MARKER)
    m = re.compile(r"```sh\n(.*?)\n```", re.S).search(text, at)
    assert m, "no ```sh block after the first-job marker"
    return m.group(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    source, build, work = sys.argv[1:4]
    script = walkthrough(os.path.join(source, "README.md"))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "data"))
    os.symlink(build, os.path.join(work, "build"))
    os.symlink(os.path.join(source, "python"), os.path.join(work, "python"))
    # Fashion-MNIST the other end-to-end tests fetched, when there is one
    # (the block's `data fetch` then finds it complete).
    cached = os.environ.get("GRADSYNC_FASHION_MNIST",
                            os.path.join(build, "e2e", "fashion-mnist"))
    if os.path.isdir(os.path.join(cached, "test")):
        os.symlink(cached, os.path.join(work, "data", "fashion-mnist"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADSYNC_")}
    env["GRADSYNC_PORT"] = str(free_port())
    print(f"walkthrough: {script.count(chr(10)) + 1} lines from README.md, "
          f"port {env['GRADSYNC_PORT']}, in {work}", flush=True)
    start = time.time()
    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script],
                            cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    out = []
    try:
        for line in proc.stdout:
            out.append(line)
            sys.stdout.write(line)
            sys.stdout.flush()
        proc.wait(timeout=60)
        # The block's last line stops what it started: give it 15 s to go.
        left = []
        for _ in range(75):
            left = subprocess.run(["pgrep", "-s", str(proc.pid)],
                                  capture_output=True, text=True).stdout.split()
            if not left:
                break
            time.sleep(0.2)
    finally:
        # Whatever the block left behind goes with its session.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    text = "".join(out)
    if proc.returncode != 0:
        for log in sorted(os.listdir(os.path.join(work, "logs"))
                          if os.path.isdir(os.path.join(work, "logs")) else []):
            with open(os.path.join(work, "logs", log)) as f:
                print(f"---- logs/{log} (tail) ----\n" + "".join(f.readlines()[-20:]))
        raise AssertionError(f"the walkthrough exited {proc.returncode}")
    job = re.search(r"SUCCEEDED after \S+: test accuracy ([\d.]+)%", text)
    torch_side = re.search(r"PyTorch: test accuracy ([\d.]+)%", text)
    assert job and torch_side, "the job's or PyTorch's accuracy is missing"
    a, b = float(job.group(1)), float(torch_side.group(1))
    print(f"walkthrough: job {a:.2f}%, PyTorch on the pulled weights {b:.2f}% "
          f"(need within 0.1 points); {time.time() - start:.0f} s")
    assert abs(a - b) <= 0.1, (a, b)
    assert os.path.exists(os.path.join(work, "fashion_cnn.pt"))
    assert not left, f"left running by the walkthrough: {left}"


if __name__ == "__main__":
    main()
