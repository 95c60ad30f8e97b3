"""Every bench runs to its end at its smallest size, so `make bench` cannot rot unnoticed.

Each bench in ``bench/`` runs as `make bench` runs it (a process of its own, the report file in
``SWITCHBOARD_BENCH_REPORT``) with arguments small enough for seconds rather than minutes. A bench
checks its own results (every request answered, every delivery once, every call dialled) and
exits non-zero when one is wrong, so a pass here means the bench still measures what it says.
The figures of so small a run mean nothing and are not looked at, beyond which goals a bench
records at this size (a goal tied to a size, such as 1 M rows, is recorded only at that size).
They run on SQLite (the room benches on the suite's PostgreSQL and Redis): `make bench` itself
runs the PostgreSQL side, and the suite's time is kept for the tests of the product.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import PG_URL

ROOT = Path(__file__).resolve().parents[2]

# bench -> (its smallest arguments, the goals it records, needs PostgreSQL and Redis)
SMALLEST: dict[str, tuple[list[str], set[str], bool]] = {
    "bench_api.py": (
        ["--duration", "1", "--rounds", "1"],
        {"api.catalogue", "api.list.oidc", "api.list.key"},
        False,
    ),
    "bench_bridge.py": (["--calls", "4", "--rate", "20", "--window", "1"], set(), False),
    "bench_bridge_client.py": (["--dials", "30", "--rounds", "1"], set(), False),
    "bench_calls.py": (
        ["--duration", "1", "--backlog", "200", "--due", "20", "--window", "1"],
        {"calls.create_p99"},  # lateness and dial rate only at the goal's own backlog
        False,
    ),
    "bench_catalogue_inprocess.py": (["--requests", "200", "--rounds", "1"], set(), False),
    "bench_engines.py": (["--ticks", "200"], set(), False),
    "bench_linen.py": (["--sheets", "500", "--repeat", "1", "--postgres", ""], set(), False),
    "bench_list_inprocess.py": (["--requests", "20", "--rounds", "1"], set(), False),
    "bench_relay_filter.py": ([], set(), False),
    "bench_room_fanout.py": (["--steady", "100", "--burst", "500"], set(), True),
    "bench_room_members.py": (["--n", "20"], set(), True),
    "bench_rooms.py": (["--rooms", "2", "--peers", "4", "--concurrency", "2"], set(), False),
    "bench_routing.py": (["--sizes", "10,100"], set(), False),
    "bench_split_sqlite.py": (
        ["--calls", "40", "--sim-speed", "200", "--linger", "1"],
        set(),
        False,
    ),
    "bench_transcripts.py": (
        ["--rows", "2000", "--requests", "2", "--postgres", ""],
        set(),  # recorded only at the goal's own 1 M rows
        False,
    ),
    "bench_vad.py": ([], set(), False),
    "bench_webhooks.py": (
        ["--events", "50", "--seconds", "1", "--rounds", "2"],
        {"webhooks.ratio", "webhooks.rate", "webhooks.first_attempt_p99"},
        False,
    ),
}


def test_every_bench_has_its_smallest_run() -> None:
    assert {p.name for p in (ROOT / "bench").glob("bench_*.py")} == set(SMALLEST)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMALLEST))
def test_the_bench_runs_and_records_its_goals(name: str, tmp_path: Path) -> None:
    arguments, goals, services = SMALLEST[name]
    if services:  # Redis: the benches' own default address
        if not PG_URL:
            pytest.skip("needs SWITCHBOARD_TEST_POSTGRES_URL")
        arguments = [*arguments, "--postgres", PG_URL]
    report = tmp_path / "figures.jsonl"
    env = {**os.environ, "SWITCHBOARD_BENCH_REPORT": str(report)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / name), *arguments],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    lines = report.read_bytes().splitlines() if report.exists() else []
    recorded = {orjson.loads(line)["key"] for line in lines}
    assert recorded == {f"{goal}.sqlite" for goal in goals}
