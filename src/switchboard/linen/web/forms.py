"""Reading the web app's form fields into the Data API's bodies: money, dates, checkboxes and
``<name>_<id>`` quantity grids. Malformed values are 400s, as in the Data API."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

from pydantic import BaseModel
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from switchboard.kit.errors import BadRequest
from switchboard.kit.schemas import FORM
from switchboard.linen.web.deps import Viewer, render
from switchboard.web.pages import form_int

M = TypeVar("M", bound=BaseModel)

MONEY = re.compile(r"^\d{1,10}([.,]\d{1,2})?$")


def form_money(value: object, name: str) -> int | None:
    """An amount in major units (``12.5``, ``12,50``) as integer minor units; blank is None."""
    text = str(value if value is not None else "").strip()
    if text == "":
        return None
    if not MONEY.match(text):
        raise BadRequest(f"{name}: an amount like 12.50")
    try:
        return int(Decimal(text.replace(",", ".")) * 100)
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        raise BadRequest(f"{name}: an amount like 12.50") from None


def form_date(value: object, name: str) -> dt.date | None:
    """A ``YYYY-MM-DD`` field (what ``<input type=date>`` sends); blank is None."""
    text = str(value if value is not None else "").strip()
    if text == "":
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"{name}: a date as YYYY-MM-DD") from None


def form_flag(form: Any, name: str) -> bool:
    """A checkbox: present means checked."""
    return form.get(name) is not None


def form_grid(form: Any, prefix: str) -> dict[int, str]:
    """The fields named ``<prefix><id>`` by id, in form order: ``{12: "3"}`` for ``qty_12=3``."""
    return {
        form_int(name.removeprefix(prefix), name) or 0: str(value)
        for name, value in form.multi_items()
        if name.startswith(prefix)
    }


def quantities(form: Any, prefix: str) -> list[dict[str, int]]:
    """``[{"itemTypeId": id, "qty": n}]`` for every ``<prefix><id>`` field above zero."""
    out = []
    for item_type_id, value in form_grid(form, prefix).items():
        qty = form_int(value, f"{prefix}{item_type_id}", default=0) or 0
        if qty > 0:
            out.append({"itemTypeId": item_type_id, "qty": qty})
    return out


async def read_body(request: Request, model: type[M], build: Callable[[FormData], Any]) -> M:
    """The request's form turned by ``build`` into the Data API's body, validated by ``model``
    as a form (text values converted; a bad value is the Data API's 400)."""
    return model.model_validate(build(await request.form()), context=FORM)


def see(url: str) -> Response:
    """After a successful post: the page to show (303, so a reload does not post again)."""
    return RedirectResponse(url, status_code=303)


def confirmed(form: Any) -> bool:
    """Whether a destructive post comes from its confirmation page (``ask_first``)."""
    return bool(form.get("confirmed") == "yes")


def ask_first(
    request: Request, viewer: Viewer, *, question: str, consequence: str, button: str, back: str
) -> Response:
    """The page that asks before a destructive post is carried out: its form posts again to
    the same URL with ``confirmed=yes``, Cancel goes ``back``. The pages use no script, so
    the question is a page of its own, as the console asks before replacing its whitelist."""
    return render(
        request, "confirm.html", viewer, question=question, consequence=consequence,
        button=button, action=request.url.path, back=back,
    )  # fmt: skip
