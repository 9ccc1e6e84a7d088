"""A snapshot's weights as a state_dict, read without running its pickle.

A snapshot (what the coordinator keeps after each checkpoint) is a
torch.save zip of {"model": state_dict, "optimizer": ..., ...}. PyTorch
1.13's weights_only loader refuses the plain floats it holds (learning
rates), so it is read here with torch.load and an unpickler that builds
only what a weights-only file may hold: tensors from their storages,
OrderedDicts; any other global is refused by name, so nothing in the file
runs. Needs torch.
"""
import io
import pickle

__all__ = ["load_snapshot_state_dict"]

_ALLOWED = {
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_parameter"),
    ("collections", "OrderedDict"),
}
_STORAGES = {"DoubleStorage", "FloatStorage", "HalfStorage", "BFloat16Storage",
             "LongStorage", "IntStorage", "ShortStorage", "CharStorage",
             "ByteStorage", "BoolStorage"}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED or (module == "torch" and
                                          name in _STORAGES):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"the snapshot names {module}.{name}, which a weights-only file "
            "never holds")


class _RestrictedPickle:
    """The pickle module torch.load is given: only the unpickler differs."""
    Unpickler = _Unpickler
    load = pickle.load
    __name__ = "gradsync_restricted_pickle"


def load_snapshot_state_dict(data: bytes) -> dict:
    """The "model" entry of a snapshot's bytes: name -> CPU tensor."""
    import torch
    loaded = torch.load(io.BytesIO(data), map_location="cpu",
                        pickle_module=_RestrictedPickle)
    if not isinstance(loaded, dict) or "model" not in loaded:
        raise ValueError("the snapshot holds no \"model\" state_dict")
    return dict(loaded["model"])
