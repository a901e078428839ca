"""A few SVG and HTML building blocks: escaping, elements, time labels, the page frame.

Pages made here load nothing: styles are inline and pictures are inline SVG.
"""
from __future__ import annotations

import datetime as dt
from html import escape

SVG_NS = "http://www.w3.org/2000/svg"

PAGE_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .85em; }
th, td { border: 1px solid #ccc; padding: .25em .5em; text-align: right; }
th { background: #f2f2f2; } td.text, th.text { text-align: left; }
.note { color: #555; font-size: .9em; max-width: 60em; }
h3 { font-size: 1em; margin-top: 1.2em; }
svg { display: block; margin: .5em 0; }
svg.chart { width: 100%; max-width: 1400px; height: auto; }
svg text { font-family: Helvetica, Arial, sans-serif; }
svg text[font-family="monospace"] { font-family: monospace; }
.guide { max-width: 60em; font-size: .9em; margin: .8em 0; } .guide summary { cursor: pointer; font-weight: bold; }
"""


def attrs(**values) -> str:
    """``key="value"`` pairs (``class_`` for ``class``, ``data_x`` for ``data-x``); None values are left out."""
    parts = []
    for name, value in values.items():
        if value is None:
            continue
        name = name.rstrip("_").replace("_", "-")
        if isinstance(value, float):
            value = f"{value:.2f}".rstrip("0").rstrip(".")
        parts.append(f'{name}="{escape(str(value), quote=True)}"')
    return " ".join(parts)


def element(tag: str, body: str | None = None, **values) -> str:
    """One SVG/HTML element; ``body`` is inserted as given (escape text with :func:`text`)."""
    opening = f"<{tag} {attrs(**values)}".rstrip()
    return f"{opening}/>" if body is None else f"{opening}>{body}</{tag}>"


def text(value) -> str:
    return escape(str(value), quote=False)


def svg(width: float, height: float, body: list[str], label: str) -> str:
    return (f'<svg xmlns="{SVG_NS}" {attrs(width=width, height=height, viewBox=f"0 0 {width:.0f} {height:.0f}")}'
            f' role="img" aria-label="{escape(label, quote=True)}">\n'
            + element("rect", x=0, y=0, width=width, height=height, fill="white") + "\n"
            + "\n".join(body) + "\n</svg>\n")


def time_label(ms: int | None, with_date: bool = False) -> str:
    """Epoch ms as UTC ``HH:MM:SS`` (with the date when asked); the engine's infinities as -inf/+inf."""
    if ms is None:
        return "none"
    if ms <= -(2**63) + 1:
        return "-inf"
    if ms >= 2**63 - 1:
        return "+inf"
    at = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
    label = at.strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")
    return label + (f".{ms % 1000:03d}" if ms % 1000 else "")


def nice_step_ms(span_ms: int, ticks: int = 8) -> int:
    """A round tick step (1 s, 5 s, 10 s, 30 s, 1 min, ... 1 day) giving about ``ticks`` ticks over ``span_ms``."""
    for step in (1, 10, 100, 1000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000,
                 1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000):
        if span_ms / step <= ticks:
            return step
    return 86_400_000 * max(1, span_ms // (86_400_000 * ticks))


def page(title: str, sections: list[str]) -> str:
    """A complete HTML page: inline CSS, no script, no remote URL."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{text(title)}</title><style>{PAGE_CSS}</style></head>\n<body>\n"
            f"<h1>{text(title)}</h1>\n" + "\n".join(sections) + "\n</body></html>\n")


def html_table(header: list[str], rows: list[list], text_columns: int = 1) -> str:
    """A plain HTML table; the first ``text_columns`` columns are left-aligned."""
    def cell(tag, i, value):
        css = ' class="text"' if i < text_columns else ""
        return f"<{tag}{css}>{text('' if value is None else value)}</{tag}>"
    head = "<tr>" + "".join(cell("th", i, h) for i, h in enumerate(header)) + "</tr>"
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table>{head}{body}</table>"
