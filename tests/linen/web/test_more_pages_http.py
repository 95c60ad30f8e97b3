"""The laundry and statistics pages over HTTP: keys shown once, rotated and revoked; the chart's
totals and the CSV."""

from __future__ import annotations

import csv
import io
import re

from httpx import AsyncClient

from tests.console.signin import csrf_of
from tests.linen.helpers import World
from tests.linen.web.test_pages_http import web_sign_in


async def test_laundry_keys_are_shown_once_rotated_and_revoked(
    app_client: AsyncClient, world: World
) -> None:
    await web_sign_in(app_client, "admin")
    page = await app_client.get(f"/app/laundries/{world.laundry}")
    assert "Duvet cover double" in page.text  # the price list names its item types
    assert "2.50 EUR" in page.text
    issued = await app_client.post(
        f"/app/laundries/{world.laundry}/keys", data={"csrf": csrf_of(page.text), "name": "van 2"}
    )
    assert issued.status_code == 201
    key = re.search(r"data-secret>([^<]+)<", issued.text)
    assert key is not None
    jobs = await app_client.get("/api/laundry/jobs", headers=world.laundry_headers(key.group(1)))
    assert jobs.status_code == 200
    again = await app_client.get(f"/app/laundries/{world.laundry}")
    assert key.group(1) not in again.text  # shown once
    assert "never" in again.text  # the first key was not used yet
    key_id = re.findall(r"/keys/(\d+)/rotate", again.text)[-1]
    rotated = await app_client.post(
        f"/app/laundries/{world.laundry}/keys/{key_id}/rotate", data={"csrf": csrf_of(again.text)}
    )
    fresh = re.search(r"data-secret>([^<]+)<", rotated.text)
    assert fresh is not None
    assert fresh.group(1) != key.group(1)
    old = await app_client.get("/api/laundry/jobs", headers=world.laundry_headers(key.group(1)))
    assert old.status_code == 401
    new_id = re.findall(r"/keys/(\d+)/revoke", rotated.text)[-1]
    revoked = await app_client.post(
        f"/app/laundries/{world.laundry}/keys/{new_id}/revoke", data={"csrf": csrf_of(again.text)}
    )
    assert revoked.status_code == 303
    gone = await app_client.get("/api/laundry/jobs", headers=world.laundry_headers(fresh.group(1)))
    assert gone.status_code == 401
    await web_sign_in(app_client, "user", switch=True)
    read_only = await app_client.get(f"/app/laundries/{world.laundry}")
    assert "/rotate" not in read_only.text
    assert 'id="new-key"' not in read_only.text


async def test_the_statistics_chart_shows_the_totals(app_client: AsyncClient, world: World) -> None:
    await world.delivered("2026-01-10")  # 2 duvets + 4 towels delivered
    await world.confirmed("2026-02-03")  # 2 + 4 ordered
    await world.confirmed("2026-02-04")
    await web_sign_in(app_client, "user")
    page = await app_client.get(
        "/app/statistics", params={"groupBy": "month", "start": "2026-01-01", "end": "2026-02-28"}
    )
    assert page.status_code == 200
    items = page.text.split('data-chart="Items"')[1].split("</svg>")[0]
    bars = dict(re.findall(r'data-label="([^"]+)" data-value="([^"]+)"', items))
    assert bars == {"2026-01": "6", "2026-02": "12"}
    cost = page.text.split('data-chart="Estimated cost"')[1].split("</svg>")[0]
    # January: 2 duvets at 2.50 + 4 towels by weight (2 kg at 3.00) + 5.00 delivery fee.
    assert 'data-label="2026-01" data-value="16.00 EUR"' in cost
    exported = await app_client.get(
        "/app/statistics.csv",
        params={"groupBy": "month", "start": "2026-01-01", "end": "2026-02-28"},
    )
    assert exported.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert [(r["period"], r["sheets"], r["items"]) for r in rows] == [
        ("2026-01", "1", "6"),
        ("2026-02", "2", "12"),
    ]
