"""The one exception type the client raises for the coordinator's answers."""
import grpc

__all__ = ["GradsyncError", "JobFailed"]


class GradsyncError(Exception):
    """A call the coordinator refused or could not answer.

    `code` is the gRPC status (grpc.StatusCode.INVALID_ARGUMENT, NOT_FOUND,
    UNAUTHENTICATED, ...), `code_name` its name, `message` the
    coordinator's words (an INVALID_ARGUMENT names the JobSpec field)."""

    def __init__(self, code: grpc.StatusCode, message: str):
        self.code = code
        self.code_name = code.name if hasattr(code, "name") else str(code)
        self.message = message
        super().__init__(f"{self.code_name}: {message}")

    @classmethod
    def from_rpc(cls, error: grpc.RpcError) -> "GradsyncError":
        return cls(error.code(), error.details() or "")


class JobFailed(GradsyncError):
    """Job.wait() found the job FAILED. `status` is the job's last status
    (a dict) and `log_lines` the failing rank's last log lines, escaped."""

    def __init__(self, job_id: str, message: str, status: dict,
                 log_lines: list):
        self.job_id = job_id
        self.status = status
        self.log_lines = log_lines
        tail = "".join(f"\n  {line}" for line in log_lines)
        super().__init__(grpc.StatusCode.ABORTED,
                         f"job {job_id} FAILED: {message}{tail}")
