#!/usr/bin/python3
"""A flood on a real coordinator's monitoring port (issue 39, finding 1):
four connections send "GET /" and then 25 MB with no newline, eight more
send half a header and go silent, and meanwhile a scraper with the token
reads /metrics. The scrape must be answered, during and after the flood,
and the coordinator's peak resident memory (VmHWM) must grow by less than
48 MB: the server keeps at most a bounded buffer per connection.

Usage: monitoring_flood.py BIN_DIR"""
import os
import re
import socket
import subprocess
import sys
import threading
import time

FLOOD_CONNECTIONS, FLOOD_BYTES, SLOW_CONNECTIONS = 4, 25 << 20, 8
CAP_KB = 48 << 10
USER, WORKER, METRICS = "flood-user-token", "flood-worker-token", "flood-metrics"


def vm_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M).group(1))


def scrape(port, token):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"GET /metrics HTTP/1.1\r\nHost: localhost\r\n"
                  f"Authorization: Bearer {token}\r\nConnection: close\r\n"
                  f"\r\n".encode())
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return answer.split(b"\r\n", 1)[0].decode(errors="replace")


def flood(port, sent):
    piece = b"A" * (64 << 10)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /")
            for _ in range(FLOOD_BYTES // len(piece)):
                s.sendall(piece)
                sent.append(len(piece))
    except OSError:
        pass  # the server closed it: what it should do


def main():
    bin_dir = os.path.abspath(sys.argv[1])
    coordinator = f"{bin_dir}/gradsync-coordinator"
    helps = subprocess.run([coordinator, "--help"], capture_output=True,
                           text=True).stdout
    # (The same test runs against a coordinator from before the metrics
    # token, which read the monitoring port with the user token.)
    token_args, scrape_token = ["--user-token", USER, "--worker-token", WORKER], USER
    if "--metrics-token" in helps:
        token_args += ["--metrics-token", METRICS]
        scrape_token = METRICS
    proc = subprocess.Popen(
        [coordinator, "--listen", "127.0.0.1:0", "--http-listen",
         "127.0.0.1:0"] + token_args, stderr=subprocess.PIPE, text=True,
        env={k: v for k, v in os.environ.items()
             if not k.startswith("GRADSYNC_")})
    try:
        port = None
        for line in proc.stderr:
            m = re.search(r"monitoring on port (\d+)", line)
            if m:
                port = int(m.group(1))
                break
        assert port, "the coordinator did not open its monitoring port"
        threading.Thread(target=lambda: [None for _ in proc.stderr],
                         daemon=True).start()
        assert scrape(port, scrape_token).endswith("200 OK")
        time.sleep(0.5)
        before = vm_kb(proc.pid, "VmHWM")
        slow = []
        for _ in range(SLOW_CONNECTIONS):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
            slow.append(s)
        sent = []
        floods = [threading.Thread(target=flood, args=(port, sent))
                  for _ in range(FLOOD_CONNECTIONS)]
        for t in floods:
            t.start()
        during = scrape(port, scrape_token)
        for t in floods:
            t.join()
        after = scrape(port, scrape_token)
        peak = vm_kb(proc.pid, "VmHWM")
        for s in slow:
            s.close()
        print(f"monitoring_flood: {sum(sent) >> 20} MB accepted of "
              f"{FLOOD_CONNECTIONS * FLOOD_BYTES >> 20} MB sent on "
              f"{FLOOD_CONNECTIONS} connections, {SLOW_CONNECTIONS} slow "
              f"clients; peak RSS {before >> 10} -> {peak >> 10} MB; scrape "
              f"during: '{during}', after: '{after}'")
        assert during.endswith("200 OK"), during
        assert after.endswith("200 OK"), after
        assert peak - before < CAP_KB, \
            f"peak resident memory grew by {(peak - before) >> 10} MB"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    print("monitoring_flood: PASSED")


if __name__ == "__main__":
    main()
