"""The search service under load, on loopback: `formula-assets serve` in its own process, 8
client threads querying it for 60 s (text and LaTeX queries of the hand-written set, mixed),
bounded in count and time.

Reported: the time from starting the process to its first answer, latency percentiles, errors,
answers per second, the server's resident memory (now and at its peak), and, in the same run,
one cold `formula-assets search` for comparison. `--scale 100` builds a lake of 175,800
synthetic items first (`benchmarks.serve_lake`: every index, the formulae parsed and keyed for
real) and serves that.

    python -m benchmarks.serve [--scale 1|100] [--clients 8] [--seconds 60]
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

from benchmarks.common import RESULTS, print_table, write_result
from benchmarks.search_queries import load_queries
from formula_assets.core.processes import stop_group
from formula_assets.core.settings import Settings

CLI = Path(sys.executable).parent / "formula-assets"
MAX_REQUESTS = 200_000  # a bound on the count, whatever the speed
STARTUP_LIMIT_S = 600.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _tree(pid: int) -> list[int]:
    """The process and every process below it (the service's workers)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        children = Path(f"/proc/{current}/task/{current}/children")
        if children.exists():
            queue.extend(int(c) for c in children.read_text().split())
    return found


def memory(pid: int) -> dict[str, float]:
    """Resident memory of the service (its processes summed) now and at their peaks, MiB."""
    out = {"VmRSS": 0.0, "VmHWM": 0.0}
    for member in _tree(pid):
        try:
            lines = Path(f"/proc/{member}/status").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, value = line.partition(":")
            if key in out:
                out[key] += int(value.split()[0]) / 1024
    return {"rss_mib": round(out["VmRSS"], 1), "peak_rss_mib": round(out["VmHWM"], 1)}


def wait_ready(port: int, process: subprocess.Popen, limit_s: float) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < limit_s:
        if process.poll() is not None:
            raise RuntimeError(f"the service exited ({process.returncode})")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/api/search?q=energy&kind=text&top=1")
            if connection.getresponse().status == 200:
                return time.perf_counter() - started
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"no answer within {limit_s:.0f} s")


def wait_workers(log: Path, workers: int, process: subprocess.Popen, limit_s: float) -> float:
    """Seconds until every worker process has loaded (each logs its start-up's end): the
    workers take turns loading, so the first answer can come before the last is ready."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit_s:
        if process.poll() is not None:
            raise RuntimeError(f"the service exited ({process.returncode})")
        if log.read_text(errors="replace").count("Application startup complete") >= workers:
            return time.perf_counter() - started
        time.sleep(0.2)
    raise RuntimeError(f"not every worker ready within {limit_s:.0f} s")


def paths(queries: list[dict]) -> list[str]:
    out = []
    for query in queries:
        kind = "text" if query["kind"] == "text" else "latex"
        encoded = urllib.parse.urlencode({"q": query["query"], "kind": kind, "top": 10})
        out.append(f"/api/search?{encoded}")
    return out


def load(
    port: int, requests: list[str], clients: int, seconds: float, keep_alive: bool = False
) -> dict:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(seed: int) -> None:
        rng = random.Random(seed)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.perf_counter() < deadline:
            with lock:
                if len(latencies) >= MAX_REQUESTS:
                    return
            path = rng.choice(requests)
            started = time.perf_counter()
            if not keep_alive:  # a new connection per request, as from many users
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                connection.request("GET", path)
                response = connection.getresponse()
                response.read()
                status = response.status
            except OSError:
                status = -1
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)
                statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    ordered = sorted(latencies)

    def percentile(p: float) -> float:
        return round(1000 * ordered[min(len(ordered) - 1, int(p * len(ordered)))], 1)

    return {
        "requests": len(ordered),
        "seconds": round(wall, 1),
        "per_second": round(len(ordered) / wall, 1),
        "p50_ms": percentile(0.50),
        "p90_ms": percentile(0.90),
        "p99_ms": percentile(0.99),
        "max_ms": round(1000 * ordered[-1], 1),
        "mean_ms": round(1000 * statistics.fmean(ordered), 1),
        "errors": sum(n for s, n in statuses.items() if s != 200),
        "statuses": {str(s): n for s, n in sorted(statuses.items())},
    }


def cold_cli(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [str(CLI), "search", "--text", "kinetic energy", "--top", "10"],
        env=env, capture_output=True, check=True, timeout=120,
    )  # fmt: skip
    return round(time.perf_counter() - started, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=1, choices=[1, 10, 100])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=2, help="the service's processes")
    parser.add_argument(
        "--keep-alive",
        action="store_true",
        help="each client keeps one connection (a worker process then serves it alone)",
    )
    args = parser.parse_args()
    lake = Settings.from_environment().data_lake
    if args.scale > 1:
        from benchmarks.serve_lake import build

        lake = str(build(args.scale, RESULTS / f"lake_{args.scale}x"))
    env = {**os.environ, "FORMULA_ASSETS_DATA_LAKE": lake, "HF_HUB_OFFLINE": "1"}
    port = free_port()
    RESULTS.mkdir(parents=True, exist_ok=True)
    log_path = RESULTS / f"serve_{args.scale}x.log"  # the service's own log
    log = log_path.open("wb")
    process = subprocess.Popen(
        [str(CLI), "serve", "--port", str(port), "--workers", str(args.workers)],
        env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
    )  # fmt: skip
    try:
        startup = wait_ready(port, process, STARTUP_LIMIT_S)
        every_worker = startup + wait_workers(log_path, args.workers, process, STARTUP_LIMIT_S)
        after_start = memory(process.pid)
        figures = load(port, paths(load_queries()), args.clients, args.seconds, args.keep_alive)
        after_load = memory(process.pid)
    finally:
        stop_group(process, grace_s=60)
        log.close()
    cold = cold_cli(env) if args.scale == 1 else None
    print_table(
        f"the service at {args.scale}× the snapshot, {args.clients} clients for "
        f"{args.seconds:.0f} s on loopback",
        ["measure", "value"],
        [
            ["start to the first answer", f"{startup:.2f} s"],
            [f"start to all {args.workers} workers ready", f"{every_worker:.2f} s"],
            ["answers", f"{figures['requests']} ({figures['per_second']}/s)"],
            ["p50 / p90 / p99 / max", f"{figures['p50_ms']} / {figures['p90_ms']} / "
             f"{figures['p99_ms']} / {figures['max_ms']} ms"],
            ["errors", figures["errors"]],
            ["resident memory after start / after load / peak",
             f"{after_start['rss_mib']} / {after_load['rss_mib']} / "
             f"{after_load['peak_rss_mib']} MiB"],
            ["a cold `formula-assets search` (same machine, same run)",
             f"{cold} s" if cold is not None else "—"],
        ],
    )  # fmt: skip
    write_result(
        f"serve_{args.scale}x",
        {
            "scale": args.scale,
            "clients": args.clients,
            "keep_alive": args.keep_alive,
            "workers": args.workers,
            "startup_s": round(startup, 2),
            "every_worker_ready_s": round(every_worker, 2),
            "load": figures,
            "memory_after_start": after_start,
            "memory_after_load": after_load,
            "cold_cli_s": cold,
        },
    )
    return 0 if figures["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
