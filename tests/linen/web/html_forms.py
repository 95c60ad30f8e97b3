"""What a browser would post for a page's form, untouched: its inputs' values, ticked boxes,
selected options and text areas (enough for the linen web app's forms)."""

from __future__ import annotations

import re
from html.parser import HTMLParser


class _FormReader(HTMLParser):
    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.found = False
        self.fields: list[tuple[str, str]] = []
        self.select: str | None = None
        self.textarea: str | None = None
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {k: v or "" for k, v in attrs}
        if tag == "form" and attr.get("id") == self.form_id:
            self.inside = self.found = True
        if not self.inside:
            return
        name = attr.get("name")
        if tag == "input" and name:
            if attr.get("type") in ("checkbox", "radio") and "checked" not in attr:
                return
            self.fields.append((name, attr.get("value", "")))
        elif tag == "select":
            self.select = name
        elif tag == "option" and self.select and "selected" in attr:
            self.fields.append((self.select, attr.get("value", "")))
        elif tag == "textarea" and name:
            self.textarea, self.text = name, ""

    def handle_data(self, data: str) -> None:
        if self.textarea is not None:
            self.text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "select":
            self.select = None
        elif tag == "textarea" and self.textarea is not None:
            self.fields.append((self.textarea, self.text))
            self.textarea = None


def form_fields(html: str, form_id: str) -> dict[str, list[str]]:
    """The values per name the form ``#form_id`` of ``html`` posts as it stands (httpx's
    ``data``)."""
    reader = _FormReader(form_id)
    reader.feed(html)
    assert reader.found, f"no form #{form_id}"
    out: dict[str, list[str]] = {}
    for name, value in reader.fields:
        out.setdefault(name, []).append(value)
    return out


def offered(html: str, prefix: str) -> set[int]:
    """The item types a page's forms offer as ``<prefix><id>`` quantity fields."""
    return {int(i) for i in re.findall(rf'name="{re.escape(prefix)}(\d+)"', html)}
