"""Small static charts as inline SVG: stacked bars and a line, one category per batch or run.

Every bar is a ``<rect class="bar">`` with ``data-series``, ``data-category``
and ``data-value``; every line point a ``<circle class="point">`` with the same
attributes, so a page can be checked against the numbers it was drawn from.

A chart is drawn at one width whatever its number of categories (the page scales it to its
own width). Category labels are horizontal and monospace, and only every n-th is written when
they would not fit side by side; each bar and point names its category on hover. Axis values are
written out in full (``1,500,000``), never in exponent form: a chart of durations chooses its
unit for the range first (:func:`duration_unit`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pipelines.visual.svg import element, svg, text

LEFT_PX, TOP_PX, PLOT_W_PX, PLOT_H_PX, LEGEND_W_PX = 80, 40, 800, 200, 240
BOTTOM_PX = 34
MAX_BAR_PX, MIN_BAR_PX = 48, 2
CATEGORY_FONT_PX, MONO_ADVANCE_EM = 10, 0.62
DURATION_UNITS = (("ms", 0.001), ("seconds", 1), ("minutes", 60), ("hours", 3600), ("days", 86_400))


@dataclass(frozen=True)
class Series:
    """One named series of values, one per category (None: no value)."""

    name: str
    values: tuple[float | None, ...]
    colour: str

    def __post_init__(self):
        if not self.name:
            raise ValueError("a chart series needs a name")


def duration_unit(largest_s: float) -> tuple[str, float]:
    """``(unit, seconds per unit)`` to write durations up to ``largest_s`` seconds with short numbers."""
    largest_s = abs(largest_s)
    for (name, size), (_, bigger) in zip(DURATION_UNITS, DURATION_UNITS[1:]):
        if largest_s < 2 * bigger:
            return name, size
    return DURATION_UNITS[-1]


def number_text(value: float) -> str:
    """An axis value written out: thousands separated, at most three decimals, no exponent."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude * (1 + 1e-9):
            return step * magnitude
    return 10 * magnitude


def _category_every(categories: list[str], slot: float) -> int:
    """Write every n-th category label, n the smallest that keeps the labels apart."""
    widest = max((len(c) for c in categories), default=0) * MONO_ADVANCE_EM * CATEGORY_FONT_PX
    return max(1, math.ceil((widest + 8) / slot))


def _frame(title: str, categories: list[str], y_max: float, y_unit: str, lo: float = 0.0) -> tuple[list[str], float]:
    body = [element("text", text(title), x=LEFT_PX, y=16, font_size=13, font_weight="bold", class_="chart-title"),
            element("text", text(y_unit), x=8, y=TOP_PX - 8, font_size=10, fill="#555", class_="axis-title")]
    for i in range(5):
        value = lo + y_max * i / 4
        y = TOP_PX + PLOT_H_PX - PLOT_H_PX * i / 4
        body.append(element("line", x1=LEFT_PX, y1=y, x2=LEFT_PX + PLOT_W_PX, y2=y, stroke="#e5e5e5"))
        body.append(element("text", text(number_text(round(value, 6))), x=LEFT_PX - 5, y=y + 4, font_size=10,
                            text_anchor="end", class_="tick-label"))
    slot = PLOT_W_PX / max(1, len(categories))
    every = _category_every(categories, slot)
    for i, c in enumerate(categories):
        if i % every == 0:
            body.append(element("text", text(c), x=LEFT_PX + slot * (i + 0.5), y=TOP_PX + PLOT_H_PX + 16,
                                font_size=CATEGORY_FONT_PX, font_family="monospace", text_anchor="middle",
                                class_="category-label"))
    return body, slot


def _legend(series: list[Series]) -> list[str]:
    out, x = [], LEFT_PX + PLOT_W_PX + 20
    for i, s in enumerate(series):
        y = TOP_PX + 16 * i
        out.append(element("rect", x=x, y=y, width=10, height=10, fill=s.colour))
        out.append(element("text", text(s.name), x=x + 14, y=y + 9, font_size=11, class_="legend-label"))
    return out


def _chart(body: list[str], series: list[Series], title: str) -> str:
    body += _legend(series)
    height = max(TOP_PX + PLOT_H_PX + BOTTOM_PX, TOP_PX + 16 * len(series) + 10)
    return svg(LEFT_PX + PLOT_W_PX + LEGEND_W_PX, height, body, title).replace("<svg ", '<svg class="chart" ', 1)


def stacked_bars(title: str, categories: list[str], series: list[Series], y_unit: str = "rows") -> str:
    """Stacked bars, one stack per category; an SVG string."""
    totals = [sum(s.values[i] or 0 for s in series) for i in range(len(categories))]
    y_max = _nice_max(max(totals, default=0))
    body, slot = _frame(title, categories, y_max, y_unit)
    bar = min(MAX_BAR_PX, max(MIN_BAR_PX, slot * 0.7))
    for i, category in enumerate(categories):
        base = TOP_PX + PLOT_H_PX
        for s in series:
            value = s.values[i] or 0
            if value <= 0:
                continue
            h = PLOT_H_PX * value / y_max
            base -= h
            body.append(element("rect", element("title", text(f"{category}: {s.name} {number_text(value)}")),
                                x=LEFT_PX + slot * (i + 0.5) - bar / 2, y=base, width=bar, height=h, fill=s.colour,
                                class_="bar", data_series=s.name, data_category=category, data_value=value))
    return _chart(body, series, title)


def line(title: str, categories: list[str], series: list[Series], y_unit: str) -> str:
    """Lines with a point per category (None values break the line); an SVG string."""
    values = [v for s in series for v in s.values if v is not None]
    lo = min(0.0, min(values, default=0.0))
    y_max = _nice_max(max(values, default=0.0) - lo)
    body, slot = _frame(title, categories, y_max, y_unit, lo)

    def y_of(v: float) -> float:
        return TOP_PX + PLOT_H_PX - PLOT_H_PX * (v - lo) / y_max

    for s in series:
        path, points, pen = [], [], "M"
        for i, v in enumerate(s.values):
            if v is None:
                pen = "M"
                continue
            x = LEFT_PX + slot * (i + 0.5)
            path.append(f"{pen}{x:.1f},{y_of(v):.1f}")
            pen = "L"
            points.append(element("circle", element("title", text(f"{categories[i]}: {s.name} {number_text(v)}")),
                                  cx=x, cy=y_of(v), r=3, fill=s.colour, class_="point", data_series=s.name,
                                  data_category=categories[i], data_value=v))
        if path:
            body.append(element("path", d=" ".join(path), fill="none", stroke=s.colour, stroke_width=1.5))
        body += points
    return _chart(body, series, title)
