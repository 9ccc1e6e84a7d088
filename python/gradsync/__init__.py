"""gradsync from Python: submit, watch and pull jobs from a script or a
notebook, and the built-in models as PyTorch modules.

    import gradsync
    client = gradsync.connect()          # GRADSYNC_COORDINATOR, token, TLS
    job = client.submit(model="fashion_cnn", dataset="data/fashion-mnist",
                        eval_split="test", epochs=1, batch_size=100, workers=2)
    job.wait()
    net = gradsync.models.create("fashion_cnn")
    net.load_state_dict(job.state_dict())

gradsync.models (needs torch): the built-in models (`--model
fashion_cnn|lenet|resnet18|mlp`) whose state_dict keys and shapes match what
a job trains. The client needs grpcio and protobuf; its stubs
(gradsync.v1) are generated from the repository's proto/ when the package
is built (build_stubs.py).
"""
__all__ = ["BUILTIN_MODELS", "Client", "GradsyncError", "Job", "JobFailed",
           "connect", "models"]

# Imported when first used: gradsync.models needs only torch (and works
# from a source checkout, sys.path.insert(0, "python")); the client needs
# grpcio, protobuf and the generated stubs.
_LAZY = {"BUILTIN_MODELS": "gradsync.client", "Client": "gradsync.client",
         "Job": "gradsync.client", "connect": "gradsync.client",
         "GradsyncError": "gradsync.errors", "JobFailed": "gradsync.errors"}


def __getattr__(name):
    import importlib
    if name == "models":
        return importlib.import_module("gradsync.models")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'gradsync' has no attribute {name!r}")
