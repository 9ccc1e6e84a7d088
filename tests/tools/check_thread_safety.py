#!/usr/bin/env python3
"""Clang's thread-safety analysis over gradsync's annotated code.

Compiles (syntax only) every translation unit that defines or includes a
class with ABSL_GUARDED_BY members, with the flags CMake recorded in
compile_commands.json, under clang++ -Wthread-safety -Werror. The regular
build uses GCC, which ignores the annotations; this is where they are
checked. Usage: check_thread_safety.py BUILD_DIR [JOBS]
Exit status: 0 clean, 1 a warning (printed), 2 bad setup.
"""
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

ANNOTATED = re.compile(r"ABSL_(PT_)?GUARDED_BY|ABSL_EXCLUSIVE_LOCKS_REQUIRED")
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def annotated(path, root, seen):
    """Whether `path` or a project header it includes uses annotations."""
    if path in seen:
        return False
    seen.add(path)
    try:
        text = open(path, encoding="utf-8").read()
    except OSError:
        return False
    if ANNOTATED.search(text):
        return True
    for inc in INCLUDE.findall(text):
        candidate = os.path.join(root, inc)
        if os.path.exists(candidate) and annotated(candidate, root, seen):
            return True
    return False


def clang_command(entry, clang):
    args = entry.get("arguments") or shlex.split(entry["command"])
    out = [clang]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
            continue
        if a == "-c":
            continue
        out.append(a)
    return out + ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety",
                  "-Wno-unknown-warning-option",
                  "-Wno-unused-command-line-argument"]


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build = sys.argv[1]
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else os.cpu_count() or 1
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    clang = shutil.which("clang++")
    if clang is None:
        print("check_thread_safety: clang++ not found (deploy/install-deps.sh "
              "installs it)")
        return 2
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    chosen = {}
    for e in entries:
        src = os.path.abspath(os.path.join(e["directory"], e["file"]))
        if not src.startswith(root + os.sep) or "/build" in src[len(root):]:
            continue
        if src.startswith(os.path.join(root, "tests") + os.sep):
            continue  # the code under test, not the tests
        if annotated(src, root, set()):
            chosen[src] = e
    if not chosen:
        print("check_thread_safety: no annotated translation unit found")
        return 2

    def check(item):
        src, e = item
        r = subprocess.run(clang_command(e, clang), cwd=e["directory"],
                           capture_output=True, text=True)
        return src, r.returncode, r.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for src, rc, err in pool.map(check, sorted(chosen.items())):
            rel = os.path.relpath(src, root)
            if rc != 0:
                failed += 1
                print(f"FAIL {rel}\n{err}")
            else:
                print(f"ok   {rel}")
    print(f"check_thread_safety: {len(chosen) - failed} of {len(chosen)} "
          f"translation units clean")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
