#!/usr/bin/python3
"""gradsync on a real Slurm cluster (Debian's munge, slurmctld and slurmd,
one node: this machine): `sbatch --ntasks 2 deploy/slurm/gradsync.sbatch`
with a subset of the real Fashion-MNIST must end with the gradsync job
SUCCEEDED, both workers exiting by themselves (--job), the test accuracy
above MIN_ACCURACY, and the allocation released (the Slurm job COMPLETED,
no job left in the queue, the node idle again).

The cluster is private to the test: its own munge key and socket, its own
slurm.conf, spool and state directories, and ports chosen here; nothing in
/etc is changed. It needs root (slurmd launches the tasks) and the packages
(`deploy/slurm/install-slurm.sh`); without them it exits 77, which ctest
reports as skipped, after saying why.

Usage: slurm_e2e.py BIN_DIR WORK_DIR DATA_DIR (DATA_DIR as e2e_train.py's
WORK_DIR: Fashion-MNIST is fetched there once)."""
import os
import re
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_train import MIN_ACCURACY, prepare_subset  # noqa: E402

SKIP = 77
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def skip_reason():
    if os.geteuid() != 0:
        return "needs root (slurmd launches the tasks)"
    for tool in ("munged", "mungekey", "slurmctld", "slurmd", "sbatch"):
        if shutil.which(tool) is None and not os.path.exists(
                f"/usr/sbin/{tool}"):
            return f"{tool} not found (deploy/slurm/install-slurm.sh installs it)"
    return None


def tool(name):
    return shutil.which(name) or f"/usr/sbin/{name}"


class SlurmCluster:
    """munged, slurmctld and slurmd for one node (this host), in `work`."""

    def __init__(self, work):
        self.work = work
        self.procs = []
        self.node = socket.gethostname()
        munge = os.path.join(work, "munge")
        os.makedirs(munge, mode=0o700, exist_ok=True)
        self.munge_socket = os.path.join(munge, "munge.socket")
        key = os.path.join(munge, "munge.key")
        if not os.path.exists(key):
            subprocess.run([tool("mungekey"), "--create", "--keyfile", key],
                           check=True)
        os.chmod(key, 0o600)
        subprocess.run([
            tool("munged"), "--force", f"--socket={self.munge_socket}",
            f"--key-file={key}", f"--pid-file={munge}/munged.pid",
            f"--log-file={munge}/munged.log",
            f"--seed-file={munge}/munged.seed"], check=True)
        self.munged_pid = os.path.join(munge, "munged.pid")
        for d in ("ctld", "spool", "log"):
            os.makedirs(os.path.join(work, d), exist_ok=True)
        cpus = os.cpu_count()
        self.conf = os.path.join(work, "slurm.conf")
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=gradsync-test
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={work}/ctld
SlurmdSpoolDir={work}/spool
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd.pid
SlurmctldLogFile={work}/log/slurmctld.log
SlurmdLogFile={work}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes={self.node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
""")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        for daemon in ("slurmctld", "slurmd"):
            log = open(os.path.join(work, "log", f"{daemon}.out"), "w")
            args = [tool(daemon), "-D", "-f", self.conf]
            if daemon == "slurmctld":
                args.append("-i")  # ignore state from an earlier run
            self.procs.append(subprocess.Popen(
                args, env=self.env, stdout=log, stderr=subprocess.STDOUT))
        self.wait_node("idle", 60)

    def run(self, *args, check=True):
        return subprocess.run(list(args), env=self.env, check=check,
                              capture_output=True, text=True)

    def node_state(self):
        return self.run("sinfo", "-h", "-n", self.node, "-o", "%T",
                        check=False).stdout.strip()

    def wait_node(self, state, deadline_s):
        end = time.time() + deadline_s
        while time.time() < end:
            if self.node_state() == state:
                return
            time.sleep(0.5)
        self.dump_logs()
        raise AssertionError(f"node {self.node} is '{self.node_state()}', "
                             f"not {state}, after {deadline_s} s")

    def dump_logs(self):
        for name in sorted(os.listdir(os.path.join(self.work, "log"))):
            with open(os.path.join(self.work, "log", name)) as f:
                print(f"---- {name} (last lines)\n" +
                      "".join(f.readlines()[-40:]))

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        if os.path.exists(self.munged_pid):
            subprocess.run([tool("munged"), "--stop",
                            f"--socket={self.munge_socket}"], check=False)


def main():
    reason = skip_reason()
    if reason:
        print(f"slurm_e2e: SKIPPED: {reason}")
        return SKIP
    bin_dir, work, data = (os.path.abspath(a) for a in sys.argv[1:4])
    subset = prepare_subset(bin_dir, data)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cluster = SlurmCluster(os.path.join(work, "slurm"))
    ok = False
    try:
        env = dict(cluster.env, GRADSYNC_BIN=bin_dir,
                   GRADSYNC_PORT=str(free_port()))
        env = {k: v for k, v in env.items()
               if k not in ("GRADSYNC_COORDINATOR", "GRADSYNC_TOKEN",
                            "GRADSYNC_TOKEN_DIR")}
        start = time.time()
        sbatch = subprocess.run(
            ["sbatch", "--wait", "--parsable", "--ntasks", "2",
             "--chdir", work, "--output", os.path.join(work, "job-%j.out"),
             os.path.join(REPO, "deploy", "slurm", "gradsync.sbatch"),
             "--dataset", subset, "--eval-split", "test",
             "--model", "fashion_cnn", "--epochs", "1", "--batch-size", "50"],
            env=env, cwd=work, capture_output=True, text=True, timeout=900)
        took = time.time() - start
        slurm_job = sbatch.stdout.strip().split(";")[0]
        out_path = os.path.join(work, f"job-{slurm_job}.out")
        output = open(out_path).read() if os.path.exists(out_path) else ""
        print(output)
        assert sbatch.returncode == 0, (
            f"sbatch exit {sbatch.returncode}: {sbatch.stderr}")
        assert re.search(r"job job-\d+ SUCCEEDED", output), output
        # Both workers left by themselves once the job had SUCCEEDED.
        exits = re.findall(r"^\d+: .*exiting: job job-\d+ SUCCEEDED", output,
                           re.M)
        assert len(exits) == 2, f"worker exits seen: {exits}"
        accuracy = [float(a) for a in re.findall(
            r"accuracy (\d+\.\d+)%", output)]
        assert accuracy and accuracy[-1] / 100 >= MIN_ACCURACY, (
            f"accuracy {accuracy} below {MIN_ACCURACY:.0%}")
        # The allocation is released: the Slurm job completed, nothing is
        # queued and the node is idle again.
        show = cluster.run("scontrol", "show", "job", slurm_job,
                           check=False).stdout
        assert "JobState=COMPLETED" in show, show
        queue = cluster.run("squeue", "-h").stdout.strip()
        assert queue == "", f"still queued: {queue}"
        cluster.wait_node("idle", 30)
        print(f"slurm_e2e: Slurm job {slurm_job} COMPLETED in "
              f"{took:.0f} s, test accuracy {accuracy[-1]:.2f}%, node idle")

        # Workers that cannot start: the script cancels the gradsync job
        # instead of waiting for them until the time limit, exits non-zero,
        # and the allocation is released all the same.
        broken = os.path.join(work, "broken-bin")
        os.makedirs(broken)
        for name in ("gradsync", "gradsync-coordinator"):
            os.symlink(os.path.join(bin_dir, name), os.path.join(broken, name))
        with open(os.path.join(broken, "gradsync-worker"), "w") as f:
            f.write("#!/bin/sh\necho 'gradsync-worker: cannot start' >&2\n"
                    "exit 3\n")
        os.chmod(os.path.join(broken, "gradsync-worker"), 0o755)
        failed = subprocess.run(
            ["sbatch", "--wait", "--parsable", "--ntasks", "2",
             "--chdir", work, "--output", os.path.join(work, "job-%j.out"),
             os.path.join(REPO, "deploy", "slurm", "gradsync.sbatch"),
             "--dataset", subset, "--model", "fashion_cnn",
             "--batch-size", "50"],
            env=dict(env, GRADSYNC_BIN=broken), cwd=work,
            capture_output=True, text=True, timeout=300)
        failed_job = failed.stdout.strip().split(";")[0]
        output = open(os.path.join(work, f"job-{failed_job}.out")).read()
        assert failed.returncode != 0, output
        assert "before job job-000001 ended; cancelling it" in output, output
        assert re.search(r"State: +CANCELLED", output), output
        assert cluster.run("squeue", "-h").stdout.strip() == ""
        cluster.wait_node("idle", 30)
        print(f"slurm_e2e: PASSED (workers that cannot start: Slurm job "
              f"{failed_job} exit {failed.returncode}, gradsync job "
              "CANCELLED, node idle)")
        ok = True
    finally:
        if not ok:
            cluster.dump_logs()
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
