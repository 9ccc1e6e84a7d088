"""A client of a gradsync coordinator: submit, watch and pull from Python.

    import gradsync
    client = gradsync.connect()               # GRADSYNC_COORDINATOR, token, TLS
    job = client.submit(model="fashion_cnn", dataset="data/fashion-mnist",
                        eval_split="test", epochs=1, batch_size=100, workers=2)
    job.wait()                                # progress per rank; raises if FAILED
    net = gradsync.models.create("fashion_cnn")
    net.load_state_dict(job.state_dict())     # strict: the job's own names

`model` may also be a TorchScript file or a torch.nn.Module, scripted and
uploaded here. Every refusal raises GradsyncError with the gRPC status code
and the coordinator's message. Thread safety: a Client may be shared; a
Job's wait() is for one thread.
"""
import hashlib
import io
import os
import re
import sys
import time
from typing import Dict, Iterator, List, Optional, Union

import grpc
from google.protobuf import json_format

from gradsync.errors import GradsyncError, JobFailed

try:
    from gradsync.v1 import job_pb2, job_service_pb2, job_service_pb2_grpc
    from gradsync.v1 import model_file_pb2, snapshot_pb2
except ImportError as e:
    raise ImportError(
        "gradsync's gRPC stubs (gradsync.v1) are missing: install the package "
        "(pip install --no-build-isolation ./python) or generate them with "
        "python/build_stubs.py") from e

__all__ = ["Client", "Job", "connect", "BUILTIN_MODELS"]

BUILTIN_MODELS = ("fashion_cnn", "lenet", "resnet18", "mlp")
_CHUNK = 1 << 20
_TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _escape(text: str) -> str:
    """A line from a worker, safe for a terminal or notebook."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _read_token(token: Optional[str]) -> str:
    if token is not None:
        return token
    if os.environ.get("GRADSYNC_TOKEN"):
        return os.environ["GRADSYNC_TOKEN"]
    for path in (os.environ.get("GRADSYNC_TOKEN_FILE"),
                 os.environ.get("GRADSYNC_TOKEN_DIR") and
                 os.path.join(os.environ["GRADSYNC_TOKEN_DIR"], "user-token")):
        if path and os.path.exists(path):
            with open(path) as f:
                return f.read().strip()
    return ""


def _read(path: Optional[str]) -> Optional[bytes]:
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def connect(address: Optional[str] = None, token: Optional[str] = None,
            tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
            tls_key: Optional[str] = None, server_name: Optional[str] = None,
            timeout: float = 60.0) -> "Client":
    """A client of the coordinator at `address` (host:port).

    Unset arguments come from the environment as the CLI reads it:
    GRADSYNC_COORDINATOR (default localhost:50051), GRADSYNC_TOKEN (or
    GRADSYNC_TOKEN_FILE, or GRADSYNC_TOKEN_DIR/user-token), GRADSYNC_TLS_CA
    (TLS when set), GRADSYNC_TLS_CLIENT_CERT and GRADSYNC_TLS_CLIENT_KEY
    (mutual TLS), GRADSYNC_TLS_SERVER_NAME. `timeout`: seconds per call
    (streams that follow a job have none)."""
    env = os.environ.get
    address = address or env("GRADSYNC_COORDINATOR") or "localhost:50051"
    ca = tls_ca or env("GRADSYNC_TLS_CA")
    options = []
    name = server_name or env("GRADSYNC_TLS_SERVER_NAME")
    if name:
        options.append(("grpc.ssl_target_name_override", name))
    if ca:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_read(ca),
            private_key=_read(tls_key or env("GRADSYNC_TLS_CLIENT_KEY")),
            certificate_chain=_read(tls_cert or env("GRADSYNC_TLS_CLIENT_CERT")))
        channel = grpc.secure_channel(address, credentials, options)
    else:
        channel = grpc.insecure_channel(address, options)
    return Client(channel, _read_token(token), timeout)


class Client:
    """Calls on one coordinator. Made by connect()."""

    def __init__(self, channel: grpc.Channel, token: str, timeout: float):
        self._channel = channel
        self._stub = job_service_pb2_grpc.JobServiceStub(channel)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.timeout = timeout

    def _call(self, method: str, request, timeout: Optional[float] = -1):
        try:
            return getattr(self._stub, method)(
                request, metadata=self._metadata,
                timeout=self.timeout if timeout == -1 else timeout)
        except grpc.RpcError as e:
            raise GradsyncError.from_rpc(e) from None

    def _stream(self, method: str, request,
                timeout: Optional[float] = None) -> Iterator:
        try:
            yield from getattr(self._stub, method)(
                request, metadata=self._metadata, timeout=timeout)
        except grpc.RpcError as e:
            raise GradsyncError.from_rpc(e) from None

    # ---- jobs -------------------------------------------------------------

    def submit(self, model: Union[str, "os.PathLike", object], dataset: str,
               batch_size: int, eval_split: str = "", epochs: int = 0,
               workers: int = 0, optimizer: str = "", lr: float = 0.0,
               precision: str = "", name: str = "", **more) -> "Job":
        """Submits a job; returns it (PENDING) at once.

        model: a built-in name (fashion_cnn, lenet, resnet18, mlp), a path
          to a TorchScript file, or a torch.nn.Module / torch.jit.ScriptModule
          (scripted with torch.jit.script and uploaded; one that cannot be
          scripted raises TorchScript's error before anything is sent).
        dataset: the data set path as the coordinator and workers see it
          (an image folder with splits, tensor files, shards, or
          "synthetic:<preset>").
        workers: ranks (max; min_workers= in `more` for elastic jobs);
          optimizer: "adam" or "sgd"; precision: "32", "bf16-mixed",
          "16-mixed". Zero and empty values take the coordinator's defaults.
        more: split, channels, loss, seed, shuffle, drop_last,
          loader_threads, prefetch_depth, augmentation, min_workers,
          backend ("auto", "gloo", "nccl"), momentum, weight_decay,
          checkpoint_dir, checkpoint_interval, max_restarts,
          collective_timeout_ms, step_timeout_ms, grad_accumulation,
          compression ("none", "fp16", "bf16"), bucket_cap_bytes.
        Raises GradsyncError (INVALID_ARGUMENT naming the JobSpec field,
        NOT_FOUND for a data set that is not there, ...)."""
        spec = job_pb2.JobSpec(name=name, batch_size=batch_size, epochs=epochs)
        spec.dataset.path = str(dataset)
        spec.dataset.eval_split = eval_split
        spec.world_size.max_workers = workers
        spec.optimizer.learning_rate = lr
        if optimizer:
            spec.optimizer.type = _enum(job_pb2.OptimizerType, "OPTIMIZER_TYPE",
                                        optimizer, "optimizer")
        if precision:
            spec.precision = _enum(job_pb2.Precision, "PRECISION", precision,
                                   "precision")
        self._set_model(spec, model)
        _apply_more(spec, more)
        job = self._call("SubmitJob", job_service_pb2.SubmitJobRequest(spec=spec))
        return Job(self, job.id)

    def _set_model(self, spec, model) -> None:
        if isinstance(model, str) and model in BUILTIN_MODELS:
            spec.model = model
            return
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            if not os.path.isfile(path):
                raise ValueError(
                    f"model {path!r} is neither a built-in model "
                    f"({', '.join(BUILTIN_MODELS)}) nor a TorchScript file")
            with open(path, "rb") as f:
                data = f.read()
            display = os.path.basename(path)
        else:
            data, display = _script(model), type(model).__name__ + ".pt"
        self._check_scripting_version(data, display)
        spec.model_file_sha256 = self.upload_model(data, display)
        spec.model = display

    def _check_scripting_version(self, data: bytes, name: str) -> None:
        """Refuses (FAILED_PRECONDITION, naming both versions) a model file
        scripted by a newer PyTorch than a live worker's LibTorch: such a
        file may use ops or a format that worker cannot load. Files that
        do not record their PyTorch, and workers that do not report their
        LibTorch, are let through (the worker's own load check names
        what fails)."""
        scripted = _recorded_pytorch(data)
        if scripted is None:
            return
        for w in self.workers():
            runs = w.get("libtorch_version", "")
            if w.get("state") == "WORKER_STATE_DEAD" or not runs:
                continue
            if _minor(scripted) > _minor(runs):
                raise GradsyncError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"model {name}: scripted by PyTorch {scripted}, newer "
                    f"than LibTorch {runs} on worker {w.get('worker_id')} "
                    f"({w.get('host')}); script it with PyTorch {runs} or "
                    "older, or run workers with a newer LibTorch")

    def upload_model(self, data: bytes, name: str = "model.pt") -> str:
        """Uploads a TorchScript file's bytes; returns its SHA-256 (the
        coordinator keeps one copy of the same bytes)."""
        digest = hashlib.sha256(data).hexdigest()

        def chunks():
            for offset in range(0, max(len(data), 1), _CHUNK):
                chunk = model_file_pb2.ModelFileChunk(
                    offset=offset, data=data[offset:offset + _CHUNK])
                if offset == 0:
                    chunk.meta.name = name
                    chunk.meta.size_bytes = len(data)
                    chunk.meta.sha256 = digest
                yield chunk
        meta = self._call("UploadModelFile", chunks(), timeout=600)
        return meta.sha256

    def job(self, job_id: str) -> "Job":
        """The job `job_id` (NOT_FOUND when the coordinator has none)."""
        job = Job(self, job_id)
        job.status()
        return job

    def jobs(self) -> List[dict]:
        """Every job the coordinator keeps, as dicts (newest last)."""
        out, token = [], ""
        while True:
            page = self._call("ListJobs", job_service_pb2.ListJobsRequest(
                page_size=1000, page_token=token))
            out += [_dict(j) for j in page.jobs]
            token = page.next_page_token
            if not token:
                return out

    def workers(self) -> List[dict]:
        """The registered workers, as dicts."""
        reply = self._call("ListWorkers", job_service_pb2.ListWorkersRequest())
        return [_dict(w) for w in reply.workers]


class Job:
    """One job of a Client. Every method asks the coordinator afresh."""

    def __init__(self, client: Client, job_id: str):
        self._client = client
        self.id = job_id

    def __repr__(self) -> str:
        return f"Job({self.id!r})"

    def status(self) -> dict:
        """The job as the coordinator keeps it (spec, state, ranks,
        metrics, attempts, ...), as a dict with the proto's field names."""
        return _dict(self._client._call(
            "GetJob", job_service_pb2.GetJobRequest(job_id=self.id)))

    @property
    def state(self) -> str:
        """"PENDING", "RENDEZVOUS", "RUNNING", "SUCCEEDED", "FAILED" or
        "CANCELLED"."""
        return self.status()["state"].replace("JOB_STATE_", "")

    def metrics(self) -> dict:
        """The latest per-rank metrics and the job's summary (a dict)."""
        return self.status().get("metrics", {})

    def metrics_frame(self):
        """metrics()'s per-rank summaries as a pandas DataFrame, one row per
        rank with its last step's fields flattened (needs pandas)."""
        import pandas
        rows = []
        for rank in self.metrics().get("ranks", []):
            row = {k: v for k, v in rank.items() if k != "last"}
            row.update({f"last_{k}": v
                        for k, v in rank.get("last", {}).items()})
            rows.append(row)
        return pandas.DataFrame(rows)

    def curves(self) -> dict:
        """Rank 0's training curve and every evaluation (a dict), as
        `gradsync plot` draws them. With pandas, curves_frame() gives a
        DataFrame."""
        return _dict(self._client._call(
            "GetJobCurves", job_service_pb2.GetJobCurvesRequest(job_id=self.id)))

    def curves_frame(self):
        """The training curve as a pandas DataFrame (needs pandas)."""
        import pandas
        return pandas.DataFrame(self.curves().get("train", []))

    def logs(self, rank: Optional[int] = None, follow: bool = False,
             ) -> Iterator[str]:
        """The job's log lines (escaped), of one rank or all; with
        `follow`, goes on until the job ends."""
        after = 0
        while True:
            request = job_service_pb2.GetJobLogsRequest(job_id=self.id,
                                                        after_seq=after)
            if rank is not None:
                request.rank = rank
            reply = self._client._call("GetJobLogs", request)
            for line in reply.lines:
                entry = _dict(line)
                yield _escape(f"[rank {entry.get('rank', 0)}] "
                              f"{entry.get('text', '')}")
            after = reply.next_seq
            state = job_pb2.JobState.Name(reply.state)
            if not follow or state in _TERMINAL:
                return
            time.sleep(1)

    def cancel(self, reason: str = "cancelled from Python") -> dict:
        """Cancels the job; its status after."""
        return _dict(self._client._call("CancelJob", job_service_pb2.CancelJobRequest(
            job_id=self.id, reason=reason)))

    def snapshots(self) -> List[dict]:
        """The model snapshots kept for the job, oldest step first."""
        reply = self._client._call("ListSnapshots",
                                   snapshot_pb2.ListSnapshotsRequest(job_id=self.id))
        return [_dict(s) for s in reply.snapshots]

    def download(self, path: Union[str, "os.PathLike"],
                 step: Optional[int] = None) -> str:
        """Writes the snapshot (the latest, or `step`'s) to `path`: the
        checkpoint file a worker wrote (torch.save zip). Returns path."""
        data = self._snapshot_bytes(step)
        with open(path, "wb") as f:
            f.write(data)
        return os.fspath(path)

    def state_dict(self, step: Optional[int] = None) -> Dict[str, object]:
        """The snapshot's model weights (the latest, or `step`'s) as a dict
        of CPU tensors, for module.load_state_dict(..., strict=True). Read
        without running the file's pickle (gradsync.weights)."""
        from gradsync.weights import load_snapshot_state_dict
        return load_snapshot_state_dict(self._snapshot_bytes(step))

    def _snapshot_bytes(self, step: Optional[int]) -> bytes:
        request = snapshot_pb2.PullSnapshotRequest(job_id=self.id)
        if step is not None:
            request.step, request.has_step = step, True
        buffer, meta = io.BytesIO(), None
        for chunk in self._client._stream("PullSnapshot", request):
            if chunk.HasField("meta"):
                meta = chunk.meta
            if chunk.offset != buffer.tell():
                raise GradsyncError(grpc.StatusCode.DATA_LOSS,
                                    f"snapshot chunk at {chunk.offset}, "
                                    f"expected {buffer.tell()}")
            buffer.write(chunk.data)
        data = buffer.getvalue()
        if meta is not None and meta.sha256 and \
                hashlib.sha256(data).hexdigest() != meta.sha256:
            raise GradsyncError(grpc.StatusCode.DATA_LOSS,
                                "the snapshot's bytes do not match its SHA-256")
        return data

    def wait(self, progress: bool = True, out=None,
             timeout: Optional[float] = None) -> dict:
        """Follows the job until it ends; returns its final status.

        With `progress`, shows a line per rank (a tqdm bar where tqdm is
        installed): epoch, step, loss, samples/s and the phase that bounds
        the job, as `gradsync watch` does, and each evaluation. Raises
        JobFailed (with the failing rank's last log lines) when the job
        FAILED. Ctrl-C stops waiting and returns the status; the job goes
        on. With `timeout` (seconds), GradsyncError DEADLINE_EXCEEDED when
        the job has not ended by then (it goes on)."""
        from gradsync.progress import Progress
        shown = Progress(out or sys.stdout) if progress else None
        end = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                left = None if end is None else max(0.0, end - time.monotonic())
                try:
                    for event in self._client._stream(
                            "WatchJob",
                            job_service_pb2.WatchJobRequest(job_id=self.id),
                            timeout=left):
                        if shown is not None:
                            shown.update(event)
                        if event.HasField("job") and job_pb2.JobState.Name(
                                event.job.state) in _TERMINAL:
                            return self._ended(_dict(event.job))
                except GradsyncError as e:
                    if e.code == grpc.StatusCode.DEADLINE_EXCEEDED:
                        raise GradsyncError(
                            e.code, f"{self.id} had not ended after {timeout} "
                                    "s of waiting; it goes on") from None
                    if e.code != grpc.StatusCode.UNAVAILABLE:
                        raise
                    time.sleep(1)  # the coordinator restarts: follow again
                status = self.status()
                if status["state"] in _TERMINAL:
                    return self._ended(status)
        except KeyboardInterrupt:
            print(f"\nstopped waiting for {self.id}; the job goes on",
                  file=out or sys.stdout)
            return self.status()
        finally:
            if shown is not None:
                shown.close()

    def _ended(self, status: dict) -> dict:
        if status["state"] != "JOB_STATE_FAILED":
            return status
        rank = None
        found = re.search(r"rank (\d+)", status.get("message", ""))
        if found:
            rank = int(found.group(1))
        try:
            lines = list(self.logs(rank=rank))[-10:]
        except GradsyncError:
            lines = []
        raise JobFailed(self.id, status.get("message", ""), status, lines)


def _dict(message) -> dict:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def _enum(enum_type, prefix: str, value: str, field: str) -> int:
    name = f"{prefix}_{value.upper().replace('-', '_')}"
    try:
        return enum_type.Value(name)
    except ValueError:
        known = [n[len(prefix) + 1:].lower().replace("_", "-")
                 for n in enum_type.keys() if not n.endswith("UNSPECIFIED")]
        raise ValueError(f"{field} {value!r} is not one of {known}") from None


# submit()'s keyword arguments: JobSpec field paths.
_MORE = {
    "split": "dataset.split", "channels": "dataset.channels",
    "loss": "loss", "seed": "seed", "shuffle": "shuffle",
    "drop_last": "drop_last", "loader_threads": "loader_threads",
    "prefetch_depth": "prefetch_depth", "augmentation": "augmentation",
    "min_workers": "world_size.min_workers", "momentum": "optimizer.momentum",
    "weight_decay": "optimizer.weight_decay",
    "checkpoint_dir": "checkpoint.directory",
    "checkpoint_interval": "checkpoint.interval_steps",
    "max_restarts": "max_restarts",
    "collective_timeout_ms": "collective_timeout_ms",
    "step_timeout_ms": "step_timeout_ms",
    "grad_accumulation": "grad_accumulation_steps",
    "bucket_cap_bytes": "bucket_cap_bytes",
}


def _apply_more(spec, more: dict) -> None:
    for key, value in more.items():
        if key == "backend":
            spec.backend = _enum(job_pb2.Backend, "BACKEND", value, key)
            continue
        if key == "compression":
            spec.gradient_compression = _enum(
                job_pb2.GradientCompression, "GRADIENT_COMPRESSION", value, key)
            continue
        if key not in _MORE:
            raise TypeError(f"submit() got an unknown argument {key!r}; "
                            f"known: {sorted(_MORE) + ['backend', 'compression']}")
        *path, last = _MORE[key].split(".")
        target = spec
        for part in path:
            target = getattr(target, part)
        setattr(target, last, value)


def _minor(version: str) -> tuple:
    """(major, minor) of "1.13.1+cpu"; (0, 0) when it does not parse."""
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def _recorded_pytorch(data: bytes) -> Optional[str]:
    """The PyTorch version a TorchScript file records (the extra file
    gradsync_pytorch_version, which submit() writes), or None."""
    import zipfile
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for name in archive.namelist():
                if name.endswith("/extra/gradsync_pytorch_version"):
                    return archive.read(name).decode("ascii", "replace")[:40]
    except zipfile.BadZipFile:
        return None  # the workers' checks name what is wrong with it
    return None


def _script(module) -> bytes:
    """A torch.nn.Module scripted (or a ScriptModule as it is) and saved
    with the PyTorch version that scripted it and its non-persistent
    buffers, as the workers read them."""
    import torch
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"model must be a built-in name, a file or a "
                        f"torch.nn.Module, not {type(module).__name__}")
    scripted = module if isinstance(module, torch.jit.ScriptModule) \
        else torch.jit.script(module)  # raises TorchScript's own error
    non_persistent = []
    if not isinstance(module, torch.jit.ScriptModule):
        for prefix, sub in module.named_modules():
            for name in getattr(sub, "_non_persistent_buffers_set", ()):
                non_persistent.append(f"{prefix}.{name}" if prefix else name)
    buffer = io.BytesIO()
    torch.jit.save(scripted, buffer, _extra_files={
        "gradsync_pytorch_version": torch.__version__,
        "gradsync_non_persistent_buffers": "".join(
            f"{n}\n" for n in sorted(non_persistent))})
    return buffer.getvalue()
