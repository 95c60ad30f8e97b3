"""Bar charts as plain SVG geometry, computed on the server (no chart library, no script)."""

from __future__ import annotations

from dataclasses import dataclass

WIDTH = 640
BAR_HEIGHT = 22
GAP = 6
LABEL_WIDTH = 230
LABEL_CHARS = 30
VALUE_WIDTH = 90


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    value: float
    text: str
    y: int
    width: float


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    bars: list[Bar]
    height: int
    label_width: int = LABEL_WIDTH
    plot_width: int = WIDTH - LABEL_WIDTH - VALUE_WIDTH
    width: int = WIDTH


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def bar_chart(title: str, points: list[tuple[str, float, str]]) -> Chart:
    """Horizontal bars, one per ``(label, value, value as text)``, scaled to the largest."""
    top = max((value for _, value, _ in points), default=0) or 1
    plot = WIDTH - LABEL_WIDTH - VALUE_WIDTH
    bars = [
        Bar(_short(label), value, text, i * (BAR_HEIGHT + GAP), plot * max(value, 0) / top)
        for i, (label, value, text) in enumerate(points)
    ]
    return Chart(title, bars, max(len(bars) * (BAR_HEIGHT + GAP), BAR_HEIGHT))
