#!/usr/bin/python3
"""Writes the model files script_archive_test checks into DIR: one plain
scripted module that must pass, and hostile or broken ones, each made here
with Debian's PyTorch:

  good.pt        conv + batch norm + linear, torch.jit.script, as a user would
  resnet18.pt    torchvision's resnet18, scripted (must pass too)
  recurrent.pt   an LSTM, dropout and float attributes, scripted (must pass)
  setstate.pt    __setstate__ that writes DIR/pwned with torch.save when
                 torch.jit.load runs it; setstate.proof says Python's loader
                 did write it (then it is removed)
  bomb.pt        good.pt plus a code file declaring 64 MB of deflated blanks
  truncated.pt   the first half of good.pt
  global.pt      good.pt with data.pkl calling os.system
  classes.pt     good.pt with data.pkl building a __torch__.torch.classes object
  stranger.pt    good.pt with data.pkl naming a __torch__ class no code defines
  version.pt     good.pt claiming file format version 99
  newer_op.pt    good.pt calling an op this LibTorch lacks, recorded as
                 scripted by PyTorch 9.9.0
and four that pass the archive checks but not the module's (made safe to
load, refused before their code runs):
  save_forward.pt  forward writes DIR/leak with torch.save (save_forward.proof
                   says running it in Python did)
  from_file.pt     forward reads /etc/hostname with torch.from_file
  save_hook.pt     a forward hook writes with torch.save
  frozen.pt        no parameter requires grad
and two that break the forward contract (one Tensor in, [N, outputs] out):
  tuple_out.pt     forward returns (logits, features)
  two_inputs.pt    forward takes (x, y)
traced_dropout.pt, Plain with dropout traced in eval mode (its dropout
never switches on); for ScriptModel:
  buffers.pt     a persistent buffer "keep" and a non-persistent "scratch",
                 named in the extra file gradsync_non_persistent_buffers
  own_loss.pt    Plain with loss(output, target) = 3 * cross-entropy
  bad_loss.pt    Plain with loss(output) (one argument too few)
  viewed.pt      good.pt's layers, flattened with view() (which a
                 channels-last activation refuses)
and printer.pt, whose forward prints and warns terminal escapes and a
forged line.

Usage: make_model_files.py DIR"""
import os
import sys
import warnings
import zipfile
from typing import Tuple

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


class Hooked(torch.nn.Module):
    """Writes a file wherever `path` says when torch.jit.load runs its
    __setstate__."""

    def __init__(self, path: str):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2))
        self.path = path

    def forward(self, x):
        return x * self.w

    @torch.jit.export
    def __getstate__(self):
        return (self.w, self.training, self.path)

    @torch.jit.export
    def __setstate__(self, state: Tuple[torch.Tensor, bool, str]):
        torch.save(state[0], state[2])
        self.w = state[0]
        self.training = state[1]
        self.path = state[2]


class Recurrent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.drop = torch.nn.Dropout(0.25)
        self.head = torch.nn.Linear(16, 3)
        self.scale = 0.5

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(self.drop(out[:, -1])) * self.scale


class SaveForward(torch.nn.Module):
    def __init__(self, path: str):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)
        self.path = path

    def forward(self, x):
        torch.save(x, self.path)
        return self.fc(x)


class FromFile(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x) + torch.from_file("/etc/hostname", size=1).sum()


class Plain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


class TupleOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x) -> Tuple[torch.Tensor, torch.Tensor]:
        return self.fc(x), x


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x, y):
        return self.fc(x) + y


class Printer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        print("evil\x1b]0;title\x07\x1b[2J\ngradsync-worker: FORGED")
        warnings.warn("warned\x1b[2J\nFORGED")
        return self.fc(x)


class Buffers(Plain):
    def __init__(self):
        super().__init__()
        self.register_buffer("keep", torch.zeros(2))
        self.register_buffer("scratch", torch.ones(2), persistent=False)

    def forward(self, x):
        return self.fc(x) + self.keep + self.scratch


class Viewed(Net):
    def forward(self, x):
        out = torch.relu(self.bn(self.conv(x)))
        return self.fc(out.view(out.size(0), -1))


class OwnLoss(Plain):
    @torch.jit.export
    def loss(self, output: torch.Tensor, target: torch.Tensor):
        return 3.0 * torch.nn.functional.cross_entropy(output, target)


class BadLoss(Plain):
    @torch.jit.export
    def loss(self, output: torch.Tensor):
        return output.sum()


class Spins(torch.nn.Module):
    """Images of `features` values into `classes`, after `turns` trips round
    a loop in forward (-1: a loop that never ends)."""

    def __init__(self, turns: int, features: int, classes: int):
        super().__init__()
        self.fc = torch.nn.Linear(features, classes)
        self.turns = turns

    def forward(self, x):
        y = x.flatten(1)
        i = 0
        while i != self.turns:
            y = y * 1.0
            i += 1
        return self.fc(y)


class Hungry(torch.nn.Module):
    """Images of `features` values into `classes`, holding `elements` floats
    in each forward."""

    def __init__(self, elements: int, features: int, classes: int):
        super().__init__()
        self.fc = torch.nn.Linear(features, classes)
        self.elements = elements

    def forward(self, x):
        held = torch.ones(self.elements)
        return self.fc(x.flatten(1)) + held[0] * 0.0


def save_hook(module: Plain, inputs: Tuple[torch.Tensor], output: torch.Tensor):
    torch.save(output, "/tmp/gradsync-hook-leak")


def rewrite(src, dst, replace=None, add=None):
    """Copies the archive `src` to `dst`, entry by entry as stored or
    deflated, with `replace` {relative name: bytes} and `add` appended."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        prefix = zin.namelist()[0].split("/")[0] + "/"
        for info in zin.infolist():
            data = zin.read(info.filename)
            rel = info.filename[len(prefix):]
            if replace and rel in replace:
                data = replace[rel]
            zout.writestr(info, data, compress_type=info.compress_type)
        for rel, (data, method) in (add or {}).items():
            zout.writestr(prefix + rel, data, compress_type=method)


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    good = os.path.join(out, "good.pt")
    torch.jit.save(torch.jit.script(Net()), good)
    import torchvision
    torch.jit.save(torch.jit.script(torchvision.models.resnet18()),
                   os.path.join(out, "resnet18.pt"))
    torch.jit.save(torch.jit.script(Recurrent()),
                   os.path.join(out, "recurrent.pt"))
    pwned = os.path.join(out, "pwned")
    hostile = os.path.join(out, "setstate.pt")
    torch.jit.save(torch.jit.script(Hooked(pwned)), hostile)
    if os.path.exists(pwned):
        os.remove(pwned)
    torch.jit.load(hostile)  # what a worker that loads it unchecked does
    with open(os.path.join(out, "setstate.proof"), "w") as f:
        f.write("wrote\n" if os.path.exists(pwned) else "did not write\n")
    if os.path.exists(pwned):
        os.remove(pwned)
    rewrite(good, os.path.join(out, "bomb.pt"),
            add={"code/__torch__/bomb.py": (b" " * (64 << 20),
                                            zipfile.ZIP_DEFLATED)})
    with open(good, "rb") as f:
        data = f.read()
    with open(os.path.join(out, "truncated.pt"), "wb") as f:
        f.write(data[: len(data) // 2])
    rewrite(good, os.path.join(out, "global.pt"), replace={
        "data.pkl": b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00id\x85R."})
    rewrite(good, os.path.join(out, "classes.pt"), replace={
        "data.pkl": b"\x80\x02c__torch__.torch.classes.evil\nThing\n)\x81}b."})
    rewrite(good, os.path.join(out, "stranger.pt"), replace={
        "data.pkl": b"\x80\x02c__torch__\nStranger\n)\x81}b."})
    rewrite(good, os.path.join(out, "version.pt"), replace={"version": b"99\n"})
    # As a newer PyTorch would write it: an op this LibTorch lacks, and the
    # version that scripted it recorded as the uploader records it.
    with zipfile.ZipFile(good) as z:
        code = next(n for n in z.namelist() if n.endswith("code/__torch__.py"))
        source = z.read(code)
    rewrite(good, os.path.join(out, "newer_op.pt"),
            replace={code.split("/", 1)[1]:
                     source.replace(b"torch.relu(", b"torch.gradsync_future_op(")},
            add={"extra/gradsync_pytorch_version": (b"9.9.0",
                                                    zipfile.ZIP_STORED)})
    leak = os.path.join(out, "leak")
    forward = torch.jit.script(SaveForward(leak))
    forward(torch.ones(1, 4))  # what running it unchecked does
    with open(os.path.join(out, "save_forward.proof"), "w") as f:
        f.write("wrote\n" if os.path.exists(leak) else "did not write\n")
    os.remove(leak)
    torch.jit.save(forward, os.path.join(out, "save_forward.pt"))
    torch.jit.save(torch.jit.script(FromFile()),
                   os.path.join(out, "from_file.pt"))
    hooked = Plain()
    hooked.register_forward_hook(save_hook)
    torch.jit.save(torch.jit.script(hooked), os.path.join(out, "save_hook.pt"))
    frozen = Plain()
    for p in frozen.parameters():
        p.requires_grad_(False)
    torch.jit.save(torch.jit.script(frozen), os.path.join(out, "frozen.pt"))
    torch.jit.save(torch.jit.script(TupleOut()),
                   os.path.join(out, "tuple_out.pt"))
    torch.jit.save(torch.jit.script(TwoInputs()),
                   os.path.join(out, "two_inputs.pt"))
    torch.jit.save(torch.jit.script(Printer()), os.path.join(out, "printer.pt"))
    dropped = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5),
                                  torch.nn.Linear(8, 2)).eval()
    torch.jit.save(torch.jit.trace(dropped, torch.rand(3, 4)),
                   os.path.join(out, "traced_dropout.pt"))
    torch.jit.save(torch.jit.script(Buffers()), os.path.join(out, "buffers.pt"),
                   _extra_files={"gradsync_non_persistent_buffers": "scratch\n"})
    torch.jit.save(torch.jit.script(Viewed()), os.path.join(out, "viewed.pt"))
    torch.jit.save(torch.jit.script(OwnLoss()),
                   os.path.join(out, "own_loss.pt"))
    torch.jit.save(torch.jit.script(BadLoss()),
                   os.path.join(out, "bad_loss.pt"))
    # For the synthetic "tiny" preset: 3x12x12 images, 4 classes.
    torch.jit.save(torch.jit.script(Spins(20000, 432, 4)),
                   os.path.join(out, "spins.pt"))
    torch.jit.save(torch.jit.script(Hungry(1 << 28, 432, 4)),
                   os.path.join(out, "hungry.pt"))


if __name__ == "__main__":
    main()
