#!/usr/bin/python3
"""A real Prometheus (Debian's package) scrapes a coordinator's /metrics
while two gradsync-worker processes train fashion_cnn on a subset of the
real Fashion-MNIST, and the test reads the gradsync series back through
Prometheus's own HTTP API: the scrape target is up (over HTTPS, as the
coordinator serves TLS, with the read-only metrics token, which the port
demands), both ranks' steps were recorded while the job ran,
the job's evaluation accuracy is the one `gradsync status` reports, and
the coordinator's gRPC calls are counted. Without the `prometheus` binary
it exits 77 (skipped), saying why.

Usage: prometheus_e2e.py BIN_DIR WORK_DIR DATA_DIR (DATA_DIR as
e2e_train.py's WORK_DIR: Fashion-MNIST is fetched there once)."""
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_train import (METRICS_TOKEN, USER_TOKEN, Cluster,  # noqa: E402
                       prepare_subset)

SKIP = 77


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, token=None, timeout=10, ca_file=None):
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    context = ssl.create_default_context(cafile=ca_file) if ca_file else None
    with urllib.request.urlopen(request, timeout=timeout,
                                context=context) as response:
        return response.status, response.read().decode()


class Prometheus:
    """A Prometheus server in `work` scraping `target` 4 times a second (a
    short job's ranks are RUNNING for a few seconds only)."""

    def __init__(self, work, target, token, ca_file):
        self.port = free_port()
        token_file = os.path.join(work, "scrape-token")
        with open(token_file, "w") as f:
            f.write(token)
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write(f"""global:
  scrape_interval: 250ms
  scrape_timeout: 250ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: gradsync
    scheme: https
    tls_config:
      ca_file: {ca_file}
    authorization:
      type: Bearer
      credentials_file: {token_file}
    static_configs:
      - targets: ["{target}"]
""")
        self.log = open(os.path.join(work, "prometheus.log"), "w+")
        self.proc = subprocess.Popen(
            [shutil.which("prometheus"), f"--config.file={config}",
             f"--storage.tsdb.path={work}/tsdb",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_ready(60)

    def wait_ready(self, deadline_s):
        end = time.time() + deadline_s
        while time.time() < end:
            try:
                if http_get(self.url("/-/ready"))[0] == 200:
                    return
            except (urllib.error.URLError, ConnectionError):
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.5)
        self.dump_log()
        raise AssertionError("prometheus did not become ready")

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def query(self, promql):
        """The instant vector of `promql`, as [(labels, value)]."""
        _, body = http_get(self.url("/api/v1/query?" + urllib.parse.urlencode(
            {"query": promql})))
        answer = json.loads(body)
        assert answer["status"] == "success", answer
        return [(r["metric"], float(r["value"][1]))
                for r in answer["data"]["result"]]

    def wait_query(self, promql, ok, deadline_s, what):
        end = time.time() + deadline_s
        result = []
        while time.time() < end:
            result = self.query(promql)
            if ok(result):
                return result
            time.sleep(1)
        raise AssertionError(f"{what}: {promql} gave {result}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def dump_log(self):
        self.log.flush()
        self.log.seek(0)
        print("---- prometheus.log (tail) ----")
        print("".join(self.log.readlines()[-30:]))


def main():
    if shutil.which("prometheus") is None:
        print("skipped: no prometheus binary (deploy/install-deps.sh "
              "installs Debian's package)")
        return SKIP
    bin_dir, work, data = (os.path.abspath(a) for a in sys.argv[1:4])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    subset = prepare_subset(bin_dir, data)
    cluster = Cluster(bin_dir, work,
                      coordinator_args=["--http-listen", "127.0.0.1:0"])
    prometheus = None
    ok = False
    try:
        target = f"127.0.0.1:{cluster.http_port}"
        ca_file = os.path.join(cluster.tls, "ca.pem")
        # The port speaks HTTPS and wants a token: the metrics token or the
        # user token (over TLS only).
        try:
            http_get(f"https://{target}/metrics", ca_file=ca_file)
            raise AssertionError("/metrics answered without a token")
        except urllib.error.HTTPError as e:
            assert e.code == 401, e
        for token in (METRICS_TOKEN, USER_TOKEN):
            status, _ = http_get(f"https://{target}/metrics", token,
                                 ca_file=ca_file)
            assert status == 200, (token, status)
        try:
            http_get(f"http://{target}/metrics", METRICS_TOKEN, timeout=5)
            raise AssertionError("/metrics answered over plain HTTP")
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        prometheus = Prometheus(work, target, METRICS_TOKEN, ca_file)
        prometheus.wait_query('up{job="gradsync"}',
                              lambda r: r and r[0][1] == 1, 30,
                              "the scrape target is not up")
        print(f"prometheus_e2e: Prometheus on port {prometheus.port} scrapes "
              f"https://{target}/metrics with the metrics token")
        cluster.wait_workers("WORKER_STATE_IDLE")
        prometheus.wait_query('gradsync_workers{state="IDLE"}',
                              lambda r: r and r[0][1] == 2, 30,
                              "2 idle workers not seen")
        job = json.loads(cluster.cli(
            "--json", "submit", "--name", "prom", "--dataset", subset,
            "--eval-split", "test", "--model", "fashion_cnn", "--epochs", "3",
            "--batch-size", "25", "-n", "2").stdout)
        jid = job["id"]
        watch = cluster.cli("watch", jid, timeout=600, check=False)
        assert watch.returncode == 0, f"watch: {watch.stderr}"
        done = json.loads(cluster.cli("--json", "status", jid).stdout)
        assert done["state"] == "JOB_STATE_SUCCEEDED", done["message"]
        accuracy = done["metrics"]["eval"][-1]["accuracy"]
        prometheus.wait_query(
            f'gradsync_job_info{{job_id="{jid}",state="SUCCEEDED"}}',
            lambda r: len(r) == 1, 30, "the job's end not seen")
        scraped = prometheus.query(f'gradsync_job_eval_accuracy{{job_id="{jid}"}}')
        assert len(scraped) == 1, scraped
        assert abs(scraped[0][1] - accuracy) < 1e-9, (scraped, accuracy)
        assert scraped[0][0]["epoch"] == "2", scraped
        # Rank series exist while the job runs; Prometheus keeps what it
        # scraped then.
        last = prometheus.query(
            f'max_over_time(gradsync_rank_step{{job_id="{jid}"}}[10m])')
        assert sorted(m["rank"] for m, _ in last) == ["0", "1"], last
        assert all(v > 0 for _, v in last), last
        beats = prometheus.query(
            'gradsync_grpc_server_handled_total{method='
            '"/gradsync.v1.WorkerService/Heartbeat",code="OK"}')
        assert beats and beats[0][1] > 0, beats
        p99 = prometheus.query(
            'histogram_quantile(0.99, rate(gradsync_grpc_server_handling_'
            'seconds_bucket{method="/gradsync.v1.WorkerService/Heartbeat"}'
            '[1m]))')
        print(f"prometheus_e2e: job {jid} SUCCEEDED; Prometheus has its "
              f"accuracy {scraped[0][1]:.4f} (as `gradsync status`), the last "
              f"steps {[int(v) for _, v in last]}, {beats[0][1]:.0f} "
              f"heartbeats served, heartbeat p99 "
              f"{p99[0][1] * 1000 if p99 else float('nan'):.1f} ms")
        ok = True
    finally:
        if prometheus:
            if not ok:
                prometheus.dump_log()
            prometheus.stop()
        if not ok:
            cluster.dump_logs()
        cluster.stop()
    print("prometheus_e2e: PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
