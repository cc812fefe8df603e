#!/usr/bin/env python3
"""One shared crawl, N worker processes on this machine, one private redis-server.

Prints (and writes to OUT/result.json) pages/s, Redis calls per page (script
calls and every command, those the scripts run included, from INFO
commandstats), Redis CPU per page (INFO cpu, user + sys) and Redis memory per
million queued and per million seen URLs (MEMORY USAGE of the queues at the
largest queue seen, and of the seen set at the end).

    scripts/cluster-bench.py --workers 2 --bin target/release/crawldeck --out /tmp/b -- \\
        --seeds seeds.txt --scope any --delay 0s --delay-factor 0

Everything after `--` goes to every worker's `crawl --headless`; the first
worker starts alone, the others once it has queued the seeds. As the custom
crawler of ../shared/bench/run.sh:

    ../shared/bench/run.sh --site small OURS -- "$PWD/scripts/cluster-bench.py" --workers 2 \\
        --bin "$PWD/target/release/crawldeck" --out {out_dir} -- --seeds {seeds_file} --scope any \\
        --concurrency {concurrency} --per-host {per_host} --delay 0s --delay-factor 0 --max-pages 1000000

Every process is bounded by --time-limit and stopped by pid at the end.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

CRAWL = "bench"
PREFIX = "crawldeck:{%s}:" % CRAWL
SAMPLE_EVERY = 2.0


class Redis:
    """A minimal RESP client: one connection, one command at a time."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.file = self.sock.makefile("rb")
        self.sent = 0

    def __call__(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        self.sent += 1
        return self._read()

    def _read(self):
        line = self.file.readline().rstrip(b"\r\n")
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.file.read(n + 2)[:-2]
            return data.decode(errors="replace")
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RuntimeError("unexpected reply %r" % line)


def info(r, section):
    fields = {}
    for line in r("INFO", section).splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            fields[k] = v
    return fields


def command_calls(r):
    """(script calls, all calls, calls by command) so far."""
    scripts = total = 0
    by_name = {}
    for name, stats in info(r, "commandstats").items():
        calls = int(dict(kv.split("=") for kv in stats.split(","))["calls"])
        total += calls
        by_name[name[len("cmdstat_"):]] = calls
        if name in ("cmdstat_evalsha", "cmdstat_eval"):
            scripts += calls
    return scripts, total, by_name


def per_page_by_name(before, after, pages):
    """Calls per page of each command, most called first."""
    rows = [(name, (calls - before.get(name, 0)) / max(pages, 1))
            for name, calls in after.items()]
    rows.sort(key=lambda row: -row[1])
    return {name: round(n, 2) for name, n in rows if n >= 0.01}


def cpu_seconds(r):
    cpu = info(r, "cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def queue_memory(r):
    """(bytes of all host queues, URLs queued)."""
    cursor, size, queued = "0", 0, 0
    while True:
        cursor, keys = r("SCAN", cursor, "MATCH", PREFIX + "q:*", "COUNT", 1000)
        for key in keys:
            size += r("MEMORY", "USAGE", key) or 0
            queued += r("ZCARD", key)
        if cursor == "0":
            return size, queued


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--bin", required=True, help="the crawldeck binary")
    ap.add_argument("--out", required=True, help="directory for data, logs and result.json")
    ap.add_argument("--time-limit", type=int, default=600, help="seconds, for every process")
    ap.add_argument("crawl_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    crawl_args = a.crawl_args[1:] if a.crawl_args[:1] == ["--"] else a.crawl_args
    os.makedirs(a.out, exist_ok=True)
    port = free_port()
    limit = ["timeout", "-k", "5", str(a.time_limit)]
    redis = subprocess.Popen(
        limit + ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no"],
        stdout=open(os.path.join(a.out, "redis.log"), "w"), stderr=subprocess.STDOUT,
        start_new_session=True)
    workers = []
    try:
        deadline = time.time() + 10
        while True:
            try:
                r = Redis(port)
                if r("PING") == "PONG":
                    break
            except OSError:
                pass
            if time.time() > deadline:
                sys.exit("redis-server did not answer within 10 s (is it installed?)")
            time.sleep(0.05)
        scripts0, total0, by_name0 = command_calls(r)
        cpu0 = cpu_seconds(r)
        url = "redis://127.0.0.1:%d/0" % port
        started = time.time()

        def worker(i):
            cmd = limit + [a.bin, "crawl", "--headless", "--exit-when-done",
                           "--redis", url, "--crawl", CRAWL,
                           "--data", os.path.join(a.out, "w%d" % i)] + crawl_args
            log = open(os.path.join(a.out, "w%d.stderr" % i), "w")
            return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log,
                                    start_new_session=True)

        workers.append(worker(1))
        while not r("HGET", PREFIX + "n", "queued") and workers[0].poll() is None:
            time.sleep(0.02)
        workers += [worker(i) for i in range(2, a.workers + 1)]
        peak = (0, 0)
        last_sample = 0.0
        while any(w.poll() is None for w in workers):
            if time.time() - last_sample >= SAMPLE_EVERY:
                last_sample = time.time()
                size, queued = queue_memory(r)
                if queued > peak[1]:
                    peak = (size, queued)
            time.sleep(0.1)
        elapsed = time.time() - started
        sampler_calls = r.sent
        scripts, total, by_name = command_calls(r)
        cpu = cpu_seconds(r) - cpu0
        beats = [json.loads(b) for b in r("HVALS", PREFIX + "beats")]
        pages = sum(b["pages"] for b in beats)
        seen = r("SCARD", PREFIX + "seen")
        seen_bytes = r("MEMORY", "USAGE", PREFIX + "seen", "SAMPLES", "0") or 0
        used_memory = int(info(r, "memory")["used_memory"])
        codes = [w.returncode for w in workers]
        result = {
            "workers": a.workers,
            "exit_codes": codes,
            "pages": pages,
            "pages_per_worker": sorted((b["pages"] for b in beats), reverse=True),
            "elapsed_s": round(elapsed, 1),
            "pages_per_s": round(pages / elapsed, 1),
            "script_calls_per_page": round((scripts - scripts0) / max(pages, 1), 2),
            # The sampler's own commands (and the INFO/HVALS above) are left out.
            "redis_commands_per_page": round(
                (total - total0 - sampler_calls) / max(pages, 1), 1),
            "redis_cpu_ms_per_page": round(1000 * cpu / max(pages, 1), 3),
            # Includes the sampler's SCAN, ZCARD and MEMORY calls.
            "commands_per_page_by_name": per_page_by_name(by_name0, by_name, pages),
            "redis_cpu_s": round(cpu, 2),
            "queued_peak": peak[1],
            "queue_mb_per_million_queued": round(peak[0] / max(peak[1], 1), 1),
            "seen": seen,
            "seen_mb_per_million_seen": round(seen_bytes / max(seen, 1), 1),
            "redis_used_memory_mb_at_end": round(used_memory / 1e6, 1),
            "load_average": os.getloadavg(),
        }
        with open(os.path.join(a.out, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
        print(json.dumps(result))
        sys.exit(0 if all(c == 0 for c in codes) else 1)
    finally:
        for w in workers:
            stop(w)
        stop(redis)


if __name__ == "__main__":
    main()
