"""A picture of a job's windows over time: the SVG and its HTML page, drawn from a :class:`Timeline`.

One panel per key. The horizontal axis is event time; each row of a panel is
one batch of the operator (a stream's micro-batch, a backfill's chunk), top to bottom in commit order. In a row:

* every input row of the key that arrived in that batch is a dot at its event
  time (grey); a row of the late table is a red cross, a row of the
  quarantine table a purple triangle (at the left edge when it has no usable
  event time);
* every pane emitted in that batch is a bar spanning its window
  ``[window_start_ms, window_end_ms)`` with a mark at the window's end coloured
  by timing (EARLY blue, ON_TIME green, LATE orange) and labelled with its
  aggregate values; a merged session's pane also outlines, dashed, the
  sessions it supersedes;
* the watermark is the black step line: the upper half of a row is at the
  watermark the batch started with (which decides lateness), the lower half
  at the watermark after it (which fired the panes of the row).

The marks are :mod:`pipelines.visual.timeline_marks`'; a single-input job's
tables are read into them by :mod:`pipelines.visual.job_timeline`, a join's by
:mod:`pipelines.visual.join_timeline`.

A join job's timeline draws the rows of both inputs, told apart by side (``data-side``: a left row is a
circle, a right row a square; a late row's cross is boxed on the right side), and
an interval join's pairs as an arc between the pair's two event times in the
row of the batch that emitted it (``pair``).

The SVG's elements carry classes and ``data-*`` attributes (``pane EARLY``,
``event``, ``late-row``, ``quarantined-row``, ``superseded``, ``watermark``,
``pair``) so that tests and tools can read the picture back.
"""
from __future__ import annotations

from pathlib import Path

from pipelines.visual import colours
from pipelines.visual.svg import element, nice_step_ms, page, svg, text, time_label
from pipelines.visual.timeline_marks import (EVENT, LATE_ROW, MAX_MS, MIN_MS, NULL_KEY, QUARANTINED_ROW, BatchRow,
                                             PaneMark, Timeline)

EARLY_COLOUR, ON_TIME_COLOUR, LATE_COLOUR = colours.EARLY, colours.ON_TIME, colours.LATE_PANE
TIMING_COLOURS = colours.TIMING
EVENT_COLOUR, LATE_ROW_COLOUR, QUARANTINE_COLOUR = colours.INPUT_ROW, colours.LATE_ROW, colours.QUARANTINED
SIDE_COLOURS = {"left": colours.LEFT_INPUT, "right": colours.RIGHT_INPUT}
"""A join's input rows by side."""
PAIR_COLOUR = colours.PAIR

DEFAULT_MAX_KEYS = 12
"""Panels drawn by default: the keys with the most rows and panes (``max_keys`` changes it, 0 draws all)."""

PLOT_LEFT_PX, PLOT_WIDTH_PX, RIGHT_PX = 200, 900, 130
PLOT_RIGHT_PX = PLOT_LEFT_PX + PLOT_WIDTH_PX
ROW_HEIGHT_PX, PANEL_HEAD_PX, PANEL_GAP_PX, LEGEND_PX = 42, 40, 20, 48
ROW_MARK_DY, PANE_DY, LABEL_DY = 10, 21, 37
"""Inside a row: the input rows' marks, the panes' bars and circles, the pane labels' baseline (px below its top)."""
LABEL_FONT_PX, LABEL_GAP_PX = 9, 4
MONO_ADVANCE_EM = 0.62
"""The advance of a monospace character, in em, rounded up: pane labels are monospace, so their width is known."""


def label_width_px(label: str, font_px: float = LABEL_FONT_PX) -> float:
    """The width of ``label`` in the monospace font of the pane labels (an upper bound)."""
    return len(label) * MONO_ADVANCE_EM * font_px


class _Scale:
    def __init__(self, lo_ms: int, hi_ms: int):
        pad = max(1, (hi_ms - lo_ms) // 28)   # room for a tick label centred on the first and last round time
        self.lo, self.hi = lo_ms - pad, hi_ms + pad

    def x(self, ms: int | None) -> float:
        if ms is None or ms <= self.lo:
            return PLOT_LEFT_PX
        if ms >= self.hi:
            return PLOT_RIGHT_PX
        return PLOT_LEFT_PX + (ms - self.lo) / (self.hi - self.lo) * PLOT_WIDTH_PX


def _finite(ms: int | None) -> bool:
    return ms is not None and MIN_MS + 1 < ms < MAX_MS


def _range(timeline: Timeline) -> tuple[int, int]:
    times = [r.event_time_ms for r in timeline.rows if _finite(r.event_time_ms)]
    for p in timeline.panes:
        times += [t for t in (p.window_start_ms, p.window_end_ms) if _finite(t)]
    times += [t for p in timeline.pairs for t in (p.left_time_ms, p.right_time_ms) if _finite(t)]
    times += [b.watermark_after_ms for b in timeline.batches if _finite(b.watermark_after_ms)]
    lo = timeline.from_ms if timeline.from_ms is not None else (min(times) if times else 0)
    hi = timeline.to_ms if timeline.to_ms is not None else (max(times) if times else lo + 60_000)
    return lo, max(hi, lo + 1000)


def shown_keys(timeline: Timeline, max_keys: int = DEFAULT_MAX_KEYS) -> tuple[list[str], list[str]]:
    """``(drawn, not drawn)`` keys: the null key (quarantined rows) first, then the ``max_keys`` keys with
    the most input rows and panes, in key order (``max_keys`` 0: every key)."""
    if max_keys < 0:
        raise ValueError(f"max_keys must be 0 (every key) or more, got {max_keys}")
    activity: dict[str, int] = {}
    for mark in (*timeline.rows, *timeline.panes, *timeline.pairs):
        activity[mark.key] = activity.get(mark.key, 0) + 1
    keyed = [k for k in activity if k != NULL_KEY]
    ranked = sorted(keyed, key=lambda k: (-activity[k], k))
    drawn = ranked if max_keys == 0 else ranked[:max_keys]
    return ([NULL_KEY] if NULL_KEY in activity else []) + sorted(drawn), sorted(set(keyed) - set(drawn))


def _legend(y: float, timeline: Timeline) -> list[str]:
    out, x = [], 8.0
    rows = ([("dot", SIDE_COLOURS["left"], "left input row"), ("square", SIDE_COLOURS["right"], "right input row")]
            if timeline.two_inputs else [("dot", EVENT_COLOUR, "input row")])
    items = [("circle", EARLY_COLOUR, "EARLY pane"), ("circle", ON_TIME_COLOUR, "ON_TIME pane"),
             ("circle", LATE_COLOUR, "LATE pane"), *rows,
             ("cross", LATE_ROW_COLOUR, "late row (boxed: right)" if timeline.two_inputs else "late row"),
             ("tri", QUARANTINE_COLOUR, "quarantined row"),
             *([("pair", PAIR_COLOUR, "pair")] if timeline.pairs else []),
             *([] if timeline.two_inputs else [("dash", "#555", "superseded session")]),
             ("wm", "black", "watermark (start / end of batch)")]
    for shape, colour, label in items:
        if shape == "circle":
            out.append(element("circle", cx=x + 5, cy=y, r=5, fill=colour))
        elif shape == "dot":
            out.append(element("circle", cx=x + 5, cy=y, r=3, fill=colour))
        elif shape == "square":
            out.append(_square(x + 5, y, colour))
        elif shape == "pair":
            out.append(_arc(x - 3, x + 13, y - 3, colour))
        elif shape == "cross":
            out.append(_cross(x + 5, y, colour))
        elif shape == "tri":
            out.append(_triangle(x + 5, y, colour))
        elif shape == "dash":
            out.append(element("rect", x=x - 3, y=y - 4, width=16, height=8, fill="none", stroke=colour,
                               stroke_dasharray="3,2"))
        else:
            out.append(element("path", d=f"M{x - 3},{y - 6} L{x + 3},{y - 6} L{x + 3},{y + 6} L{x + 13},{y + 6}",
                               fill="none", stroke=colour, stroke_width=2))
        out.append(element("text", text(label), x=x + 17, y=y + 4, font_size=11, class_="legend-label"))
        x += 34 + 6.6 * len(label)
    return out


def _cross(x: float, y: float, colour: str, **data) -> str:
    d = f"M{x - 4:.1f},{y - 4:.1f} L{x + 4:.1f},{y + 4:.1f} M{x - 4:.1f},{y + 4:.1f} L{x + 4:.1f},{y - 4:.1f}"
    return element("path", d=d, stroke=colour, stroke_width=2, fill="none", **data)


def _square(x: float, y: float, colour: str, body: str | None = None, **data) -> str:
    return element("rect", body, x=round(x - 3, 1), y=round(y - 3, 1), width=6, height=6, fill=colour, **data)


def _arc(x0: float, x1: float, y: float, colour: str, body: str | None = None, **data) -> str:
    """A pair: an arc below ``y`` from one row's event time to the other's."""
    d = f"M{x0:.1f},{y:.1f} Q{(x0 + x1) / 2:.1f},{y + 14:.1f} {x1:.1f},{y:.1f}"
    return element("path", body, d=d, fill="none", stroke=colour, stroke_width=1.5, **data)


def _triangle(x: float, y: float, colour: str, body: str | None = None, **data) -> str:
    d = f"M{x:.1f},{y - 5:.1f} L{x + 5:.1f},{y + 4:.1f} L{x - 5:.1f},{y + 4:.1f} Z"
    return element("path", body, d=d, fill=colour, **data)


def _axis(scale: _Scale, top: float, bottom: float) -> list[str]:
    """Grid lines and event-time tick labels; a label that would stick out of the plot is left out."""
    out = []
    step = nice_step_ms(scale.hi - scale.lo)
    tick = -(-scale.lo // step) * step
    while tick <= scale.hi:
        x = scale.x(tick)
        out.append(element("line", x1=x, y1=top, x2=x, y2=bottom, stroke="#e5e5e5"))
        label = time_label(tick)
        half = 3.2 * len(label)
        if PLOT_LEFT_PX <= x - half and x + half <= PLOT_RIGHT_PX:
            out.append(element("text", text(label), x=x, y=top - 4, font_size=10, text_anchor="middle",
                               fill="#555", class_="tick-label"))
        tick += step
    return out


def _watermark_path(batches: tuple[BatchRow, ...], scale: _Scale, plot_top: float) -> str | None:
    """The step line's path: only finite watermarks are drawn (before the first row there is none)."""
    parts, pen = [], "M"
    for i, b in enumerate(batches):
        y = plot_top + i * ROW_HEIGHT_PX
        for ms, y0, y1 in ((b.watermark_before_ms, y, y + ROW_HEIGHT_PX / 2),
                           (b.watermark_after_ms, y + ROW_HEIGHT_PX / 2, y + ROW_HEIGHT_PX)):
            if not _finite(ms):
                pen = "M"
                continue
            x = scale.x(ms)
            parts.append(f"{pen}{x:.1f},{y0:.1f} L{x:.1f},{y1:.1f}")
            pen = "L"
    return " ".join(parts) or None


def _watermark_text(ms: int) -> str:
    if ms <= MIN_MS + 1:
        return "wm: none yet"
    if ms >= MAX_MS:
        return "wm: end of input"
    return f"wm {time_label(ms)}"


def pane_labels(panes: list[PaneMark], scale: _Scale) -> list[tuple[PaneMark, str, float]]:
    """The labels drawn under the panes of one row: ``(pane, text, left x)``.

    A label is centred under its pane's circle (the window's end) and drawn only where it fits: inside
    the plot and clear of the labels already placed, left to right. The row takes the longest form
    (every aggregate, the first aggregate, its value alone) that labels the most panes; every pane
    keeps all its values on hover.
    """
    def forms(p: PaneMark) -> tuple[str, str, str]:
        first = p.values.split(", ")[0]
        return p.values, first, first.split("=", 1)[-1]

    ordered = sorted(panes, key=lambda p: scale.x(p.window_end_ms) if p.window_end_ms is not None else PLOT_RIGHT_PX)
    best: list[tuple[PaneMark, str, float]] = []
    for form in range(3):
        placed, right = [], -1.0
        for p in ordered:
            label = forms(p)[form]
            if not label:
                continue
            width = label_width_px(label)
            centre = scale.x(p.window_end_ms) if p.window_end_ms is not None else PLOT_RIGHT_PX - width / 2
            left = min(max(centre - width / 2, PLOT_LEFT_PX + 1), PLOT_RIGHT_PX - 1 - width)
            if left < PLOT_LEFT_PX + 1 or left < right + LABEL_GAP_PX:
                continue
            placed.append((p, label, left))
            right = left + width
        if len(placed) > len(best):
            best = placed
        if len(best) == len(ordered):
            break
    return best


def _panel(timeline: Timeline, key: str, scale: _Scale, top: float) -> tuple[list[str], float]:
    batches = timeline.batches
    row_of = {b.batch_id: i for i, b in enumerate(batches)}
    plot_top = top + PANEL_HEAD_PX
    bottom = plot_top + ROW_HEIGHT_PX * len(batches)
    title = ("quarantined rows without a key" if key == NULL_KEY else f"key {key}")
    out = [element("text", text(title), x=8, y=top + 16, font_size=14, font_weight="bold", class_="panel-title"),
           element("text", text("event time (UTC) \u2192"), x=PLOT_RIGHT_PX - 4, y=top + 16, font_size=10,
                   text_anchor="end", fill="#555", class_="axis-title"),
           element("text", text("watermark after"), x=PLOT_RIGHT_PX + 6, y=top + 16, font_size=10, fill="#555",
                   class_="axis-title"),
           element("text", text("batch, processed at"), x=8, y=plot_top - 4, font_size=10, fill="#555",
                   class_="axis-title"),
           element("rect", x=PLOT_LEFT_PX, y=plot_top, width=PLOT_WIDTH_PX, height=bottom - plot_top,
                   fill="none", stroke="#bbb", class_="plot")]
    out += _axis(scale, plot_top, bottom)
    for i, b in enumerate(batches):
        y = plot_top + i * ROW_HEIGHT_PX
        out.append(element("line", x1=8, y1=y, x2=PLOT_RIGHT_PX, y2=y, stroke="#eee"))
        detail = element("title", text(f"batch {b.batch_id}: processed at {time_label(b.processing_time_ms, True)} "
                                       f"UTC; watermark {time_label(b.watermark_before_ms, True)} before, "
                                       f"{time_label(b.watermark_after_ms, True)} after"))
        out.append(element("text", detail + text(f"batch {b.batch_id}"), x=8, y=y + 16, font_size=11,
                           class_="batch-label"))
        if _finite(b.processing_time_ms):
            out.append(element("text", text(f"processed {processing_label(b.processing_time_ms)}"), x=8, y=y + 31,
                               font_size=10, font_style="italic", fill="#777", class_="batch-label"))
        out.append(element("text", text(_watermark_text(b.watermark_after_ms)), x=PLOT_RIGHT_PX + 6,
                           y=y + ROW_HEIGHT_PX / 2 + 4, font_size=10, class_="watermark-label"))
    path = _watermark_path(batches, scale, plot_top)
    if path:
        out.append(element("path", "<title>watermark</title>", d=path, fill="none", stroke="black",
                           stroke_width=1.5, class_="watermark"))
    for r in (r for r in timeline.rows if r.key == key and r.batch_id in row_of):
        y = plot_top + row_of[r.batch_id] * ROW_HEIGHT_PX + ROW_MARK_DY
        x = scale.x(r.event_time_ms)
        side = f"{r.side} " if r.side else ""
        title = element("title", text(f"{side}{r.kind} at {time_label(r.event_time_ms, True)}, batch {r.batch_id}"
                                      + (f": {r.reason}" if r.reason else "")))
        data = dict(class_=r.kind, data_batch=r.batch_id, data_event_time_ms=r.event_time_ms,
                    **({"data_side": r.side} if r.side else {}))
        if r.kind == EVENT and r.side == "right":
            out.append(_square(x, y, SIDE_COLOURS[r.side], title, fill_opacity=0.8, **data))
        elif r.kind == EVENT:
            colour = SIDE_COLOURS[r.side] if r.side else EVENT_COLOUR
            out.append(element("circle", title, cx=x, cy=y, r=3, fill=colour, fill_opacity=0.8, **data))
        elif r.kind == LATE_ROW:
            box = (element("rect", x=round(x - 6, 1), y=round(y - 6, 1), width=12, height=12, fill="none",
                           stroke=LATE_ROW_COLOUR) if r.side == "right" else "")
            out.append(element("g", title + _cross(x, y, LATE_ROW_COLOUR) + box, **data))
        else:
            out.append(_triangle(x, y, QUARANTINE_COLOUR, title, **data))
    for p in (p for p in timeline.pairs if p.key == key and p.batch_id in row_of):
        y = plot_top + row_of[p.batch_id] * ROW_HEIGHT_PX + ROW_MARK_DY
        title = element("title", text(f"pair: left row at {time_label(p.left_time_ms, True)}, right row at "
                                      f"{time_label(p.right_time_ms, True)}, batch {p.batch_id}: {p.values}"))
        out.append(_arc(scale.x(p.left_time_ms), scale.x(p.right_time_ms), y, PAIR_COLOUR, title, class_="pair",
                        data_key=p.key, data_batch=p.batch_id, data_left_time_ms=p.left_time_ms,
                        data_right_time_ms=p.right_time_ms))
    by_row: dict[int, list[PaneMark]] = {}
    for n, p in enumerate(p for p in timeline.panes if p.key == key and p.batch_id in row_of):
        by_row.setdefault(p.batch_id, []).append(p)
        y = plot_top + row_of[p.batch_id] * ROW_HEIGHT_PX + PANE_DY + (n % 2) * 3
        x0 = scale.x(p.window_start_ms) if p.window_start_ms is not None else PLOT_LEFT_PX
        x1 = scale.x(p.window_end_ms) if p.window_end_ms is not None else PLOT_RIGHT_PX
        colour = TIMING_COLOURS[p.timing]
        for s, e in p.supersedes:
            out.append(element("rect", element("title", text(f"superseded session [{time_label(s)}, "
                                                              f"{time_label(e)})")),
                               x=scale.x(s), y=y - 5, width=max(1.0, scale.x(e) - scale.x(s)), height=10,
                               fill="none", stroke="#555", stroke_dasharray="3,2", class_="superseded",
                               data_window_start_ms=s, data_window_end_ms=e, data_batch=p.batch_id))
        out.append(element("rect", x=x0, y=y - 2, width=max(1.0, x1 - x0), height=4, fill=colour, fill_opacity=0.45,
                           class_="window"))
        out.append(element("circle", element("title", text(_pane_title(p))), cx=x1, cy=y, r=5, fill=colour,
                           stroke="black" if p.is_final else "none", class_=f"pane {p.timing}",
                           data_key=p.key, data_batch=p.batch_id, data_pane_index=p.pane_index,
                           data_window_start_ms=p.window_start_ms, data_window_end_ms=p.window_end_ms))
    for batch_id, panes in by_row.items():
        y = plot_top + row_of[batch_id] * ROW_HEIGHT_PX + LABEL_DY
        for p, label, left in pane_labels(panes, scale):
            out.append(element("text", element("title", text(_pane_title(p))) + text(label), x=left, y=y,
                               font_size=LABEL_FONT_PX, font_family="monospace", fill=TIMING_COLOURS[p.timing],
                               class_="pane-label"))
    return out, bottom


def _pane_title(p: PaneMark) -> str:
    window = (f"[{time_label(p.window_start_ms)}, {time_label(p.window_end_ms)})"
              if p.window_start_ms is not None else "global window")
    return (f"{p.timing} pane {p.pane_index}{' (final)' if p.is_final else ''} of {window}, "
            f"batch {p.batch_id}: {p.values}")


def processing_label(ms: int) -> str:
    """A batch's processing time as the rows show it: date and time to the second, unlike the event-time axis."""
    return time_label(ms - ms % 1000, True)


def hidden_keys_note(hidden: list[str]) -> str | None:
    if not hidden:
        return None
    return (f"{len(hidden)} more key(s) are not drawn (the picture shows the keys with the most rows and panes): "
            "draw one with --key K, or every key with --max-keys 0.")


def render_svg(timeline: Timeline, max_keys: int = DEFAULT_MAX_KEYS) -> str:
    """The timeline as a standalone SVG document (see the module docstring for what it shows)."""
    lo, hi = _range(timeline)
    scale = _Scale(lo, hi)
    body = _legend(22, timeline)
    top = LEGEND_PX
    keys, hidden = shown_keys(timeline, max_keys)
    if not keys or not timeline.batches:
        body.append(element("text", text("no committed batch or no row in range"), x=PLOT_LEFT_PX, y=top + 20))
        top += 40
    for key in keys:
        drawn, top = _panel(timeline, key, scale, top)
        body += drawn
        top += PANEL_GAP_PX
    note = hidden_keys_note(hidden)
    if note:
        body.append(element("text", text(note), x=8, y=top + 4, font_size=11, fill="#555", class_="note"))
        top += 20
    return svg(PLOT_RIGHT_PX + RIGHT_PX, top, body, f"window timeline of job {timeline.job}")


READING_GUIDE = """
<details open class="guide"><summary>How to read the picture</summary><ul>
<li>One panel per key. Left to right is <b>event time</b> (UTC), the time the rows carry.</li>
<li>Each row of a panel is one <b>batch</b> of the job, top to bottom in the order they ran; its label on the
left gives when the batch was <i>processed</i> (processing time, with the date).</li>
<li>Grey dots are the input rows that arrived in that batch, at their event time; a red cross is a row sent to
the late table, a purple triangle a quarantined row.</li>
<li>A coloured bar is a window, from its start to its end, fired in that batch; the circle at its end is the pane
(blue EARLY, green ON_TIME, orange LATE; a black ring marks the final pane). The small text under it gives the
aggregate values where there is room: hover over a circle, a label or a mark for everything.</li>
<li>The black step line is the watermark: in each row, the upper half is at the watermark the batch started with
(it decides which rows are late), the lower half at the watermark after it (it fired the row's panes). The
right margin repeats the watermark after each batch.</li>
</ul></details>
"""


def render_page(timeline: Timeline, picture: str, max_keys: int = DEFAULT_MAX_KEYS) -> str:
    """An HTML page with a reading guide, the SVG inline, the notes and a table of the batches."""
    from pipelines.visual.svg import html_table
    counts = {t: sum(1 for p in timeline.panes if p.timing == t) for t in TIMING_COLOURS}
    rows = [[b.batch_id, time_label(b.processing_time_ms, True), time_label(b.watermark_before_ms, True),
             time_label(b.watermark_after_ms, True)] for b in timeline.batches]
    keys, hidden = shown_keys(timeline, max_keys)
    notes = list(timeline.notes)
    if hidden:
        notes.append(hidden_keys_note(hidden) + " Not drawn: " + ", ".join(hidden[:60])
                     + (", ..." if len(hidden) > 60 else "") + ".")
    if NULL_KEY in keys:
        notes.append("The first panel holds the rows whose key is null: the job quarantined them (reason null_key).")
    if timeline.two_inputs:
        notes.append("A join: left input rows are grey circles, right input rows cyan squares; a right row's late "
                     "cross is boxed. A pane's label counts its output rows" + ("; an arc joins the two rows of a "
                                                                                 "pair." if timeline.pairs else "."))
    summary = (f"<p>{len(keys) + len(hidden) - (NULL_KEY in keys)} key(s), {len(timeline.batches)} batch(es); panes: "
               + ", ".join(f"{n} {t}" for t, n in counts.items())
               + (f"; {len(timeline.pairs)} pair(s)" if timeline.pairs else "")
               + f"; {sum(r.kind == LATE_ROW for r in timeline.rows)} late row(s), "
               f"{sum(r.kind == QUARANTINED_ROW for r in timeline.rows)} quarantined row(s).</p>")
    return page(f"Window timeline: {timeline.job}",
                [summary, READING_GUIDE, "".join(f"<p class=\"note\">{text(n)}</p>" for n in notes), picture,
                 "<h2>Batches</h2>",
                 html_table(["batch", "processed at (UTC)", "watermark at start (event time)",
                             "watermark after (event time)"], rows)])


def write_timeline(timeline: Timeline, out: str | Path, max_keys: int = DEFAULT_MAX_KEYS) -> tuple[Path, Path]:
    """Write ``out`` (an ``.svg``) and the HTML page beside it (same name, ``.html``); return both paths."""
    out = Path(out)
    if out.suffix.lower() != ".svg":
        raise ValueError(f"--out {str(out)!r} must name an .svg file (the HTML page is written beside it)")
    out.parent.mkdir(parents=True, exist_ok=True)
    picture = render_svg(timeline, max_keys)
    out.write_text(picture)
    html = out.with_suffix(".html")
    html.write_text(render_page(timeline, picture, max_keys))
    return out, html
