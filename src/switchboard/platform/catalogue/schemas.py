from __future__ import annotations

from switchboard.kit.schemas import Schema


class CatalogueRoute(Schema):
    method: str
    path: str
    summary: str
    auth: bool


class Catalogue(Schema):
    name: str
    version: str
    software_version: str
    build: str
    docs: str
    openapi: str
    routes: list[CatalogueRoute]
