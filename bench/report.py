"""Shared by the benches: a wrk runner that cannot misread its output, and the goal table.

Every bench checks its own results and stops with a non-zero exit (``fail``) when a request
failed, a delivery is missing or doubled, or a call was not dialled. Figures that have a goal in
issue 19's table go through ``record``: the line is printed at once and, when
``SWITCHBOARD_BENCH_REPORT`` names a file, appended to it as JSON. ``make bench`` sets that
variable for every bench and then runs this module to print one table of every figure against
its goal:

    .venv/bin/python bench/report.py FILE
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import orjson

REPORT_ENV = "SWITCHBOARD_BENCH_REPORT"


@dataclasses.dataclass(frozen=True)
class Goal:
    label: str
    threshold: float
    unit: str  # "%", "x", "ms", "/s"
    higher_is_better: bool

    def met(self, value: float) -> bool:
        return value >= self.threshold if self.higher_is_better else value < self.threshold

    def text(self) -> str:
        sign = ">=" if self.higher_is_better else "<"
        return f"{sign} {self.threshold:g}{self.unit}"


# (key suffix, label, threshold, unit, higher is better): one row per goal of issue 19's table,
# each measured on both backends.
_GOAL_ROWS: tuple[tuple[str, str, float, str, bool], ...] = (
    ("api.list.oidc", "50-item list, OIDC token / bare ASGI hello", 25, "%", True),
    ("api.list.key", "50-item list, API key / bare ASGI hello", 25, "%", True),
    ("api.catalogue", "GET /api.ashx/v1 / bare ASGI hello", 80, "%", True),
    ("webhooks.ratio", "webhook sender / bare aiohttp, same bodies", 0.8, "x", True),
    ("webhooks.rate", "webhook deliveries per sender core", 2000, "/s", True),
    ("webhooks.first_attempt_p99", "event -> first webhook attempt p99", 100, "ms", False),
    ("calls.dispatch_p99", "dispatch lateness p99, 2,000 due in 20 s on 100 k", 1000, "ms", False),
    ("calls.dial_rate", "dials per second, 2,000 due at once on 100 k", 500, "/s", True),
    ("calls.create_p99", "POST /v1/calls p99 at 16 connections", 50, "ms", False),
    ("transcripts.rare_p99", "transcript q, rare term p99 at 1 M rows", 50, "ms", False),
    ("transcripts.common_p99", "transcript q, common term p99 at 1 M rows", 50, "ms", False),
)
GOALS: dict[str, Goal] = {
    f"{key}.{backend}": Goal(f"{name}: {label}", threshold, unit, higher)
    for backend, name in (("sqlite", "SQLite"), ("postgresql", "PostgreSQL"))
    for key, label, threshold, unit, higher in _GOAL_ROWS
}


def fail(message: str) -> NoReturn:
    """Stop the bench loudly: its figures are not to be trusted."""
    print(f"BENCH FAILED: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def check(condition: bool, message: str) -> None:
    if not condition:
        fail(message)


def record(key: str, value: float, note: str = "") -> None:
    """Print one figure against its goal and append it to the report file, if any."""
    goal = GOALS.get(key)
    if goal is None:
        fail(f"unknown goal {key!r}")
    verdict = "met" if goal.met(value) else "MISSED"
    print(f"{goal.label}: {value:,.4g}{goal.unit} (goal {goal.text()}, {verdict}) {note}".rstrip())
    path = os.environ.get(REPORT_ENV)
    if path:
        with Path(path).open("ab") as out:
            out.write(orjson.dumps({"key": key, "value": value, "note": note}) + b"\n")


def process_cpu(pid: int) -> float:
    """CPU seconds (user and system) process ``pid`` has used so far, from ``/proc``; a figure
    that a VM's slow minutes distort less than wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted, non-empty list."""
    check(bool(sorted_values), "percentile of no values")
    rank = max(1, -(-len(sorted_values) * fraction // 1))  # ceil(n * fraction), at least 1
    return sorted_values[int(rank) - 1]


# wrk's own summary, written as JSON by its ``done`` hook: nothing is parsed from the text
# report (whose "+/- Stdev" column also ends in a percent sign).
_DONE = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.stderr:write(string.format(
    '\\nWRK-JSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
"""


@dataclasses.dataclass(frozen=True)
class WrkResult:
    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    max_ms: float


def wrk(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    duration: float = 10,
    connections: int = 16,
    cpu: int | None = 1,
    method: str = "GET",
    body: bytes | None = None,
) -> WrkResult:
    """Run wrk and return its figures; any failed request (socket error, timeout or a status
    outside 2xx/3xx) makes the bench fail rather than count as served."""
    if shutil.which("wrk") is None:
        fail("install wrk (apt-get install wrk)")
    with tempfile.TemporaryDirectory(prefix="sb-wrk-") as tmp:
        script = Path(tmp) / "bench.lua"
        lua = f'wrk.method = "{method}"\n'
        if body is not None:
            lua += f"wrk.body = [==[{body.decode()}]==]\n"
        script.write_text(lua + _DONE)
        cmd = []
        if cpu is not None and shutil.which("taskset") and (os.cpu_count() or 1) > cpu:
            cmd = ["taskset", "-c", str(cpu)]
        cmd += ["wrk", "-t1", f"-c{connections}", f"-d{duration:g}s", "-s", str(script)]
        for name, value in (headers or {}).items():
            cmd += ["-H", f"{name}: {value}"]
        done = subprocess.run([*cmd, url], capture_output=True, text=True, check=False)
    line = next((x for x in done.stderr.splitlines() if x.startswith("WRK-JSON ")), None)
    if done.returncode != 0 or line is None:
        fail(f"wrk {url} exited {done.returncode}: {done.stdout}{done.stderr}")
    figures = orjson.loads(line.removeprefix("WRK-JSON "))
    errors = {k: figures[k] for k in ("connect", "read", "write", "status", "timeout")}
    check(not any(errors.values()), f"wrk {url}: failed requests {errors}")
    check(figures["requests"] > 0, f"wrk {url}: no request completed")
    return WrkResult(
        requests=figures["requests"],
        rps=figures["requests"] / (figures["duration_us"] / 1e6),
        p50_ms=figures["p50_us"] / 1000,
        p99_ms=figures["p99_us"] / 1000,
        max_ms=figures["max_us"] / 1000,
    )


@dataclasses.dataclass(frozen=True)
class Compared:
    """One subject's wrk run and its share of the baseline runs just before and after it."""

    name: str
    result: WrkResult
    before: WrkResult
    after: WrkResult

    @property
    def share(self) -> float:
        """Requests/s as a percentage of the mean of the two neighbouring baseline runs."""
        return 100 * self.result.rps / ((self.before.rps + self.after.rps) / 2)


def interleaved(
    baseline: str,
    subjects: list[tuple[str, str, dict[str, str]]],
    warmup: float = 2,
    **load: Any,
) -> list[Compared]:
    """Run baseline, subject, baseline, subject, ..., baseline with wrk: each subject is compared
    with the baseline runs on either side of it, so a change in the machine's load cancels.
    ``subjects`` are (name, url, headers); ``load`` goes to every ``wrk`` call alike.

    Every URL is first loaded for ``warmup`` seconds and that run discarded: a server's first
    seconds under load (the interpreter's caches, the CPU's clock coming up) are slower, and a
    cold first baseline would flatter the subject measured after it."""
    if warmup > 0:
        for url, headers in [(baseline, {}), *((url, headers) for _, url, headers in subjects)]:
            wrk(url, headers=headers, **{**load, "duration": warmup})
    runs = [wrk(baseline, **load)]
    compared = []
    for name, url, headers in subjects:
        result = wrk(url, headers=headers, **load)
        runs.append(wrk(baseline, **load))
        compared.append(Compared(name, result, runs[-2], runs[-1]))
    return compared


def median_shares(rounds: list[list[Compared]]) -> dict[str, float]:
    """Each subject's median share over several interleaved rounds: one burst of load from
    elsewhere on the machine moves one round, not the figure."""
    shares: dict[str, list[float]] = {}
    for compared in rounds:
        for row in compared:
            shares.setdefault(row.name, []).append(row.share)
    return {name: statistics.median(values) for name, values in shares.items()}


def print_compared(compared: list[Compared], baseline: str = "bare ASGI hello") -> None:
    print(f"{'endpoint':<20} {'req/s':>10} {'p99 ms':>10} {'/ base':>8}")
    for row in compared:
        print(f"{baseline:<20} {row.before.rps:>10.0f} {row.before.p99_ms:>10.2f}")
        line = f"{row.name:<20} {row.result.rps:>10.0f} {row.result.p99_ms:>10.2f}"
        print(f"{line} {row.share:>7.1f}%")
    if compared:
        last = compared[-1].after
        print(f"{baseline:<20} {last.rps:>10.0f} {last.p99_ms:>10.2f}")


@contextlib.contextmanager
def scratch_postgres(url: str) -> Iterator[str]:
    """A database of its own on the server ``url`` names, dropped afterwards: the benches drop
    and recreate tables, which must never happen in a database someone else uses."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    name = f"sb_bench_{secrets.token_hex(4)}"

    async def admin(sql: str) -> None:
        engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
        async with engine.connect() as conn:
            await conn.execute(text(sql))
        await engine.dispose()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield url.rpartition("/")[0] + "/" + name
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def table(path: Path) -> str:
    """Every goal with the figures recorded in ``path`` (the last one per key wins)."""
    seen: dict[str, dict[str, object]] = {}
    if path.exists():
        for line in path.read_bytes().splitlines():
            if line.strip():
                item = orjson.loads(line)
                seen[item["key"]] = item
    rows = ["| figure | measured | goal | verdict |", "|---|---:|---:|---|"]
    for key, goal in GOALS.items():
        item = seen.get(key)
        if item is None:
            rows.append(f"| {goal.label} | not run | {goal.text()} | - |")
            continue
        value = float(item["value"])  # type: ignore[arg-type]
        verdict = "met" if goal.met(value) else "**missed**"
        rows.append(f"| {goal.label} | {value:,.4g}{goal.unit} | {goal.text()} | {verdict} |")
    return "\n".join(rows)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: report.py FILE")
    print(table(Path(sys.argv[1])))
