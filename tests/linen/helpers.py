"""Helpers for the linen tests: a tiny valid PDF and a client bound to one tenant's host."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from httpx import AsyncClient, Response

from tests.factories import TenantFixture

PILLOWCASE = {"code": "PILLOWCASE", "name": "Pillowcase", "category": "bed", "weightGrams": 150}
NAPKIN = {"code": "NAPKIN", "name": "Napkin", "category": "kitchen"}


# The refusal of an order of the double bed set once its pillowcase is retired (decision 0523).
SET_REFUSED = (
    "lines: 'Pillowcase', a component of set 'Double bed set', is deactivated; reactivate it, "
    "or take it out of the set"
)


def refused_inactive(answer: Response, description: str) -> None:
    """``answer`` is the 409 ``inactive`` saying ``description``."""
    assert answer.status_code == 409, answer.text
    assert answer.json() == {"error": "inactive", "error_description": description}


def bed_set_body(duvet: int, pillowcase: int, **extra: Any) -> dict[str, Any]:
    """A double bed set of one duvet cover and two pillowcases."""
    return {
        "code": "SET_DOUBLE", "name": "Double bed set", "category": "bed", "unit": "set",
        "components": [{"itemTypeId": duvet, "qty": 1}, {"itemTypeId": pillowcase, "qty": 2}],
        **extra,
    }  # fmt: skip


def make_pdf(text: str = "Invoice") -> bytes:
    """A minimal one-page PDF with a correct cross-reference table and trailer."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R >>",
    ]
    stream = f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode()
    objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


@dataclass
class Portal:
    """One tenant's view of the portal: its host and a bearer per role."""

    client: AsyncClient
    tenant: TenantFixture
    headers: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    async def open(cls, client: AsyncClient, tenant: TenantFixture) -> Portal:
        portal = cls(client, tenant)
        await portal.auth("admin")
        return portal

    async def auth(self, role: str) -> dict[str, str]:
        """Bearer headers of the user ``admin``, ``power`` or ``user`` (fetched once)."""
        if role not in self.headers:
            token = await self.tenant.token(self.client, role)
            self.headers[role] = {"Authorization": f"Bearer {token}", "Host": self.tenant.host}
        return self.headers[role]

    def as_(self, role: str) -> dict[str, str]:
        return self.headers[role]

    async def get(self, path: str, role: str = "admin", **params: Any) -> Response:
        return await self.client.get(
            f"/api{path}", headers=await self.auth(role), params=params or None
        )

    async def post(self, path: str, body: Any = None, role: str = "admin") -> Response:
        return await self.client.post(f"/api{path}", json=body, headers=await self.auth(role))

    async def patch(self, path: str, body: Any, role: str = "admin") -> Response:
        return await self.client.patch(f"/api{path}", json=body, headers=await self.auth(role))

    async def put(self, path: str, body: Any, role: str = "admin") -> Response:
        return await self.client.put(f"/api{path}", json=body, headers=await self.auth(role))

    async def delete(self, path: str, role: str = "admin") -> Response:
        return await self.client.delete(f"/api{path}", headers=await self.auth(role))

    async def made(self, path: str, body: Any) -> dict[str, Any]:
        response = await self.post(path, body)
        assert response.status_code == 201, response.text
        result: dict[str, Any] = response.json()
        return result

    async def retire(self, *item_type_ids: int) -> None:
        """Deactivate item types, as unticking *active* does."""
        for item_type_id in item_type_ids:
            answer = await self.patch(f"/v1/item-types/{item_type_id}", {"active": False})
            assert answer.status_code == 200, answer.text

    # --- a small world: item types, a laundry with prices and a key, a property ---------

    async def world(self) -> World:
        duvet = await self.made(
            "/v1/item-types",
            {"code": "DUVET_COVER_DOUBLE", "name": "Duvet cover double", "category": "bed",
             "weightGrams": 900},
        )  # fmt: skip
        towel = await self.made(
            "/v1/item-types",
            {"code": "TOWEL_BATH", "name": "Bath towel", "category": "bath", "weightGrams": 500},
        )
        laundry = await self.made("/v1/laundries", {"name": "Blanc Laundry", "email": "a@b.test"})
        await self.made(
            f"/v1/laundries/{laundry['id']}/price-lists",
            {"currency": "EUR", "validFrom": "2026-01-01", "deliveryFee": 500,
             "lateOrderSurcharge": 1000, "perKg": 300,
             "items": [{"itemTypeId": duvet["id"], "unitPrice": 250}]},
        )  # fmt: skip
        key = await self.made(f"/v1/laundries/{laundry['id']}/keys", {"name": "van"})
        prop = await self.made(
            "/v1/properties",
            {"code": "SEA-01", "name": "Sea View", "defaultLaundryId": laundry["id"],
             "address": {"street": "Quay 1", "city": "Porto", "countryCode": "PT"},
             "deliveryNote": "key safe left of the door"},
        )  # fmt: skip
        return World(self, duvet["id"], towel["id"], laundry["id"], key["key"], prop["id"])


@dataclass
class World:
    portal: Portal
    duvet: int
    towel: int
    laundry: int
    key: str
    property: int

    def laundry_headers(self, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key or self.key}", "Host": self.portal.tenant.host}

    async def sheet(self, service_date: str = "2026-01-10", **extra: Any) -> dict[str, Any]:
        body = {
            "propertyId": self.property,
            "serviceDate": service_date,
            "lines": [
                {"itemTypeId": self.duvet, "qtyOrdered": 2},
                {"itemTypeId": self.towel, "qtyOrdered": 4},
            ],
            **extra,
        }
        return await self.portal.made("/v1/sheets", body)

    async def bed_set(self) -> tuple[int, dict[str, Any]]:
        """A pillowcase of 150 g and a double bed set of the duvet cover and two of them: the
        pillowcase's id and the set."""
        pillowcase = await self.portal.made("/v1/item-types", PILLOWCASE)
        made = await self.portal.made("/v1/item-types", bed_set_body(self.duvet, pillowcase["id"]))
        return int(pillowcase["id"]), made

    async def confirmed(self, service_date: str = "2026-01-10") -> dict[str, Any]:
        sheet = await self.sheet(service_date)
        response = await self.portal.post(f"/v1/sheets/{sheet['id']}/confirm")
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    async def delivered(self, service_date: str = "2026-01-10") -> dict[str, Any]:
        sheet = await self.confirmed(service_date)
        response = await self.portal.client.post(
            f"/api/laundry/jobs/{sheet['id']}/delivery",
            json={"lines": [{"itemTypeId": self.duvet, "qtyDelivered": 2, "qtyCollected": 2},
                            {"itemTypeId": self.towel, "qtyDelivered": 4, "qtyCollected": 3}]},
            headers=self.laundry_headers(),
        )  # fmt: skip
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    async def upload(
        self,
        metadata: dict[str, Any],
        pdf: bytes | None = None,
        *,
        key: str | None = None,
        filename: str = "inv.pdf",
    ) -> Response:
        return await self.portal.client.post(
            "/api/laundry/invoices",
            files={
                "file": (filename, pdf if pdf is not None else make_pdf(), "application/pdf"),
                "metadata": (None, json.dumps(metadata), "application/json"),
            },
            headers=self.laundry_headers(key),
        )


def invoice_meta(number: str, sheet_ids: list[int], unit: int = 1000) -> dict[str, Any]:
    lines = [
        {"linenSheetId": sid, "description": "service", "qty": 1, "unitPrice": unit, "net": unit}
        for sid in sheet_ids
    ]
    net = unit * len(sheet_ids)
    return {
        "invoiceNumber": number,
        "invoiceDate": "2026-01-31",
        "periodFrom": "2026-01-01",
        "periodTo": "2026-01-31",
        "currency": "EUR",
        "net": net,
        "tax": net // 5,
        "gross": net + net // 5,
        "lines": lines,
    }
