#!/usr/bin/python3
"""A user's own TorchScript model through a real coordinator and two
workers (issue 40, part 2):

  * `gradsync submit --model-file net.pt` uploads the file (content-
    addressed; the same bytes twice are kept once) and the job trains it;
  * `gradsync model files` lists it with the job using it, and deleting it
    is refused while that job exists;
  * the pulled state_dict loads with strict=True into the Python module and
    evaluates in PyTorch to the job's reported accuracy (within 0.1 points);
    `model pull --format torchscript` gives the trained module, which
    torch.jit.load reads and which computes what that state_dict does;
  * hostile model files (a __setstate__ that writes a file when loaded, a
    forward that saves a tensor, a module traced in eval mode) fail their
    job at once, without restarts, naming the reason; nothing is written,
    and the same workers then train a good job;
  * the same images as tensor files (<dir>/<split>.pt) and as WebDataset
    shards (gradsync data to-shards) train through the coordinator to the
    folder job's accuracy;
  * what the checks cannot bound is bounded while the model runs: a forward
    that holds more than the workers' --memory-limit-mb fails its job with
    RESOURCE_EXHAUSTED and the workers stay up; a forward that never ends
    fails its job at the step timeout, naming the step, and its workers
    exit (code 70) for their supervisor, here this test, to restart; the
    restarted workers train a good job.

Usage: model_file_e2e.py BIN_DIR WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys
import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "parity"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "worker",
                                "model"))
from e2e_train import Cluster  # noqa: E402
# Its __setstate__ writes a file when torch.jit.load runs it.
from make_model_files import Hooked, Hungry, Spins  # noqa: E402
from script_model_parity import (Net, accuracy, make_folder,  # noqa: E402
                                 same_outputs)
from data_format_parity import folder_to_tensors  # noqa: E402


class SavesInForward(torch.nn.Module):
    def __init__(self, path: str):
        super().__init__()
        self.fc = torch.nn.Linear(28 * 28, 10)
        self.path = path

    def forward(self, x):
        torch.save(x, self.path)
        return self.fc(x.flatten(1))


def status(cluster, job):
    return json.loads(cluster.cli("--json", "status", job).stdout)


def submit(cluster, data, model_file, name, *flags):
    out = cluster.cli("--json", "submit", "--name", name, "--dataset", data,
                      "--eval-split", "test", "--model-file", model_file,
                      "--batch-size", "20", "-n", "2", *flags).stdout
    return json.loads(out)["id"]


def failed_job(cluster, data, model_file, name, *flags):
    """Submits `model_file`, waits for the job to end; its status, which
    must be FAILED after one attempt."""
    job = submit(cluster, data, model_file, name, *flags)
    cluster.cli("watch", job, timeout=300, check=False)
    failed = status(cluster, job)
    assert failed["state"] == "JOB_STATE_FAILED", failed
    assert len(failed.get("attempts", [])) == 1, failed["attempts"]
    return failed


def check_limits(cluster, work, data):
    """The memory limit and the step timeout, each failing its job; then
    the workers (restarted where the timeout ended them) train again."""
    hungry = os.path.join(work, "hungry.pt")  # 1 GiB a forward
    torch.jit.save(torch.jit.script(Hungry(1 << 28, 28 * 28, 10)), hungry)
    failed = failed_job(cluster, data, hungry, "hungry", "--max-restarts", "0")
    assert "RESOURCE_EXHAUSTED" in failed["message"], failed["message"]
    assert "over its memory limit of 256.0 MiB" in failed["message"], failed
    assert all(p.poll() is None for p in cluster.workers_procs)
    print(f"model_file_e2e: hungry.pt failed, the workers stay up: "
          f"{failed['message'][:240]}")

    loops = os.path.join(work, "loops.pt")
    torch.jit.save(torch.jit.script(Spins(-1, 28 * 28, 10)), loops)
    running = list(cluster.workers_procs)
    failed = failed_job(cluster, data, loops, "loops", "--max-restarts", "0",
                        "--step-timeout-ms", "3000")
    assert "DEADLINE_EXCEEDED: step deadline: rank" in failed["message"], \
        failed["message"]
    assert "ran longer than 3s" in failed["message"], failed["message"]
    codes = [p.wait(timeout=60) for p in running]
    assert codes == [70, 70], codes
    print(f"model_file_e2e: loops.pt failed at the step timeout, both "
          f"workers exited with {codes}: {failed['message'][:240]}")
    # The supervisor's part (compose's restart: unless-stopped).
    for _ in running:
        cluster.start_worker()
    cluster.cli("workers", "--wait", "2", "--timeout", "60")


def main():
    bin_dir, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    data = os.path.join(work, "data")
    make_folder(data, per_class_train=40, per_class_test=10)
    torch.manual_seed(0)
    net_file = os.path.join(work, "net.pt")
    torch.jit.save(torch.jit.script(Net()), net_file)

    pwned = os.path.join(work, "pwned")
    leak = os.path.join(work, "leak")
    hostile = {
        "setstate.pt": (torch.jit.script(Hooked(pwned)),
                        "__setstate__"),
        "save_forward.pt": (torch.jit.script(SavesInForward(leak)),
                            "aten::save"),
        "traced.pt": (torch.jit.trace(Net(0.25).eval(),
                                      torch.rand(2, 1, 28, 28)),
                      "with a constant 'train"),
    }
    for name, (module, _) in hostile.items():
        torch.jit.save(module, os.path.join(work, name))

    cluster = Cluster(bin_dir, work, workers=2, secure=False,
                      worker_args=["--memory-limit-mb", "256"])
    ok = False
    try:
        cluster.cli("workers", "--wait", "2", "--timeout", "60")
        job = submit(cluster, data, net_file, "own-model")
        cluster.cli("watch", job, timeout=300)
        done = status(cluster, job)
        assert done["state"] == "JOB_STATE_SUCCEEDED", done["message"]
        digest = done["spec"]["model_file_sha256"]
        assert done["spec"]["model"] == "net.pt", done["spec"]
        reported = 100 * done["metrics"]["eval"][-1]["accuracy"]

        files = json.loads(cluster.cli("--json", "model", "files").stdout)
        listed = {f["sha256"]: f for f in files["files"]}
        assert listed[digest]["jobs"] == [job], listed
        refused = cluster.cli("model", "files", "delete", digest, check=False)
        assert refused.returncode != 0 and job in refused.stderr, refused
        print(f"model_file_e2e: {digest[:12]} listed with {job}; delete "
              f"refused: {refused.stderr.strip()}")

        state = os.path.join(work, "state.pt")
        cluster.cli("model", "pull", job, "--state-dict", "-o", state)
        pulled = Net()
        pulled.load_state_dict(torch.load(state, weights_only=True),
                               strict=True)
        evaluated = accuracy(pulled, data)
        assert abs(evaluated - reported) <= 0.1, (evaluated, reported)
        print(f"model_file_e2e: the pulled state_dict loads strictly; "
              f"PyTorch evaluates it to {evaluated:.2f}%, the job reported "
              f"{reported:.2f}%")
        scripted = os.path.join(work, "trained.pt")
        cluster.cli("model", "pull", job, "--format", "torchscript", "-o",
                    scripted)
        assert same_outputs(scripted, pulled, data)
        print("model_file_e2e: model pull --format torchscript: "
              "torch.jit.load gives the state_dict's outputs")

        for name, (_, says) in hostile.items():
            bad = submit(cluster, data, os.path.join(work, name), name)
            cluster.cli("watch", bad, timeout=300, check=False)
            failed = status(cluster, bad)
            assert failed["state"] == "JOB_STATE_FAILED", failed
            assert says in failed["message"], failed["message"]
            assert len(failed.get("attempts", [])) == 1, failed["attempts"]
            print(f"model_file_e2e: {name} refused without restarts: "
                  f"{failed['message'][:200]}")
        assert not os.path.exists(pwned) and not os.path.exists(leak)
        check_limits(cluster, work, data)

        # The same images as tensor files and as shards (issue 41): the
        # coordinator counts them, the workers train them to the folder
        # job's accuracy.
        tensors = os.path.join(work, "tensors")
        shards = os.path.join(work, "shards")
        os.makedirs(tensors)
        for split in ("train", "test"):
            folder_to_tensors(data, tensors, split)
            subprocess.run([os.path.join(bin_dir, "gradsync"), "data",
                            "to-shards", os.path.join(data, split),
                            os.path.join(shards, split), "--shard-size",
                            "150"], check=True, capture_output=True)
        for kind, path in (("tensor files", tensors), ("shards", shards)):
            job_id = submit(cluster, path, net_file, "own-data")
            cluster.cli("watch", job_id, timeout=300)
            done = status(cluster, job_id)
            assert done["state"] == "JOB_STATE_SUCCEEDED", done["message"]
            assert done["train_samples"] == "400", done
            same = 100 * done["metrics"]["eval"][-1]["accuracy"]
            assert same == reported, (kind, same, reported)
            print(f"model_file_e2e: the same images as {kind}: "
                  f"{done['train_samples']} samples counted, test accuracy "
                  f"{same:.2f}% as the folder job's")

        # The same workers, alive and idle, train again; the same bytes
        # upload to the same file.
        again = submit(cluster, data, net_file, "again")
        cluster.cli("watch", again, timeout=300)
        assert status(cluster, again)["state"] == "JOB_STATE_SUCCEEDED"
        files = json.loads(cluster.cli("--json", "model", "files").stdout)
        assert len([f for f in files["files"] if f["sha256"] == digest]) == 1
        print("model_file_e2e: the workers trained a good job after the "
              "refusals and the restarts; the file was stored once")
        ok = True
    finally:
        cluster.stop()
        if not ok:
            cluster.dump_logs()


if __name__ == "__main__":
    main()
