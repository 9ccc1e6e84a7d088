#!/usr/bin/python3
"""End to end on localhost with real processes: a coordinator and two
gradsync-worker processes train fashion_cnn on a subset of the real
Fashion-MNIST (200 train + 50 test images per class) and must exceed a stated
accuracy; both ranks report metrics; a job cancelled while RUNNING leaves the
workers idle and reusable; the checkpoint has plain parameter names, loads
in Python PyTorch (model and Adam state) and a second job resumes from it.
The cluster runs secured, as a shared deployment would: TLS with
certificates made here (tests/tools/make_test_certs.sh), workers presenting
client certificates (--require-worker-cert), and user and worker tokens;
plaintext and tokenless clients are refused.

Usage: e2e_train.py BIN_DIR WORK_DIR"""
import json
import os
import re
import signal
import subprocess
import sys
import time

MIN_ACCURACY = 0.60  # 1 epoch on 2,000 images; measured about 0.7


USER_TOKEN, WORKER_TOKEN = "e2e-user-token", "e2e-worker-token"
METRICS_TOKEN = "e2e-metrics-token"


class Cluster:
    """A coordinator and `workers` gradsync-worker processes on localhost,
    secured (TLS, worker certificates, tokens) unless secure=False."""

    def __init__(self, bin_dir, work, workers=2, secure=True,
                 heartbeat_timeout=3, worker_args=(), coordinator_args=()):
        self.bin, self.work = bin_dir, work
        self.procs, self.logs = [], []
        self.worker_count = workers
        tls = self.tls = os.path.join(work, "tls")
        os.makedirs(tls, exist_ok=True)
        subprocess.run(["sh", os.path.join(os.path.dirname(__file__), "..",
                                           "tools", "make_test_certs.sh"), tls],
                       check=True)
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("GRADSYNC_")}
        # What the CLI needs: the CA and the user token.
        self.cli_env = dict(base, GRADSYNC_TLS_CA=f"{tls}/ca.pem",
                            GRADSYNC_TOKEN=USER_TOKEN)
        worker_env = dict(base, GRADSYNC_TLS_CA=f"{tls}/ca.pem",
                          GRADSYNC_TLS_CLIENT_CERT=f"{tls}/worker.pem",
                          GRADSYNC_TLS_CLIENT_KEY=f"{tls}/worker.key",
                          GRADSYNC_WORKER_TOKEN=WORKER_TOKEN)
        security = [
            "--tls-cert", f"{tls}/server.pem", "--tls-key", f"{tls}/server.key",
            "--tls-client-ca", f"{tls}/ca.pem", "--require-worker-cert",
            "--user-token", USER_TOKEN, "--worker-token", WORKER_TOKEN,
            "--metrics-token", METRICS_TOKEN]
        if not secure:
            security, self.cli_env, worker_env = [], base, base
        self.coord_log = open(os.path.join(work, "coordinator.log"), "w+")
        self.logs.append(self.coord_log)
        self.coord_env = base
        self.coord_args = [
            f"{bin_dir}/gradsync-coordinator", "--state-dir",
            os.path.join(work, "state"), "--heartbeat-timeout",
            str(heartbeat_timeout)] + security + list(coordinator_args)
        # With --http-listen: the monitoring port (after the gRPC one).
        self.http_port = None
        self.coord = self._start_coordinator("127.0.0.1:0")
        self.worker_env, self.worker_args = worker_env, list(worker_args)
        self.workers_procs = []
        for _ in range(workers):
            self.start_worker()

    def start_worker(self):
        """One more gradsync-worker (as a supervisor restarts one), logging
        to worker<i>.log; returns its process."""
        i = len(self.workers_procs)
        wlog = open(os.path.join(self.work, f"worker{i}.log"), "w+")
        self.logs.append(wlog)
        proc = subprocess.Popen(
            [f"{self.bin}/gradsync-worker", "-c", self.address,
             "--log-every", "10", "--checkpoint-root", self.work]
            + self.worker_args, stdout=wlog, stderr=wlog, env=self.worker_env)
        self.workers_procs.append(proc)
        self.procs.append(proc)
        return proc

    def _start_coordinator(self, listen):
        coord = subprocess.Popen(self.coord_args + ["--listen", listen],
                                 stderr=subprocess.PIPE, text=True,
                                 env=self.coord_env)
        self.procs.append(coord)
        # Started once it names its port, and its monitoring port with
        # --http-listen.
        waiting = {"listening"}
        if "--http-listen" in self.coord_args:
            waiting.add("monitoring")
        for line in coord.stderr:
            self.coord_log.write(line)
            m = re.search(r"(listening|monitoring) on port (\d+)", line)
            if m and m.group(1) == "listening":
                self.address = f"127.0.0.1:{m.group(2)}"
            elif m:
                self.http_port = int(m.group(2))
            if m:
                waiting.discard(m.group(1))
            if not waiting:
                break
        else:
            raise AssertionError("the coordinator did not start")
        # Keep draining the coordinator's log.
        import threading
        threading.Thread(
            target=lambda: [self.coord_log.write(l) for l in coord.stderr],
            daemon=True).start()
        return coord

    def restart_coordinator(self, down_s):
        """Kills the coordinator (SIGKILL, as a crash), waits `down_s` and
        starts it again on the same port and state directory."""
        self.coord.kill()
        self.coord.wait()
        time.sleep(down_s)
        self.coord = self._start_coordinator(self.address)

    def cli(self, *args, timeout=60, check=True, env=None):
        r = subprocess.run([f"{self.bin}/gradsync", "-c", self.address] +
                           list(args), capture_output=True, text=True,
                           timeout=timeout, env=env or self.cli_env)
        if check and r.returncode != 0:
            raise AssertionError(f"gradsync {' '.join(args)} failed "
                                 f"({r.returncode}): {r.stderr}{r.stdout}")
        return r

    def workers(self):
        return json.loads(self.cli("--json", "workers").stdout).get("workers", [])

    def wait_workers(self, state, deadline_s=30):
        end = time.time() + deadline_s
        while time.time() < end:
            ws = [w for w in self.workers()
                  if w.get("state") != "WORKER_STATE_DEAD"]
            if (len(ws) == self.worker_count and
                    all(w["state"] == state for w in ws)):
                return ws
            time.sleep(0.2)
        raise AssertionError(f"workers not {state} within {deadline_s}s: "
                             f"{self.workers()}")

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        """`with Cluster(...) as cluster:` stops it, and prints the logs of
        every process when the block failed."""
        self.stop()
        if kind is not None:
            self.dump_logs()
        return False

    def stop(self):
        for p in self.procs:
            try:
                os.kill(p.pid, signal.SIGCONT)  # a stopped one must wake to die
            except ProcessLookupError:
                pass
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()

    def dump_logs(self):
        for log in self.logs:
            log.flush()
            log.seek(0)
            print(f"---- {log.name} (tail) ----")
            print("".join(log.readlines()[-30:]))


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return f.read().split()
    except FileNotFoundError:
        return []


def listening_ports():
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def wait_until(predicate, deadline_s):
    end = time.time() + deadline_s
    while time.time() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    return None


def make_subset(full, subset, train_per_class=200, test_per_class=50):
    for split, n in (("train", train_per_class), ("test", test_per_class)):
        for cls in sorted(os.listdir(os.path.join(full, split))):
            src = os.path.join(full, split, cls)
            dst = os.path.join(subset, split, cls)
            os.makedirs(dst, exist_ok=True)
            for name in sorted(os.listdir(src))[:n]:
                link = os.path.join(dst, name)
                if not os.path.exists(link):
                    os.symlink(os.path.join(src, name), link)


# What torch.load(..., weights_only=True) admits by default: containers,
# tensors and their storages; no code.
WEIGHTS_ONLY_GLOBALS = {
    "collections OrderedDict", "torch._utils _rebuild_tensor_v2",
    "torch._utils _rebuild_parameter"} | {
    f"torch {t}Storage" for t in ("Float", "Double", "Half", "BFloat16",
                                  "Long", "Int", "Short", "Char", "Byte",
                                  "Bool")}


def load_weights_only(path):
    """torch.load(path, weights_only=True), the way to load a file from
    someone else. PyTorch 1.13 (Debian's) has that unpickler without floats
    (BINFLOAT): it refuses every file with a float, PyTorch's own too; there
    the check is what that unpickler guards, the globals the pickle names."""
    import pickletools
    import zipfile
    import torch
    if int(torch.__version__.split(".")[0]) >= 2:
        return torch.load(path, weights_only=True)
    with zipfile.ZipFile(path) as z:
        pkl = next(n for n in z.namelist() if n.endswith("data.pkl"))
        data = z.read(pkl)
    for op, arg, _ in pickletools.genops(data):
        assert op.name != "STACK_GLOBAL", f"{path}: STACK_GLOBAL"
        if op.name == "GLOBAL":
            assert arg in WEIGHTS_ONLY_GLOBALS, \
                f"{path} needs {arg}: torch.load(weights_only=True) refuses it"
    return torch.load(path)


def seeds_fashion_cnn():
    """The seeds' FashionCNN, as gradsync ships it for Python users."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                    "python"))
    from gradsync import models
    return models.fashion_cnn()


def check_python_predictions(bin_dir, checkpoint, subset, state):
    """The checkpoint loads into the Python model (strict) and predicts what
    the C++ model predicts on a few test images."""
    import numpy as np
    import torch
    from PIL import Image
    model = seeds_fashion_cnn()
    model.load_state_dict(state, strict=True)
    model.eval()
    test = os.path.join(subset, "test")
    images = [os.path.join(test, cls, sorted(os.listdir(os.path.join(test, cls)))[0])
              for cls in sorted(os.listdir(test))]
    out = subprocess.run([f"{bin_dir}/predict_dump", "fashion_cnn", checkpoint]
                         + images, check=True, capture_output=True,
                         text=True).stdout.split("\n")
    agree = 0
    for path, line in zip(images, out):
        cpp = [float(v) for v in line.split()[1:]]
        x = torch.from_numpy(np.array(Image.open(path), dtype=np.float32) / 255)
        with torch.no_grad():
            py = model(x.view(1, 1, 28, 28))[0]
        assert int(line.split()[0]) == int(py.argmax()), (path, line, py)
        assert np.allclose(cpp, py.numpy(), atol=1e-4), (path, cpp, py)
        agree += 1
    print(f"e2e: checkpoint loads in Python PyTorch; {agree} of {len(images)} "
          f"predictions equal the C++ model's")


def prepare_subset(bin_dir, work):
    """Fetches Fashion-MNIST (once) and returns the path of the subset."""
    os.makedirs(work, exist_ok=True)
    full = os.environ.get("GRADSYNC_FASHION_MNIST",
                          os.path.join(work, "fashion-mnist"))
    subprocess.run([f"{bin_dir}/gradsync", "data", "fetch", "fashion-mnist",
                    full], check=True)
    subset = os.path.join(work, "fmnist-subset")
    make_subset(full, subset)
    return subset


def main():
    bin_dir, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    subset = prepare_subset(bin_dir, work)
    ckpt = os.path.join(work, "ckpt")
    import shutil
    for stale in ("state", "ckpt", "ckpt-resumed"):  # every run starts from a clean slate
        shutil.rmtree(os.path.join(work, stale), ignore_errors=True)
    cluster = Cluster(bin_dir, work)
    ok = False
    try:
        cluster.wait_workers("WORKER_STATE_IDLE")
        # 0. Secured: a plaintext client cannot connect; a TLS client
        # without the user token is UNAUTHENTICATED.
        plain = cluster.cli("list", check=False, env=dict(
            cluster.cli_env, GRADSYNC_TLS_CA=""))
        assert plain.returncode != 0 and "cannot reach" in plain.stderr, plain
        tokenless = cluster.cli("list", check=False, env=dict(
            cluster.cli_env, GRADSYNC_TOKEN=""))
        assert (tokenless.returncode != 0 and
                "UNAUTHENTICATED" in tokenless.stderr), tokenless
        # The read-only metrics token grants nothing on the gRPC port.
        for args in (("list",), ("cancel", "job-1")):
            metrics_only = cluster.cli(*args, check=False, env=dict(
                cluster.cli_env, GRADSYNC_TOKEN=METRICS_TOKEN))
            assert (metrics_only.returncode != 0 and
                    "UNAUTHENTICATED" in metrics_only.stderr), metrics_only
        print("e2e: TLS, worker certificates and tokens on; plaintext, "
              "tokenless and metrics-token clients refused")
        # 1. Train and check accuracy and per-rank metrics.
        job = json.loads(cluster.cli(
            "--json", "submit", "--name", "e2e", "--dataset", subset,
            "--eval-split", "test", "--model", "fashion_cnn", "--epochs", "1",
            "--batch-size", "50", "-n", "2", "--checkpoint-dir", ckpt).stdout)
        watch = cluster.cli("watch", job["id"], timeout=600, check=False)
        print(watch.stdout[-1500:])
        assert watch.returncode == 0, f"watch exit {watch.returncode}: {watch.stderr}"
        done = json.loads(cluster.cli("--json", "status", job["id"]).stdout)
        assert done["state"] == "JOB_STATE_SUCCEEDED", done["message"]
        ranks = done["metrics"]["ranks"]
        assert sorted(r["rank"] for r in ranks) == [0, 1], ranks
        assert all(int(r["steps_reported"]) == 20 for r in ranks), ranks
        ev = done["metrics"]["eval"][-1]
        print(f"e2e: test accuracy {100 * ev['accuracy']:.2f}% over "
              f"{ev['samples']} samples (need {100 * MIN_ACCURACY:.0f}%)")
        assert int(ev["samples"]) == 500, ev
        assert ev["accuracy"] >= MIN_ACCURACY, ev
        ckpts = [f for f in os.listdir(ckpt) if f.endswith(".pt")]
        assert ckpts, "no checkpoint written"
        import torch
        # weights_only: what a careful user loads an untrusted file with.
        saved = load_weights_only(os.path.join(ckpt, ckpts[0]))
        state = saved["model"]
        assert "layer1.0.weight" in state and "fc3.bias" in state, list(state)
        assert not any(k.startswith("module.") for k in state), list(state)
        assert (saved["epoch"], saved["epoch_batch"], saved["step"]) == (1, 0, 20)
        meta = saved["metadata"]
        assert meta["RANK"] == "0" and meta["WORLD_SIZE"] == "2", meta
        assert meta["MASTER_ADDR"] and int(meta["MASTER_PORT"]) > 0, meta
        check_python_predictions(bin_dir, os.path.join(ckpt, ckpts[0]),
                                 subset, state)
        # The same model from the coordinator (no shared file system): the
        # snapshot rank 0 uploaded loads in Python with the same predictions.
        listed = cluster.cli("model", "list", job["id"]).stdout
        assert "20" in listed, listed
        pulled = os.path.join(work, "pulled.pt")
        print("e2e: " + cluster.cli("model", "pull", job["id"], "-o",
                                    pulled).stdout.strip())
        with open(pulled, "rb") as a, open(os.path.join(ckpt, f"model-{job['id']}-step-20.pt"),
                                           "rb") as b:
            assert a.read() == b.read(), "pulled snapshot differs from the file"
        check_python_predictions(bin_dir, pulled, subset,
                                 load_weights_only(pulled)["model"])
        # Only the weights, for weights-only loaders of every version.
        weights = os.path.join(work, "weights.pt")
        print("e2e: " + cluster.cli("model", "pull", job["id"], "--state-dict",
                                    "-o", weights).stdout.strip())
        import torch
        plain = torch.load(weights, weights_only=True)
        assert plain.keys() == state.keys(), (list(plain), list(state))
        assert all(torch.equal(plain[k], state[k]) for k in state)
        # The optimizer state loads into Python's Adam, too.
        model = seeds_fashion_cnn()
        model.load_state_dict(state)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        opt.load_state_dict(saved["optimizer"])
        assert float(opt.state_dict()["state"][0]["step"]) == 20

        # 1b. A new job resumes from that job's snapshot in the coordinator
        # (no path shared; --resume-from FILE is the local alternative) for
        # a second epoch: training continues at step 21 with the saved
        # model, optimizer and RNG.
        resumed = json.loads(cluster.cli(
            "--json", "submit", "--name", "e2e-resume", "--dataset", subset,
            "--eval-split", "test", "--model", "fashion_cnn", "--epochs", "2",
            "--batch-size", "50", "-n", "2", "--resume-snapshot", job["id"],
            "--checkpoint-dir", ckpt + "-resumed").stdout)
        assert resumed["spec"]["checkpoint"]["resume_snapshot_step"] in (
            20, "20"), resumed["spec"]["checkpoint"]
        assert cluster.cli("watch", resumed["id"], timeout=600,
                           check=False).returncode == 0
        done = json.loads(cluster.cli("--json", "status", resumed["id"]).stdout)
        assert done["state"] == "JOB_STATE_SUCCEEDED", done["message"]
        ranks = done["metrics"]["ranks"]
        assert all(int(r["steps_reported"]) == 20 for r in ranks), ranks
        assert all(int(r["last"]["step"]) == 40 for r in ranks), ranks
        evals = done["metrics"]["eval"]
        assert [int(e.get("epoch", 0)) for e in evals] == [1], evals
        print(f"e2e: resumed at step 21, epoch 2 accuracy "
              f"{100 * evals[-1]['accuracy']:.2f}%")
        assert os.listdir(ckpt + "-resumed") == [
            f"model-{resumed['id']}-step-40.pt"]
        fetched = f"resumes from the coordinator's snapshot of {job['id']} step 20"
        assert any(fetched in open(os.path.join(work, f"worker{i}.log")).read()
                   for i in range(2)), "rank 0 did not fetch the snapshot"

        # 2. Cancel while RUNNING: workers become idle and are reusable,
        # with no thread, child process or listening port left behind.
        cluster.wait_workers("WORKER_STATE_IDLE", deadline_s=30)
        baseline = {p.pid: threads(p.pid) for p in cluster.workers_procs}
        long = json.loads(cluster.cli(
            "--json", "submit", "--name", "long", "--dataset", subset,
            "--model", "fashion_cnn", "--epochs", "50", "--batch-size", "50",
            "-n", "2").stdout)
        watcher = subprocess.Popen(
            [f"{bin_dir}/gradsync", "-c", cluster.address, "watch", long["id"]],
            stdout=subprocess.PIPE, text=True, env=cluster.cli_env)
        for line in watcher.stdout:
            if re.search(r"rank \d+ .* step \d+/", line):
                break  # running and reporting steps
        cluster.cli("cancel", long["id"], "--reason", "e2e cancel")
        watcher.wait(timeout=30)
        assert watcher.returncode == 1  # watch ends non-zero: not SUCCEEDED
        cancelled = json.loads(cluster.cli("--json", "status", long["id"]).stdout)
        assert cancelled["state"] == "JOB_STATE_CANCELLED", cancelled
        t0 = time.time()
        cluster.wait_workers("WORKER_STATE_IDLE", deadline_s=30)
        print(f"e2e: workers idle {time.time() - t0:.1f}s after cancel")
        port = int(cancelled["master_port"])
        after = wait_until(
            lambda: {pid: threads(pid) for pid in baseline}
            if all(threads(pid) <= n + 2 for pid, n in baseline.items())
            and port not in listening_ports() else None, 10)
        assert after, (f"threads {baseline} -> "
                       f"{ {pid: threads(pid) for pid in baseline} }, port "
                       f"{port} listening: {port in listening_ports()}")
        assert not any(children(pid) for pid in baseline), "orphan processes"
        print(f"e2e: after the cancel each worker is back to its idle thread "
              f"count ({baseline} -> {after}), has no child process, and the "
              f"job's port {port} is closed")
        again = json.loads(cluster.cli(
            "--json", "submit", "--name", "again", "--dataset", subset,
            "--model", "mlp", "--epochs", "1", "--batch-size", "100",
            "-n", "2").stdout)
        assert cluster.cli("watch", again["id"], timeout=300,
                           check=False).returncode == 0
        ok = True
    finally:
        cluster.stop()
        if not ok:
            cluster.dump_logs()
    print("e2e: 1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
