#!/usr/bin/python3
"""The Python client (issue 42) against a real coordinator (TLS, tokens)
and two workers from the build, through the package only:

  * submit fashion_cnn, wait with the progress output captured, load the
    pulled state_dict strictly into gradsync.models' FashionCNN and
    evaluate it in PyTorch to the job's accuracy (within 0.1 points);
  * a torch.nn.Module scripted and uploaded by submit(); one TorchScript
    cannot compile raises before anything is sent; a file scripted by a
    newer PyTorch than the workers' LibTorch is refused naming both;
  * INVALID_ARGUMENT for a bad spec (naming the field), NOT_FOUND for an
    unknown job, UNAUTHENTICATED with a wrong token;
  * a job that fails raises JobFailed from wait() with the failing rank's
    log lines; wait(timeout=) gives up with DEADLINE_EXCEEDED and Ctrl-C
    (SIGINT) ends wait() with the status, the job going on both times; a
    running job is cancelled.

Usage: client_test.py BIN_DIR PYTHON_PACKAGE_DIR WORK_DIR"""
import io
import os
import shutil
import signal
import sys
import threading
import time

bin_dir, package_dir, work = sys.argv[1:4]
sys.path.insert(0, package_dir)  # build/python: the package and its stubs
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "integration"))
sys.path.insert(0, os.path.join(here, "..", "parity"))

import grpc  # noqa: E402
import torch  # noqa: E402

import gradsync  # noqa: E402
from e2e_train import USER_TOKEN, Cluster  # noqa: E402
from script_model_parity import Net, accuracy, make_folder  # noqa: E402


class SavesInForward(torch.nn.Module):
    """Refused by the workers' checks (aten::save): the job fails."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(28 * 28, 10)

    def forward(self, x):
        torch.save(x, "/tmp/gradsync-client-test-leak")
        return self.fc(x.flatten(1))


class NotScriptable(torch.nn.Module):
    def forward(self, x):
        return {1: x}[1] if isinstance(x, list) else x.numpy()


def expect_error(code, call, says=""):
    try:
        call()
    except gradsync.GradsyncError as e:
        assert e.code == code, (e.code, e)
        assert says in e.message, e
        return e
    raise AssertionError(f"no {code.name} raised")


def main():
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    data = os.path.join(work, "data")
    make_folder(data, per_class_train=40, per_class_test=10)
    with Cluster(bin_dir, work, workers=2, secure=True) as cluster:
        ca = os.path.join(cluster.tls, "ca.pem")
        client = gradsync.connect(cluster.address, token=USER_TOKEN, tls_ca=ca)
        deadline = time.time() + 60
        while len(client.workers()) < 2:
            assert time.time() < deadline, client.workers()
            time.sleep(0.5)

        bad = expect_error(grpc.StatusCode.INVALID_ARGUMENT,
                           lambda: client.submit(model="fashion_cnn",
                                                 dataset=data, batch_size=0),
                           "batch_size")
        lost = expect_error(grpc.StatusCode.NOT_FOUND,
                            lambda: client.job("job-999999"))
        stranger = gradsync.connect(cluster.address, token="wrong", tls_ca=ca)
        denied = expect_error(grpc.StatusCode.UNAUTHENTICATED,
                              stranger.jobs, "wrong token")
        print(f"client_test: errors carry code and message: {bad}; {lost}; "
              f"{denied}")

        job = client.submit(model="fashion_cnn", dataset=data,
                            eval_split="test", epochs=1, batch_size=20,
                            workers=2, name="from-python")
        shown = io.StringIO()
        final = job.wait(progress=True, out=shown)
        assert final["state"] == "JOB_STATE_SUCCEEDED", final
        text = shown.getvalue()
        assert "rank 0" in text and "eval epoch 1" in text, text
        reported = 100 * final["metrics"]["eval"][-1]["accuracy"]
        net = gradsync.models.create("fashion_cnn")
        net.load_state_dict(job.state_dict(), strict=True)
        evaluated = accuracy(net, data)
        assert abs(evaluated - reported) <= 0.1, (evaluated, reported)
        assert [s["step"] for s in job.snapshots()], job.snapshots()
        assert any("rank 0" in line for line in job.logs()), "no log lines"
        assert job.curves()["train"], job.curves()
        ranks = sorted(r.get("rank", 0) for r in job.metrics()["ranks"])
        assert ranks == [0, 1], job.metrics()
        try:
            import pandas  # noqa: F401
            frame = job.metrics_frame()
            assert sorted(frame["rank"].fillna(0)) == [0, 1], frame
        except ImportError:
            print("client_test: no pandas here: metrics_frame() not tried")
        print(f"client_test: {job.id} waited ({len(text.splitlines())} "
              f"progress lines); the pulled state_dict loads strictly and "
              f"evaluates to {evaluated:.2f}%, the job reported "
              f"{reported:.2f}%")

        try:
            client.submit(model=NotScriptable(), dataset=data, batch_size=20)
            raise AssertionError("an unscriptable module was sent")
        except gradsync.GradsyncError:
            raise
        except Exception as e:  # TorchScript's own error, nothing sent
            print(f"client_test: an unscriptable module raises "
                  f"{type(e).__name__} before anything is sent")
        future = os.path.join(work, "future.pt")
        torch.jit.save(torch.jit.script(Net()), future,
                       _extra_files={"gradsync_pytorch_version": "99.1.0"})
        newer = expect_error(grpc.StatusCode.FAILED_PRECONDITION,
                             lambda: client.submit(model=future, dataset=data,
                                                   batch_size=20),
                             "scripted by PyTorch 99.1.0, newer than "
                             "LibTorch 1.")
        print(f"client_test: {newer}")
        torch.manual_seed(0)
        own = client.submit(model=Net(), dataset=data, eval_split="test",
                            epochs=1, batch_size=20, workers=2)
        final = own.wait(progress=False)
        assert final["state"] == "JOB_STATE_SUCCEEDED", final
        Net().load_state_dict(own.state_dict(), strict=True)
        print(f"client_test: a torch.nn.Module was scripted, uploaded "
              f"({final['spec']['model_file_sha256'][:12]}) and trained; "
              f"its weights load strictly into the module")

        failing = client.submit(model=SavesInForward(), dataset=data,
                                batch_size=20, workers=2)
        try:
            failing.wait(progress=False)
            raise AssertionError("wait() returned for a FAILED job")
        except gradsync.JobFailed as e:
            assert "aten::save" in str(e), e
            assert e.log_lines, e
            print(f"client_test: wait() raised JobFailed: "
                  f"{str(e).splitlines()[0][:160]}")

        long = client.submit(model="fashion_cnn", dataset=data, epochs=50,
                             batch_size=20, workers=2)
        deadline = time.time() + 120
        while long.state != "RUNNING":
            assert time.time() < deadline, long.status()
            time.sleep(0.2)
        expect_error(grpc.StatusCode.DEADLINE_EXCEEDED,
                     lambda: long.wait(progress=False, timeout=0.5),
                     "had not ended after 0.5 s")
        # Ctrl-C while waiting (as in a notebook or a terminal) stops the
        # waiting, not the job: wait() returns the status.
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        shown = io.StringIO()
        began = time.monotonic()
        status = long.wait(progress=True, out=shown)
        waited = time.monotonic() - began
        assert status["state"] == "JOB_STATE_RUNNING", status
        assert f"stopped waiting for {long.id}; the job goes on" in \
            shown.getvalue(), shown.getvalue()
        assert long.state == "RUNNING", long.status()
        print(f"client_test: Ctrl-C after 1 s ended wait() in {waited:.1f} s; "
              f"{long.id} still running")
        long.cancel("enough")
        deadline = time.time() + 60
        while long.state != "CANCELLED":
            assert time.time() < deadline, long.status()
            time.sleep(0.2)
        print(f"client_test: {long.id} cancelled while running")


if __name__ == "__main__":
    main()
