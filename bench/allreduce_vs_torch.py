#!/usr/bin/python3
"""All-reduce benchmark against the anchor (a script, not a test): 2 ranks
on one host, float32 sizes 1 KB .. 64 MB, gradsync's gloo communicator
(gradsync-bench-allreduce, one process per rank) vs torch.distributed gloo
all_reduce (python3-torch, one process per rank), same run. gradsync runs
twice: through shared memory (its default for ranks on one host) and over
loopback TCP (what ranks on different hosts use). Prints algbw and busbw
(nccl-tests definitions) and the ratio gradsync / torch per size.
The same run measures the ceiling, bare loopback TCP one way ("stream")
and both ways at once ("exchange"), and prints gradsync's busbw against it.
Small-message latency on a small VM is dominated by thread wake-ups and
moves by 2-5x between runs, so the two sides run alternately for --rounds
rounds and each size reports the median time of each side.

Usage: bench/allreduce_vs_torch.py [--bin build/bin] [--max-bytes 67108864]
       [--rounds 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def torch_rank(rank, world, init, max_bytes, iters_max, out):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank,
                            world_size=world)
    rows = []
    size = 1024
    while size <= max_bytes:
        n = size // 4
        t = torch.full((n,), float(rank + 1))
        for _ in range(5):
            dist.all_reduce(t)
        iters = max(5, min(iters_max, (1 << 30) // size))
        t.fill_(float(rank + 1))
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        s = (time.perf_counter() - start) / iters
        rows.append((size, s))
        size *= 4
    if rank == 0:
        with open(out, "w") as f:
            for size, s in rows:
                f.write(f"{size},{s}\n")
    dist.destroy_process_group()


def tcp_rank(role, port_file, max_bytes, iters_max, out):
    """The ceiling: bare loopback TCP between two processes, 1 MiB writes,
    the receiver reading into one reused buffer (as iperf does). For each
    size, "stream" sends it one way; "exchange" sends it both ways at once
    (a sender thread beside the receiving one), which is the least any
    2-rank all-reduce of that size must move (each rank sends and receives
    the whole buffer: half in the reduce-scatter, half in the all-gather)."""
    import socket
    import threading
    if role == 0:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        with open(port_file + ".tmp", "w") as f:
            f.write(str(listener.getsockname()[1]))
        os.rename(port_file + ".tmp", port_file)
        sock, _ = listener.accept()
    else:
        while not os.path.exists(port_file):
            time.sleep(0.01)
        with open(port_file) as f:
            sock = socket.create_connection(("127.0.0.1", int(f.read())))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    chunk = 1 << 20
    data = memoryview(bytearray(max_bytes))
    landing = memoryview(bytearray(chunk))

    def send(n):
        for offset in range(0, n, chunk):
            sock.sendall(data[offset:min(n, offset + chunk)])

    def receive(n):
        while n > 0:
            n -= sock.recv_into(landing, min(n, chunk))

    def ack():  # one byte back: the last byte arrived
        if role == 1:
            sock.sendall(b"k")
        else:
            receive(1)

    rows = []
    size = 1024
    while size <= max_bytes:
        iters = max(5, min(iters_max, (1 << 30) // size))
        times = []
        for mode in ("stream", "exchange"):
            for i in range(iters + 2):  # two warm-up rounds
                start = time.perf_counter()
                if mode == "stream":
                    send(size) if role == 0 else receive(size)
                else:
                    t = threading.Thread(target=send, args=(size,))
                    t.start()
                    receive(size)
                    t.join()
                ack()
                if i == 1:
                    start_all = time.perf_counter()
            times.append((time.perf_counter() - start_all) / iters)
        rows.append((size, times[0], times[1]))
        size *= 4
    if role == 0:
        with open(out, "w") as f:
            for size, stream, exchange in rows:
                f.write(f"{size},{stream},{exchange}\n")


def run_tcp(a):
    """One run of the bare TCP ceiling: {bytes: (stream s, exchange s)}."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "tcp.csv")
        procs = [subprocess.Popen(
            [sys.executable, __file__, "--tcp-rank", str(r), "--init",
             os.path.join(tmp, "port"), "--out", out, "--max-bytes",
             str(a.max_bytes), "--iters", str(a.iters)]) for r in range(2)]
        if any(pr.wait() != 0 for pr in procs):
            sys.exit("tcp ceiling processes failed")
        with open(out) as f:
            return {int(size): (float(st), float(ex)) for size, st, ex in
                    (line.strip().split(",") for line in f)}


def run_gradsync(a, transport):
    """One run of gradsync-bench-allreduce over `transport` (shm or tcp):
    {bytes: seconds}."""
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        procs = [subprocess.Popen(
            [os.path.join(a.bin, "gradsync-bench-allreduce"), "--rank", str(r),
             "--world", "2", "--store", store, "--max-bytes", str(a.max_bytes),
             "--iters", str(a.iters), "--transport", transport],
            stdout=subprocess.PIPE, text=True)
            for r in range(2)]
        out = procs[0].communicate()[0]
        if procs[1].wait() != 0 or procs[0].returncode != 0:
            sys.exit("gradsync-bench-allreduce failed")
    return {int(l.split(",")[0]): float(l.split(",")[1])
            for l in out.strip().split("\n")[1:]}


def run_torch(a):
    """One run of torch.distributed gloo all_reduce: {bytes: seconds}."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "torch.csv")
        init = f"file://{tmp}/torch_store"
        procs = [subprocess.Popen(
            [sys.executable, __file__, "--torch-rank", str(r), "--init", init,
             "--out", out, "--max-bytes", str(a.max_bytes), "--iters",
             str(a.iters)]) for r in range(2)]
        if any(pr.wait() != 0 for pr in procs):
            sys.exit("torch all_reduce ranks failed")
        with open(out) as f:
            return {int(size): float(s) for size, s in
                    (line.strip().split(",") for line in f)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default="build/bin")
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--torch-rank", type=int, help=argparse.SUPPRESS)
    p.add_argument("--tcp-rank", type=int, help=argparse.SUPPRESS)
    p.add_argument("--init", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.torch_rank is not None:
        torch_rank(a.torch_rank, 2, a.init, a.max_bytes, a.iters, a.out)
        return 0
    if a.tcp_rank is not None:
        tcp_rank(a.tcp_rank, a.init, a.max_bytes, a.iters, a.out)
        return 0
    shm, tcp, theirs, stream, exchange = {}, {}, {}, {}, {}
    for r in range(a.rounds):
        for size, s in run_gradsync(a, "shm").items():
            shm.setdefault(size, []).append(s)
        for size, s in run_gradsync(a, "tcp").items():
            tcp.setdefault(size, []).append(s)
        for size, s in run_torch(a).items():
            theirs.setdefault(size, []).append(s)
        for size, (st, ex) in run_tcp(a).items():
            stream.setdefault(size, []).append(st)
            exchange.setdefault(size, []).append(ex)
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    shm, tcp, theirs, stream, exchange = (
        {k: statistics.median(v) for k, v in d.items()}
        for d in (shm, tcp, theirs, stream, exchange))
    print(f"== all-reduce, 2 ranks on one host, float32, sum, median of "
          f"{a.rounds} alternating rounds (busbw GB/s; time us) ==")
    print(f"{'bytes':>10}  {'shm us':>8}  {'shm busbw':>9}  {'tcp us':>8}  "
          f"{'tcp busbw':>9}  {'torch us':>9}  {'torch busbw':>11}  "
          f"{'shm/torch':>9}  {'tcp/torch':>9}")
    for size in sorted(shm):
        g, c, t = shm[size], tcp[size], theirs[size]
        print(f"{size:>10}  {g * 1e6:>8.1f}  {size / g / 1e9:>9.3f}  "
              f"{c * 1e6:>8.1f}  {size / c / 1e9:>9.3f}  {t * 1e6:>9.1f}  "
              f"{size / t / 1e9:>11.3f}  {t / g:>8.2f}x  {t / c:>8.2f}x")
    print("(busbw = algbw * 2(n-1)/n = algbw for n = 2; ratio = torch time / "
          "gradsync time, > 1 means gradsync is faster; shm: gradsync's "
          "default for ranks on one host, tcp: ranks on different hosts)")
    print()
    print("== ceiling: bare loopback TCP, same run (GB/s) ==")
    print(f"{'bytes':>10}  {'stream':>7}  {'exchange':>8}  "
          f"{'shm busbw / stream':>18}  {'tcp busbw / stream':>18}  "
          f"{'tcp / exchange':>14}")
    for size in sorted(shm):
        st, ex = size / stream[size] / 1e9, size / exchange[size] / 1e9
        g, c = size / shm[size] / 1e9, size / tcp[size] / 1e9
        print(f"{size:>10}  {st:>7.3f}  {ex:>8.3f}  {g / st:>18.2f}  "
              f"{c / st:>18.2f}  {c / ex:>14.2f}")
    print("(stream: the bytes one way; exchange: the same bytes both ways at "
          "once, what a 2-rank all-reduce over TCP moves at least; goal busbw "
          ">= 0.7 of the stream from 4 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
