#!/usr/bin/python3
"""The coordinator's dashboard in a real browser: headless Chromium (Debian's
package) loads the page from the monitoring port of a coordinator with two
gradsync-worker processes training fashion_cnn on a subset of the real
Fashion-MNIST, and the test checks what the page shows: the workers, the
job in the list, and on the job's page its state, both ranks, drawn loss,
throughput and accuracy curves, the evaluations, the history and both
ranks' log lines; an unknown
job shows the coordinator's error. It saves a screenshot of the job's page
(WORK_DIR/dashboard.png). Without Chromium it exits 77 (skipped), saying
why.

Usage: dashboard_e2e.py BIN_DIR WORK_DIR DATA_DIR (DATA_DIR as
e2e_train.py's WORK_DIR: Fashion-MNIST is fetched there once)."""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_train import Cluster, prepare_subset  # noqa: E402

SKIP = 77


def chromium():
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def browse(url, *flags):
    """Loads `url` in headless Chromium, letting its scripts run for 5 s of
    virtual time; returns what Chromium printed."""
    r = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
         "--no-first-run", "--virtual-time-budget=5000",
         "--window-size=1280,1750"] + list(flags) + [url],
        capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"chromium exit {r.returncode}: {r.stderr[-2000:]}"
    return r.stdout


def rows(dom, table_id):
    m = re.search(rf'<table id="{table_id}">(.*?)</table>', dom, re.S)
    assert m, f"no table {table_id} on the page:\n{dom[-3000:]}"
    return re.findall(r"<tr[^>]*>(.*?)</tr>", m.group(1), re.S)[1:]


def main():
    if chromium() is None:
        print("skipped: no chromium (deploy/install-deps.sh installs Debian's "
              "package)")
        return SKIP
    bin_dir, work, data = (os.path.abspath(a) for a in sys.argv[1:4])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    subset = prepare_subset(bin_dir, data)
    cluster = Cluster(bin_dir, work, secure=False,
                      coordinator_args=["--http-listen", "127.0.0.1:0"])
    ok = False
    try:
        base = f"http://127.0.0.1:{cluster.http_port}/"
        cluster.wait_workers("WORKER_STATE_IDLE")
        dom = browse(base, "--dump-dom")
        workers = rows(dom, "workers")
        assert len(workers) == 2 and all("IDLE" in w for w in workers), workers
        assert "no jobs yet" in dom, dom[-2000:]
        print("dashboard_e2e: the list shows 2 idle workers and no jobs")

        job = json.loads(cluster.cli(
            "--json", "submit", "--name", "dash", "--dataset", subset,
            "--eval-split", "test", "--model", "fashion_cnn", "--epochs", "3",
            "--batch-size", "20", "-n", "2").stdout)
        jid = job["id"]
        watch = cluster.cli("watch", jid, timeout=600, check=False)
        assert watch.returncode == 0, f"watch: {watch.stderr}"

        dom = browse(base, "--dump-dom")
        listed = [r for r in rows(dom, "jobs") if jid in r]
        assert len(listed) == 1 and "SUCCEEDED" in listed[0], listed

        page = f"{base}#/job/{jid}"
        dom = browse(page, "--dump-dom")
        title = re.search(r'<h1 id="job-title">(.*?)</h1>', dom, re.S)
        assert title and jid in title.group(1) and "SUCCEEDED" in title.group(1), \
            dom[-3000:]
        ranks = re.findall(r'<tr data-rank="(\d+)">', dom)
        assert sorted(ranks) == ["0", "1"], ranks
        assert "bound by" in dom, "no bounding phase on the page"
        curves = {c: int(n) for c, n in re.findall(
            r'<path class="curve (\w+)" d="M[^"]*" data-points="(\d+)"', dom)}
        assert curves.get("loss", 0) == 150 and curves.get("speed", 0) == 150, curves
        assert curves.get("accuracy", 0) == 3, curves
        evals = rows(dom, "eval")
        assert len(evals) == 3 and all("%" in e for e in evals), evals
        history = rows(dom, "history")
        assert [s for r in history for s in re.findall(
            r'class="state (\w+)"', r)] == ["PENDING", "RENDEZVOUS", "RUNNING",
                                             "SUCCEEDED"], history
        log = re.search(r'<pre id="log">(.*?)</pre>', dom, re.S)
        assert log and "[rank 0]" in log.group(1) and "[rank 1]" in log.group(
            1) and "test accuracy" in log.group(1), dom[-3000:]
        print(f"dashboard_e2e: {jid}'s page shows SUCCEEDED, ranks 0 and 1, "
              f"curves {curves} (points), 3 evaluations, 4 transitions and "
              f"{log.group(1).count(chr(10))} log lines of both ranks")

        shot = os.path.join(work, "dashboard.png")
        browse(page, f"--screenshot={shot}")
        assert os.path.getsize(shot) > 10000, "screenshot too small"
        print(f"dashboard_e2e: screenshot {shot}")

        dom = browse(f"{base}#/job/job-999999", "--dump-dom")
        error = re.search(r'<p class="stall" id="error">(.*?)</p>', dom, re.S)
        assert error and "job-999999" in error.group(1), dom[-2000:]
        print(f"dashboard_e2e: an unknown job shows: {error.group(1)}")
        ok = True
    finally:
        if not ok:
            cluster.dump_logs()
        cluster.stop()
    print("dashboard_e2e: PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
