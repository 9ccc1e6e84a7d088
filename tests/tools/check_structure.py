#!/usr/bin/env python3
"""The house rules the include graph and the locks must keep.

1. Two wings on one foundation (README.md, "Layout"): foundation/ includes
   nothing of the wings; the coordinator (control plane) includes nothing
   of worker/ or loader/; loader/ and the worker's data plane (all of
   worker/ but agent/, the part that speaks to the coordinator through its
   client library) include nothing of coordinator/.
2. Includes run one way: no file pair (x.h with x.cc) includes another
   that includes it back, directly or around a loop.
3. Every mutex is an absl::Mutex whose guarded members are annotated, so
   clang's thread-safety analysis (check_thread_safety.py) checks it:
   no std::mutex, std::condition_variable or std lock outside
   STD_MUTEX_ALLOWED, and every file that declares an absl::Mutex carries
   annotations unless it is in LOCAL_MUTEX_ALLOWED.

Usage: check_structure.py SOURCE_DIR
Exit status: 0 clean, 1 a rule broken (each breach printed).
"""
import collections
import os
import re
import subprocess
import sys

# std::mutex where another library's API hands one out.
STD_MUTEX_ALLOWED = {
    # at::Generator::mutex() is a std::mutex: LibTorch's own lock for the
    # generator state a checkpoint saves and restores.
    "worker/model/checkpoint.cc",
}
# Mutexes that are function locals (annotations apply to members only).
LOCAL_MUTEX_ALLOWED = {
    "loader/tools/lfw_synth.cc",
    "tests/coordinator/control/rendezvous_test.cc",
    "tests/worker/reducer/reducer_test.cc",
}
STD_MUTEX = re.compile(
    r"std::(mutex|recursive_mutex|shared_mutex|timed_mutex|condition_variable"
    r"|lock_guard|unique_lock|scoped_lock)\b")
ABSL_MUTEX = re.compile(r"\babsl::Mutex\s+\w+")
ANNOTATION = re.compile(r"ABSL_(PT_)?GUARDED_BY|ABSL_EXCLUSIVE_LOCKS_REQUIRED")
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)

# (including folder, included folder) pairs that break rule 1; a folder is
# the first path component, except worker/agent.
FORBIDDEN = {
    ("foundation", "coordinator"), ("foundation", "worker"),
    ("foundation", "worker/agent"), ("foundation", "loader"),
    ("coordinator", "worker"), ("coordinator", "worker/agent"),
    ("coordinator", "loader"),
    ("loader", "coordinator"), ("loader", "worker"), ("loader", "worker/agent"),
    ("worker", "coordinator"), ("worker", "worker/agent"),
}


def wing(path):
    if path.startswith("worker/agent/"):
        return "worker/agent"
    return path.split("/", 1)[0]


def sources(root):
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root, capture_output=True, text=True, check=True).stdout.split()
    return [f for f in listed if f.endswith((".h", ".cc"))
            and os.path.exists(os.path.join(root, f))]


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(100000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = sys.argv[1]
    files = sources(root)
    texts = {f: open(os.path.join(root, f), encoding="utf-8").read()
             for f in files}
    units = {f.rsplit(".", 1)[0] for f in files}
    breaches = []
    graph = collections.defaultdict(set)
    for f, text in texts.items():
        unit = f.rsplit(".", 1)[0]
        graph[unit]
        for included in INCLUDE.findall(text):
            if (wing(f), wing(included)) in FORBIDDEN:
                breaches.append(f"{f} includes {included}: {wing(f)}/ may not "
                                f"stand on {wing(included)}/")
            target = included.rsplit(".", 1)[0]
            if target in units and target != unit and \
                    not f.startswith("tests/"):
                graph[unit].add(target)
    for loop in cycles(graph):
        breaches.append("includes run around a loop: " + " -> ".join(loop))
    for f, text in texts.items():
        if STD_MUTEX.search(text) and f not in STD_MUTEX_ALLOWED:
            breaches.append(f"{f} uses {STD_MUTEX.search(text).group(0)}: use "
                            "an annotated absl::Mutex (absl::CondVar)")
        if ABSL_MUTEX.search(text) and not ANNOTATION.search(text) and \
                f not in LOCAL_MUTEX_ALLOWED:
            breaches.append(f"{f} declares an absl::Mutex but annotates "
                            "nothing it guards (ABSL_GUARDED_BY)")
    for b in breaches:
        print(b)
    print(f"check_structure: {len(files)} files, {len(breaches)} breach(es)")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
