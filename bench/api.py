"""Jobs per second through the HTTP API, on loopback.

Run ``python -m bench.api``. It starts ``skillwire serve`` (a separate process, SQLite,
the embedded offline model: deterministic and effectively zero-latency) on a free
127.0.0.1 port with two keys, a user and a supervisor, and drives it from client threads
over keep-alive HTTP/1.1 connections (the standard library's ``http.client``). Each job
is the refund flow of ``examples/refund_support``, three requests:

1. ``POST /api/jobs`` "I want a refund of $750" -> paused, USER_ACTION_REQUIRED;
2. ``POST /api/jobs/{id}/input`` order_id=ORD-12345 -> paused, APPROVAL_REQUIRED;
3. ``POST /api/jobs/{id}/approval`` approve, as the supervisor -> completed.

Every answer is checked. One JSON line is printed::

    {"bench": "api", "jobs": 200, "seconds": 4.1, "jobs_per_s": 48.8, ...}

``--in-process`` serves from a thread of this process instead (then the clients and the
server share one interpreter lock). Bounded: loopback only, a fixed number of jobs.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SKILL = ROOT / "examples" / "refund_support" / "domain.yaml"
USER_KEY, SUPERVISOR_KEY = "bench-user-key", "bench-supervisor-key"


def _config(folder: Path) -> Path:
    path = folder / "skillwire.toml"
    lines = []
    for name, key, role in (("bench", USER_KEY, "user"), ("boss", SUPERVISOR_KEY, "supervisor")):
        digest = hashlib.sha256(key.encode()).hexdigest()
        lines.append(
            f'[[server.keys]]\nprincipal = "{name}"\nroles = ["{role}"]\nkey_sha256 = "{digest}"\n'
        )
    path.write_text("\n".join(lines))
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _ready(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Wait until the server answers (bounded); fail if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"skillwire serve exited with {process.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/api/openapi.json")
            if conn.getresponse().status == 200:
                conn.close()
                return
        except OSError:
            time.sleep(0.05)  # the process is still starting; a bench may poll
    raise SystemExit("skillwire serve did not answer in time")


@contextmanager
def subprocess_server(folder: Path) -> Iterator[tuple[str, int]]:
    """``skillwire serve`` in its own process; yields (host, port)."""
    port = _free_port()
    env = {**os.environ, "SKILLWIRE_CONFIG": str(_config(folder))}
    command = [sys.executable, "-m", "skillwire", "serve", str(SKILL), "--port", str(port)]
    command += ["--db", str(folder / "jobs.db")]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _ready(port, process)
        yield "127.0.0.1", port
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def thread_server(folder: Path) -> Iterator[tuple[str, int]]:
    """The server in a thread of this process; yields (host, port)."""
    from skillwire.config import load_config
    from skillwire.server import ServerSettings, create_app
    from skillwire.server.serve import running

    settings = ServerSettings(
        skill_paths=[SKILL],
        db=folder / "jobs.db",
        config=load_config(_config(folder)),
        recover_on_start=False,
    )
    with running(create_app(settings)) as url:
        host, _, port = url.removeprefix("http://").partition(":")
        yield host, int(port)


class Client:
    """One keep-alive connection."""

    def __init__(self, host: str, port: int) -> None:
        self.conn = http.client.HTTPConnection(host, port, timeout=60)

    def post(self, path: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST JSON; the decoded answer (exits on an unexpected status)."""
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.conn.request("POST", path, json.dumps(body), headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.status not in (200, 201):
            raise SystemExit(f"{path}: {response.status} {data[:300]!r}")
        answer: dict[str, Any] = json.loads(data)
        return answer

    def one_job(self) -> None:
        """The three requests of one refund job, each answer checked."""
        job = self.post(
            "/api/jobs",
            USER_KEY,
            {"skill_id": "refund-support", "message": "I want a refund of $750"},
        )
        _expect(job, "paused", "USER_ACTION_REQUIRED")
        base = f"/api/jobs/{job['id']}"
        job = self.post(f"{base}/input", USER_KEY, {"input": {"order_id": "ORD-12345"}})
        _expect(job, "paused", "APPROVAL_REQUIRED")
        pause = job["waiting"]["correlation_id"]  # a decision names the pause it answers
        body = {"decision": "approve", "correlation_id": pause}
        job = self.post(f"{base}/approval", SUPERVISOR_KEY, body)
        _expect(job, "completed", "SUCCESS")


def _expect(job: dict[str, Any], status: str, outcome: str) -> None:
    if (job["status"], job["outcome_class"]) != (status, outcome):
        raise SystemExit(f"expected {status}/{outcome}, got {job['status']}/{job['outcome_class']}")


def run(host: str, port: int, jobs: int, threads: int) -> tuple[float, list[float]]:
    """``jobs`` jobs over ``threads`` connections; (wall seconds, per-job seconds)."""
    durations: list[float] = []
    lock = threading.Lock()
    counts = [jobs // threads + (1 if i < jobs % threads else 0) for i in range(threads)]
    failures: list[BaseException] = []

    def worker(count: int) -> None:
        client = Client(host, port)
        try:
            for _ in range(count):
                t0 = time.perf_counter()
                client.one_job()
                with lock:
                    durations.append(time.perf_counter() - t0)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    workers = [threading.Thread(target=worker, args=(c,)) for c in counts if c]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if failures:
        raise SystemExit(f"a client failed: {failures[0]}")
    return time.perf_counter() - start, durations


def main(argv: list[str] | None = None) -> None:
    """Parse options, run, print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=200, help="jobs timed")
    parser.add_argument("--threads", type=int, default=4, help="client connections")
    parser.add_argument("--warmup", type=int, default=10, help="jobs run first, not timed")
    parser.add_argument("--in-process", action="store_true", help="serve from a thread here")
    ns = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="skillwire-bench-api-") as tmp:
        serve = thread_server if ns.in_process else subprocess_server
        with serve(Path(tmp)) as (host, port):
            run(host, port, ns.warmup, 1)
            seconds, durations = run(host, port, ns.jobs, ns.threads)
    print(
        json.dumps(
            {
                "bench": "api",
                "jobs": ns.jobs,
                "seconds": round(seconds, 3),
                "jobs_per_s": round(ns.jobs / seconds, 1),
                "requests_per_s": round(3 * ns.jobs / seconds, 1),
                "ms_per_job_median": round(statistics.median(durations) * 1000, 2),
                "threads": ns.threads,
                "server": "thread" if ns.in_process else "process",
                "model": "offline",
                "python": platform.python_version(),
            }
        )
    )


if __name__ == "__main__":
    main()
