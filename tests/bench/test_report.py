"""The benches' shared runner must not turn failed requests into throughput."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from aiohttp import web

from tests.aioserve import serving

ROOT = Path(__file__).resolve().parents[2]


def load_report() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


report = load_report()


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert report.percentile(values, 0.99) == 99.0
    assert report.percentile(values, 0.5) == 50.0
    assert report.percentile([7.0], 0.99) == 7.0


def test_table_lists_every_goal_with_its_verdict(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "figures.jsonl"
    monkeypatch.setenv(report.REPORT_ENV, str(path))
    report.record("api.catalogue.sqlite", 91.0)
    report.record("calls.create_p99.sqlite", 120.0)
    table = report.table(path)
    assert "| SQLite: GET /api.ashx/v1 / bare ASGI hello | 91% | >= 80% | met |" in table
    assert "| SQLite: POST /v1/calls p99 at 16 connections | 120ms | < 50ms | **missed** |" in table
    assert table.count("not run") == len(report.GOALS) - 2
    with pytest.raises(SystemExit):
        report.record("no.such.goal", 1.0)


def answering(status: int) -> web.Application:
    async def answer(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=status, text="x")

    app = web.Application()
    app.router.add_route("*", "/", answer)
    return app


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("wrk") is None, reason="needs Debian's wrk")
async def test_wrk_reads_its_figures_and_fails_on_any_failed_request() -> None:
    async with serving(answering(200)) as ok, serving(answering(500)) as bad:
        result = await asyncio.to_thread(
            report.wrk, f"{ok}/", duration=1, connections=2, cpu=None,
            method="POST", body=b'{"a": 1}',
        )  # fmt: skip
        assert result.requests > 0
        assert result.rps > 0
        assert 0 < result.p50_ms <= result.p99_ms <= result.max_ms
        with pytest.raises(SystemExit):
            await asyncio.to_thread(report.wrk, f"{bad}/", duration=1, connections=2, cpu=None)
    with pytest.raises(SystemExit):  # nothing listens there now: socket errors, not throughput
        await asyncio.to_thread(report.wrk, f"{bad}/x", duration=1, connections=2, cpu=None)


def test_every_goal_is_measured_on_both_backends() -> None:
    sqlite = {k.removesuffix(".sqlite") for k in report.GOALS if k.endswith(".sqlite")}
    postgres = {k.removesuffix(".postgresql") for k in report.GOALS if k.endswith(".postgresql")}
    assert sqlite == postgres
    assert len(report.GOALS) == 2 * len(sqlite) == 22
    assert report.GOALS["api.list.key.postgresql"].label.startswith("PostgreSQL: 50-item list")


def test_compared_share_is_against_the_mean_of_its_neighbouring_baselines() -> None:
    def run(rps: float) -> object:
        return report.WrkResult(requests=1, rps=rps, p50_ms=1, p99_ms=1, max_ms=1)

    row = report.Compared("list", run(300), run(1000), run(2000))
    assert row.share == 20.0


def test_a_figure_over_rounds_is_the_median_share() -> None:
    def row(name: str, rps: float) -> object:
        hello = report.WrkResult(requests=1, rps=1000, p50_ms=1, p99_ms=1, max_ms=1)
        result = report.WrkResult(requests=1, rps=rps, p50_ms=1, p99_ms=1, max_ms=1)
        return report.Compared(name, result, hello, hello)

    rounds = [[row("list", 300), row("cat", 800)], [row("list", 900), row("cat", 700)]]
    rounds.append([row("list", 400), row("cat", 100)])
    assert report.median_shares(rounds) == {"list": 40.0, "cat": 70.0}
