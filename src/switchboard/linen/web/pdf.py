"""Printable PDFs of the web app: a sheet's control sheet and a day's packing list (fpdf2)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from fpdf import FPDF


@dataclass(frozen=True, slots=True)
class Row:
    """One printed line: an item and its counts (blank counts print as empty cells)."""

    label: str
    counts: Sequence[int | str]


def _latin(text: str) -> str:
    """The core PDF fonts cover Latin-1; anything else prints as ``?`` rather than failing."""
    return text.encode("latin-1", "replace").decode("latin-1")


def _document(title: str, facts: Sequence[tuple[str, str]]) -> FPDF:
    pdf = FPDF(format="A4")
    pdf.set_creator("switchboard linen portal")
    pdf.set_title(_latin(title))
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.cell(0, 10, _latin(title), new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=10)
    for name, value in facts:
        pdf.cell(40, 6, _latin(name))
        pdf.multi_cell(0, 6, _latin(value), new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    return pdf


def _table(pdf: FPDF, heading: Sequence[str], rows: Sequence[Row]) -> None:
    widths = [80] + [(pdf.epw - 80) / max(len(heading) - 1, 1)] * (len(heading) - 1)
    pdf.set_font("Helvetica", "B", 10)
    for width, text in zip(widths, heading, strict=True):
        pdf.cell(width, 7, _latin(text), border=1)
    pdf.ln()
    pdf.set_font("Helvetica", size=10)
    for row in rows:
        cells = [row.label, *(str(c) for c in row.counts)]
        for width, text in zip(widths, cells, strict=True):
            pdf.cell(width, 7, _latin(text), border=1)
        pdf.ln()


def control_sheet(*, number: str, facts: Sequence[tuple[str, str]], rows: Sequence[Row]) -> bytes:
    """The room linen control sheet: ordered, delivered, collected, rejected, balance."""
    pdf = _document(f"Linen sheet {number}", facts)
    _table(pdf, ["Item", "Ordered", "Delivered", "Collected", "Rejected", "Balance"], rows)
    pdf.ln(8)
    pdf.cell(0, 6, "Delivered by: ____________________   Received by: ____________________")
    return bytes(pdf.output())


def packing_list(
    *, day: dt.date, sections: Sequence[tuple[str, Sequence[tuple[str, str]], Sequence[Row]]]
) -> bytes:
    """Per property (heading, facts, items with set components expanded)."""
    pdf = _document(f"Packing list {day.isoformat()}", [("Properties", str(len(sections)))])
    for heading, facts, rows in sections:
        pdf.set_font("Helvetica", "B", 12)
        pdf.cell(0, 8, _latin(heading), new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=10)
        for name, value in facts:
            pdf.cell(40, 6, _latin(name))
            pdf.multi_cell(0, 6, _latin(value), new_x="LMARGIN", new_y="NEXT")
        _table(pdf, ["Item", "Quantity"], rows)
        pdf.ln(4)
    return bytes(pdf.output())
