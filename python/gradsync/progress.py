"""What Job.wait() shows while a job runs: a line (or a tqdm bar) per rank
with epoch, step, loss, samples/s and the phase bounding the job, as
`gradsync watch` does, and a line per evaluation and state change."""
import time

from gradsync.v1 import job_pb2

__all__ = ["Progress"]

_PHASES = {1: "data", 2: "compute", 3: "all-reduce"}


class Progress:
    """Turns WatchJob events into progress output on `out`."""

    def __init__(self, out, every_s: float = 2.0):
        self._out = out
        self._every = every_s
        self._last_line = {}  # rank -> time of its last plain line
        self._bars = {}
        self._state = None
        try:
            import tqdm  # noqa: F401
            self._tqdm = tqdm.tqdm
        except ImportError:
            self._tqdm = None

    def update(self, event) -> None:
        kind = event.WhichOneof("event")
        bound = _PHASES.get(event.summary.bounding_phase, "")
        if kind == "job":
            state = job_pb2.JobState.Name(event.job.state).replace(
                "JOB_STATE_", "")
            if state != self._state:
                self._state = state
                self._print(f"{event.job.id}: {state}"
                            + (f" ({event.job.message})"
                               if event.job.message else ""))
        elif kind == "step":
            self._step(event.step, bound)
        elif kind == "eval":
            e = event.eval
            accuracy = (f", accuracy {100 * e.accuracy:.2f}%"
                        if e.accuracy >= 0 else "")
            self._print(f"eval epoch {e.epoch + 1}: loss {e.loss:.4f}"
                        f"{accuracy} ({e.samples} samples)")

    def _step(self, s, bound: str) -> None:
        text = (f"rank {s.rank} epoch {s.epoch + 1} step {s.step}"
                f"{f'/{s.steps_per_epoch}' if s.steps_per_epoch else ''}"
                f" loss {s.loss:.4f} {s.samples_per_sec:.0f} samples/s"
                f"{f' bound by {bound}' if bound else ''}")
        if self._tqdm is not None:
            bar = self._bars.get(s.rank)
            if bar is None:
                bar = self._tqdm(total=s.steps_per_epoch or None,
                                 desc=f"rank {s.rank}", position=s.rank,
                                 file=self._out, leave=True)
                self._bars[s.rank] = bar
            in_epoch = (s.step - 1) % s.steps_per_epoch + 1 \
                if s.steps_per_epoch else s.step
            if in_epoch < bar.n:
                bar.reset(total=s.steps_per_epoch or None)
            bar.update(in_epoch - bar.n)
            bar.set_postfix_str(
                f"epoch {s.epoch + 1} loss {s.loss:.4f} "
                f"{s.samples_per_sec:.0f}/s{f' {bound}' if bound else ''}",
                refresh=False)
            return
        now = time.monotonic()
        if now - self._last_line.get(s.rank, 0) >= self._every:
            self._last_line[s.rank] = now
            self._print(text)

    def _print(self, line: str) -> None:
        if self._tqdm is not None and self._bars:
            self._tqdm.write(line, file=self._out)
        else:
            print(line, file=self._out, flush=True)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
