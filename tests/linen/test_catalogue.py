"""Item types, properties, groups, laundries and price lists over HTTP."""

from __future__ import annotations

from tests.linen.helpers import Portal, World, invoice_meta


async def test_item_types_sets_and_rules(portal: Portal) -> None:
    sheet = await portal.made(
        "/v1/item-types", {"code": "SHEET_DOUBLE", "name": "Sheet", "category": "bed"}
    )
    pillow = await portal.made(
        "/v1/item-types", {"code": "PILLOWCASE", "name": "Pillowcase", "category": "bed"}
    )
    bed_set = await portal.made(
        "/v1/item-types",
        {"code": "BED_SET_DOUBLE", "name": "Double bed set", "category": "bed", "unit": "set",
         "components": [{"itemTypeId": sheet["id"], "qty": 1},
                        {"itemTypeId": pillow["id"], "qty": 2}]},
    )  # fmt: skip
    assert bed_set["components"] == [
        {"itemTypeId": sheet["id"], "qty": 1}, {"itemTypeId": pillow["id"], "qty": 2},
    ]  # fmt: skip
    refused = [
        ({"code": "SHEET_DOUBLE", "name": "Again", "category": "bed"}, 409),
        ({"code": "bad code", "name": "x", "category": "bed"}, 400),
        ({"code": "X", "name": "x", "category": "garden"}, 400),
        ({"code": "X", "name": "x", "category": "bed", "weightGrams": -1}, 400),
        ({"code": "X", "name": "x", "category": "bed",
          "components": [{"itemTypeId": sheet["id"], "qty": 1}]}, 400),
        ({"code": "X", "name": "x", "category": "bed", "unit": "set",
          "components": [{"itemTypeId": bed_set["id"], "qty": 1}]}, 400),
        ({"code": "X", "name": "x", "category": "bed", "unit": "set",
          "components": [{"itemTypeId": 999, "qty": 1}]}, 400),
    ]  # fmt: skip
    for body, status in refused:
        assert (await portal.post("/v1/item-types", body)).status_code == status, body
    listed = (await portal.get("/v1/item-types", sort="-code")).json()
    assert [i["code"] for i in listed["data"]] == ["SHEET_DOUBLE", "PILLOWCASE", "BED_SET_DOUBLE"]
    component = await portal.delete(f"/v1/item-types/{sheet['id']}")
    assert (component.status_code, component.json()["error"]) == (409, "in_use")
    updated = await portal.patch(f"/v1/item-types/{pillow['id']}", {"active": False})
    assert updated.json()["active"] is False
    assert (await portal.get("/v1/item-types", active="true")).json()["total"] == 2
    assert (await portal.patch("/v1/item-types/999", {"name": "x"})).status_code == 404


async def test_properties_groups_and_references(world: World) -> None:
    portal = world.portal
    group = await portal.made("/v1/groups", {"name": "Owner Silva", "kind": "owner"})
    prop = await portal.made(
        "/v1/properties",
        {"code": "RIV-3", "name": "River Loft", "timezone": "Europe/Lisbon", "bedrooms": 2,
         "beds": [{"bedType": "double", "count": 1}, {"bedType": "sofa", "count": 1}],
         "linenPar": [{"itemTypeId": world.duvet, "qty": 3}], "groupIds": [group["id"]]},
    )  # fmt: skip
    assert prop["groupIds"] == [group["id"]]
    assert prop["beds"][1] == {"bedType": "sofa", "count": 1}
    got = (await portal.get(f"/v1/groups/{group['id']}")).json()
    assert got["propertyIds"] == [prop["id"]]
    refused = [
        {"code": "RIV-3", "name": "dup"},
        {"code": "X1", "name": "x", "timezone": "Mars/Base"},
        {"code": "X1", "name": "x", "defaultLaundryId": 999},
        {"code": "X1", "name": "x", "groupIds": [999]},
        {"code": "X1", "name": "x", "linenPar": [{"itemTypeId": world.duvet, "qty": -1}]},
        {"code": "X1", "name": "x", "address": {"countryCode": "Portugal"}},
    ]
    for body in refused:
        response = await portal.post("/v1/properties", body)
        assert response.status_code in (400, 409), body
    assert (await portal.get("/v1/properties")).json()["total"] == 2
    found = (await portal.get("/v1/properties", q="river")).json()["data"]
    assert [p["code"] for p in found] == ["RIV-3"]
    in_group = (await portal.get("/v1/properties", groupId=group["id"])).json()["data"]
    assert [p["id"] for p in in_group] == [prop["id"]]
    cleared = await portal.patch(f"/v1/properties/{prop['id']}", {"groupIds": []})
    assert cleared.json()["groupIds"] == []
    await world.sheet()
    in_use = await portal.delete(f"/v1/properties/{world.property}")
    assert (in_use.status_code, in_use.json()["error"]) == (409, "in_use")
    in_use = await portal.delete(f"/v1/item-types/{world.duvet}")
    assert (in_use.status_code, in_use.json()["error"]) == (409, "in_use")
    assert (await portal.delete(f"/v1/properties/{prop['id']}")).status_code == 200
    assert (await portal.get(f"/v1/properties/{prop['id']}")).status_code == 404


async def test_price_lists_do_not_overlap(world: World) -> None:
    portal = world.portal
    url = f"/v1/laundries/{world.laundry}/price-lists"
    first = (await portal.get(url)).json()["data"][0]
    overlap = await portal.post(url, {"currency": "EUR", "validFrom": "2026-06-01"})
    assert (overlap.status_code, overlap.json()["error"]) == (409, "overlapping_price_list")
    closed = dict(first, validTo="2026-05-31")
    assert (await portal.put(f"{url}/{first['id']}", closed)).status_code == 200
    summer = await portal.post(
        url,
        {"currency": "EUR", "validFrom": "2026-06-01", "deliveryFee": 0,
         "items": [{"itemTypeId": world.duvet, "unitPrice": 400}]},
    )  # fmt: skip
    assert summer.status_code == 201
    june = await world.sheet("2026-06-15")
    assert june["estimatedCost"] == {"amount": 800, "currency": "EUR"}
    january = await world.sheet("2026-01-15")
    assert january["estimatedCost"]["amount"] == 1600
    bad = await portal.post(
        url,
        {
            "currency": "EUR",
            "validFrom": "2027-01-01",
            "items": [{"itemTypeId": world.duvet, "unitPrice": -1}],
        },
    )
    assert bad.status_code == 400
    backwards = await portal.post(
        url, {"currency": "EUR", "validFrom": "2027-02-01", "validTo": "2027-01-01"}
    )
    assert backwards.status_code == 400
    assert (await portal.get(url)).json()["total"] == 2


async def test_a_property_or_laundry_still_referred_to_names_what_refers_to_it(
    world: World,
) -> None:
    portal = world.portal
    delivered = await world.delivered()
    assert (await world.upload(invoice_meta("INV-7", [delivered["id"]]))).status_code == 201
    await portal.made(
        "/v1/vault",
        {"propertyId": world.property, "kind": "key-safe", "label": "Key safe", "secret": "1234"},
    )
    expected = {
        f"/v1/properties/{world.property}": "the property is still used by sheet "
        f"{delivered['number']}, invoice INV-7, vault entry 'Key safe'; deactivate it instead",
        f"/v1/laundries/{world.laundry}": "the laundry is still used by sheet "
        f"{delivered['number']}, invoice INV-7; deactivate it instead",
    }
    for path, description in expected.items():
        refused = await portal.delete(path)
        assert refused.status_code == 409, path
        assert refused.json() == {"error": "in_use", "error_description": description}
        assert (await portal.get(path)).status_code == 200
    for day in ("2026-02-01", "2026-02-02", "2026-02-03"):
        await world.sheet(day)
    many = (await portal.delete(f"/v1/laundries/{world.laundry}")).json()["error_description"]
    assert many.startswith("the laundry is still used by sheet LS-2026-000001, sheet ")
    assert many.endswith(", ...; deactivate it instead")
    # Its keys and price lists go with a laundry that nothing else refers to.
    spare = await portal.made("/v1/laundries", {"name": "Spare"})
    await portal.made(f"/v1/laundries/{spare['id']}/keys", {"name": "van"})
    await portal.made(
        f"/v1/laundries/{spare['id']}/price-lists", {"currency": "EUR", "validFrom": "2026-01-01"}
    )
    assert (await portal.delete(f"/v1/laundries/{spare['id']}")).status_code == 200
