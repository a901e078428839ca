"""Small static charts as inline SVG: stacked bars and a line, one category per batch or run.

Every bar is a ``<rect class="bar">`` with ``data-series``, ``data-category``
and ``data-value``; every line point a ``<circle class="point">`` with the same
attributes, so a page can be checked against the numbers it was drawn from.
"""
from __future__ import annotations

from dataclasses import dataclass

from pipelines.visual.svg import element, svg, text

PALETTE = ("#2ca02c", "#ff7f0e", "#9467bd", "#7f7f7f", "#d62728", "#1f77b4", "#8c564b", "#e377c2", "#bcbd22",
           "#17becf")
LEFT_PX, TOP_PX, BOTTOM_PX, LEGEND_W_PX = 70, 34, 46, 230
PLOT_H_PX, MAX_PLOT_W_PX, MIN_BAR_PX = 200, 900, 4


@dataclass(frozen=True)
class Series:
    """One named series of values, one per category (None: no value)."""

    name: str
    values: tuple[float | None, ...]
    colour: str

    def __post_init__(self):
        if not self.name:
            raise ValueError("a chart series needs a name")


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** (len(str(int(value))) - 1) if value >= 1 else 1
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return step * magnitude
    return 10 * magnitude


def _frame(title: str, categories: list[str], y_max: float, y_unit: str) -> tuple[list[str], float, float]:
    width = min(MAX_PLOT_W_PX, max(200, 14 * len(categories)))
    body = [element("text", text(title), x=LEFT_PX, y=18, font_size=13, font_weight="bold")]
    for i in range(5):
        value = y_max * i / 4
        y = TOP_PX + PLOT_H_PX - PLOT_H_PX * i / 4
        body.append(element("line", x1=LEFT_PX, y1=y, x2=LEFT_PX + width, y2=y, stroke="#e5e5e5"))
        label = f"{value:g}" if value < 1e6 else f"{value:.3g}"
        body.append(element("text", text(label), x=LEFT_PX - 5, y=y + 4, font_size=10, text_anchor="end"))
    body.append(element("text", text(y_unit), x=8, y=TOP_PX - 6, font_size=10, fill="#555"))
    every = max(1, len(categories) // 20)
    slot = width / max(1, len(categories))
    for i, c in enumerate(categories):
        if i % every == 0:
            x = LEFT_PX + slot * (i + 0.5)
            y = TOP_PX + PLOT_H_PX + 14
            body.append(element("text", text(c), x=x, y=y, font_size=10, text_anchor="end",
                                transform=f"rotate(-35 {x:.1f} {y:.1f})"))
    return body, width, slot


def _legend(series: list[Series], x: float) -> list[str]:
    out = []
    for i, s in enumerate(series):
        y = TOP_PX + 14 * i
        out.append(element("rect", x=x, y=y, width=10, height=10, fill=s.colour))
        out.append(element("text", text(s.name), x=x + 14, y=y + 9, font_size=11))
    return out


def stacked_bars(title: str, categories: list[str], series: list[Series], y_unit: str = "rows") -> str:
    """Stacked bars, one stack per category; an SVG string."""
    totals = [sum(s.values[i] or 0 for s in series) for i in range(len(categories))]
    y_max = _nice_max(max(totals, default=0))
    body, width, slot = _frame(title, categories, y_max, y_unit)
    bar = max(MIN_BAR_PX, slot * 0.7)
    for i, category in enumerate(categories):
        base = TOP_PX + PLOT_H_PX
        for s in series:
            value = s.values[i] or 0
            if value <= 0:
                continue
            h = PLOT_H_PX * value / y_max
            base -= h
            body.append(element("rect", element("title", text(f"{category}: {s.name} {value:g}")),
                                x=LEFT_PX + slot * (i + 0.5) - bar / 2, y=base, width=bar, height=h, fill=s.colour,
                                class_="bar", data_series=s.name, data_category=category, data_value=value))
    body += _legend(series, LEFT_PX + width + 20)
    return svg(LEFT_PX + width + LEGEND_W_PX, TOP_PX + PLOT_H_PX + BOTTOM_PX + 14, body, title)


def line(title: str, categories: list[str], series: list[Series], y_unit: str) -> str:
    """Lines with a point per category (None values break the line); an SVG string."""
    values = [v for s in series for v in s.values if v is not None]
    lo = min(0.0, min(values, default=0.0))
    y_max = _nice_max(max(values, default=0.0) - lo)
    body, width, slot = _frame(title, categories, y_max, y_unit)

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
            points.append(element("circle", element("title", text(f"{categories[i]}: {s.name} {v:g}")),
                                  cx=x, cy=y_of(v), r=3, fill=s.colour, class_="point", data_series=s.name,
                                  data_category=categories[i], data_value=v))
        if path:
            body.append(element("path", d=" ".join(path), fill="none", stroke=s.colour, stroke_width=1.5))
        body += points
    body += _legend(series, LEFT_PX + width + 20)
    return svg(LEFT_PX + width + LEGEND_W_PX, TOP_PX + PLOT_H_PX + BOTTOM_PX + 14, body, title)
