"""A picture of a job's windows over time, drawn from its Delta tables alone.

One panel per key. The horizontal axis is event time; each row of a panel is
one batch of the operator (a stream's micro-batch, a backfill's chunk or its
final flush), top to bottom in commit order. In a row:

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

Arrival batch of a raw row: the late and quarantine tables record it. For the
rows that went into windows it is derived from the raw table's Delta log: a
row arrived in the first batch whose processing time is not before the
commit that added the row (a stream reads each commit in the next
micro-batch). When every commit precedes the first batch (a backfill over
data already landed), batches were cut by event time instead, and a row is
placed in the first batch whose largest event time seen reaches its own.

The SVG's elements carry classes and ``data-*`` attributes (``pane EARLY``,
``event``, ``late-row``, ``quarantined-row``, ``superseded``, ``watermark``)
so that tests and tools can read the picture back.
"""
from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.visual.svg import element, nice_step_ms, page, svg, text, time_label

EARLY_COLOUR, ON_TIME_COLOUR, LATE_COLOUR = "#1f77b4", "#2ca02c", "#ff7f0e"
TIMING_COLOURS = {"EARLY": EARLY_COLOUR, "ON_TIME": ON_TIME_COLOUR, "LATE": LATE_COLOUR}
EVENT_COLOUR, LATE_ROW_COLOUR, QUARANTINE_COLOUR = "#7f7f7f", "#d62728", "#9467bd"
PANE_COLUMNS = ("window_start_ms", "window_end_ms", "timing", "pane_index", "is_final", "watermark_ms", "batch_id",
                "supersedes")
MIN_MS, MAX_MS = -(2**63), 2**63 - 1

PLOT_LEFT_PX, PLOT_WIDTH_PX, RIGHT_PX = 190, 900, 170
ROW_HEIGHT_PX, PANEL_HEAD_PX, PANEL_GAP_PX, LEGEND_PX = 34, 44, 18, 56


@dataclass(frozen=True)
class BatchRow:
    """One committed batch: its watermark before and after, its processing time."""

    batch_id: int
    watermark_before_ms: int
    watermark_after_ms: int
    processing_time_ms: int | None
    max_seen_ms: int | None


@dataclass(frozen=True)
class RowMark:
    """An input row drawn at (event time, arrival batch). ``kind``: event, late-row or quarantined-row."""

    key: str
    event_time_ms: int | None
    batch_id: int
    kind: str
    reason: str | None = None

    def __post_init__(self):
        if self.kind not in ROW_KINDS:
            raise ValueError(f"row mark kind {self.kind!r} is not one of {ROW_KINDS}")


EVENT, LATE_ROW, QUARANTINED_ROW = "event", "late-row", "quarantined-row"
ROW_KINDS = (EVENT, LATE_ROW, QUARANTINED_ROW)


@dataclass(frozen=True)
class PaneMark:
    """A pane of the results table."""

    key: str
    window_start_ms: int | None
    window_end_ms: int | None
    batch_id: int
    timing: str
    pane_index: int
    is_final: bool
    values: str
    supersedes: tuple[tuple[int, int], ...] = ()

    def __post_init__(self):
        if self.timing not in TIMING_COLOURS:
            raise ValueError(f"pane timing {self.timing!r} is not one of {tuple(TIMING_COLOURS)}")


@dataclass(frozen=True)
class Timeline:
    """What the picture shows: batches, input rows and panes, for some keys and an event-time range."""

    job: str
    batches: tuple[BatchRow, ...]
    rows: tuple[RowMark, ...]
    panes: tuple[PaneMark, ...]
    from_ms: int | None = None
    to_ms: int | None = None
    notes: tuple[str, ...] = field(default=())

    def keys(self) -> list[str]:
        return sorted({r.key for r in self.rows} | {p.key for p in self.panes})


# ------------------------------------------------------------------ drawing
class _Scale:
    def __init__(self, lo_ms: int, hi_ms: int):
        pad = max(1, (hi_ms - lo_ms) // 40)
        self.lo, self.hi = lo_ms - pad, hi_ms + pad

    def x(self, ms: int | None) -> float:
        if ms is None or ms <= self.lo:
            return PLOT_LEFT_PX
        if ms >= self.hi:
            return PLOT_LEFT_PX + PLOT_WIDTH_PX
        return PLOT_LEFT_PX + (ms - self.lo) / (self.hi - self.lo) * PLOT_WIDTH_PX


def _finite(ms: int | None) -> bool:
    return ms is not None and MIN_MS + 1 < ms < MAX_MS


def _range(timeline: Timeline) -> tuple[int, int]:
    times = [r.event_time_ms for r in timeline.rows if _finite(r.event_time_ms)]
    for p in timeline.panes:
        times += [t for t in (p.window_start_ms, p.window_end_ms) if _finite(t)]
    times += [b.watermark_after_ms for b in timeline.batches if _finite(b.watermark_after_ms)]
    lo = timeline.from_ms if timeline.from_ms is not None else (min(times) if times else 0)
    hi = timeline.to_ms if timeline.to_ms is not None else (max(times) if times else lo + 60_000)
    return lo, max(hi, lo + 1000)


def _legend(y: float) -> list[str]:
    out, x = [], PLOT_LEFT_PX
    items = [("circle", EARLY_COLOUR, "EARLY pane"), ("circle", ON_TIME_COLOUR, "ON_TIME pane"),
             ("circle", LATE_COLOUR, "LATE pane"), ("dot", EVENT_COLOUR, "input row"),
             ("cross", LATE_ROW_COLOUR, "late row"), ("tri", QUARANTINE_COLOUR, "quarantined row"),
             ("dash", "#555", "superseded session"), ("wm", "black", "watermark (start / end of batch)")]
    for shape, colour, label in items:
        if shape == "circle":
            out.append(element("circle", cx=x, cy=y, r=5, fill=colour))
        elif shape == "dot":
            out.append(element("circle", cx=x, cy=y, r=3, fill=colour))
        elif shape == "cross":
            out.append(_cross(x, y, colour))
        elif shape == "tri":
            out.append(_triangle(x, y, colour))
        elif shape == "dash":
            out.append(element("rect", x=x - 8, y=y - 4, width=16, height=8, fill="none", stroke=colour,
                               stroke_dasharray="3,2"))
        else:
            out.append(element("path", d=f"M{x - 8},{y - 6} L{x - 2},{y - 6} L{x - 2},{y + 6} L{x + 8},{y + 6}",
                               fill="none", stroke=colour, stroke_width=2))
        out.append(element("text", text(label), x=x + 12, y=y + 4, font_size=11))
        x += 24 + 6.3 * len(label)
    return out


def _cross(x: float, y: float, colour: str, **data) -> str:
    d = f"M{x - 4:.1f},{y - 4:.1f} L{x + 4:.1f},{y + 4:.1f} M{x - 4:.1f},{y + 4:.1f} L{x + 4:.1f},{y - 4:.1f}"
    return element("path", d=d, stroke=colour, stroke_width=2, fill="none", **data)


def _triangle(x: float, y: float, colour: str, body: str | None = None, **data) -> str:
    d = f"M{x:.1f},{y - 5:.1f} L{x + 5:.1f},{y + 4:.1f} L{x - 5:.1f},{y + 4:.1f} Z"
    return element("path", body, d=d, fill=colour, **data)


def _axis(scale: _Scale, top: float, bottom: float) -> list[str]:
    out = []
    step = nice_step_ms(scale.hi - scale.lo)
    tick = -(-scale.lo // step) * step
    while tick <= scale.hi:
        x = scale.x(tick)
        out.append(element("line", x1=x, y1=top, x2=x, y2=bottom, stroke="#e5e5e5"))
        out.append(element("text", text(time_label(tick)), x=x, y=top - 3, font_size=10, text_anchor="middle",
                           fill="#555"))
        tick += step
    return out


def _panel(timeline: Timeline, key: str, scale: _Scale, top: float) -> tuple[list[str], float]:
    batches = timeline.batches
    row_of = {b.batch_id: i for i, b in enumerate(batches)}
    plot_top = top + PANEL_HEAD_PX
    bottom = plot_top + ROW_HEIGHT_PX * len(batches)
    out = [element("text", text(f"key {key}"), x=8, y=top + 16, font_size=14, font_weight="bold"),
           element("rect", x=PLOT_LEFT_PX, y=plot_top, width=PLOT_WIDTH_PX, height=bottom - plot_top,
                   fill="none", stroke="#bbb")]
    out += _axis(scale, plot_top, bottom)
    for i, b in enumerate(batches):
        y = plot_top + i * ROW_HEIGHT_PX
        out.append(element("line", x1=8, y1=y, x2=PLOT_LEFT_PX + PLOT_WIDTH_PX, y2=y, stroke="#eee"))
        label = f"batch {b.batch_id}" + (f" @ {time_label(b.processing_time_ms)}"
                                          if _finite(b.processing_time_ms) else "")
        out.append(element("text", text(label), x=8, y=y + ROW_HEIGHT_PX / 2 + 4, font_size=11))
    # watermark step line: upper half of a row at the watermark the batch started with, lower half after it
    points = []
    for i, b in enumerate(batches):
        y = plot_top + i * ROW_HEIGHT_PX
        points += [(scale.x(b.watermark_before_ms), y), (scale.x(b.watermark_before_ms), y + ROW_HEIGHT_PX / 2),
                   (scale.x(b.watermark_after_ms), y + ROW_HEIGHT_PX / 2),
                   (scale.x(b.watermark_after_ms), y + ROW_HEIGHT_PX)]
    if points:
        d = "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in points)
        out.append(element("path", "<title>watermark</title>", d=d, fill="none", stroke="black", stroke_width=1.5,
                           class_="watermark"))
        last = batches[-1]
        out.append(element("text", text(f"wm {time_label(last.watermark_after_ms)}"),
                           x=min(scale.x(last.watermark_after_ms) + 4, PLOT_LEFT_PX + PLOT_WIDTH_PX + 4),
                           y=bottom - 3, font_size=10))
    for r in (r for r in timeline.rows if r.key == key and r.batch_id in row_of):
        y = plot_top + row_of[r.batch_id] * ROW_HEIGHT_PX + ROW_HEIGHT_PX / 2 - 7
        x = scale.x(r.event_time_ms)
        title = element("title", text(f"{r.kind} at {time_label(r.event_time_ms, True)}, batch {r.batch_id}"
                                      + (f": {r.reason}" if r.reason else "")))
        data = dict(class_=r.kind, data_batch=r.batch_id, data_event_time_ms=r.event_time_ms)
        if r.kind == EVENT:
            out.append(element("circle", title, cx=x, cy=y, r=3, fill=EVENT_COLOUR, fill_opacity=0.8, **data))
        elif r.kind == LATE_ROW:
            out.append(element("g", title + _cross(x, y, LATE_ROW_COLOUR), **data))
        else:
            out.append(_triangle(x, y, QUARANTINE_COLOUR, title, **data))
    for n, p in enumerate(p for p in timeline.panes if p.key == key and p.batch_id in row_of):
        y = plot_top + row_of[p.batch_id] * ROW_HEIGHT_PX + ROW_HEIGHT_PX / 2 + 6 + (n % 2) * 3
        x0 = scale.x(p.window_start_ms) if p.window_start_ms is not None else PLOT_LEFT_PX
        x1 = scale.x(p.window_end_ms) if p.window_end_ms is not None else PLOT_LEFT_PX + PLOT_WIDTH_PX
        colour = TIMING_COLOURS[p.timing]
        for s, e in p.supersedes:
            out.append(element("rect", element("title", text(f"superseded session [{time_label(s)}, "
                                                              f"{time_label(e)})")),
                               x=scale.x(s), y=y - 5, width=max(1.0, scale.x(e) - scale.x(s)), height=10,
                               fill="none", stroke="#555", stroke_dasharray="3,2", class_="superseded",
                               data_window_start_ms=s, data_window_end_ms=e, data_batch=p.batch_id))
        window = (f"[{time_label(p.window_start_ms)}, {time_label(p.window_end_ms)})"
                  if p.window_start_ms is not None else "global window")
        title = element("title", text(f"{p.timing} pane {p.pane_index}{' (final)' if p.is_final else ''} of "
                                      f"{window}, batch {p.batch_id}: {p.values}"))
        out.append(element("rect", x=x0, y=y - 2, width=max(1.0, x1 - x0), height=4, fill=colour, fill_opacity=0.45,
                           class_="window"))
        out.append(element("circle", title, cx=x1, cy=y, r=5, fill=colour,
                           stroke="black" if p.is_final else "none", class_=f"pane {p.timing}",
                           data_key=p.key, data_batch=p.batch_id, data_pane_index=p.pane_index,
                           data_window_start_ms=p.window_start_ms, data_window_end_ms=p.window_end_ms))
        out.append(element("text", text(p.values), x=x1 + 7, y=y + 4, font_size=10, fill=colour))
    return out, bottom


def render_svg(timeline: Timeline) -> str:
    """The timeline as a standalone SVG document (see the module docstring for what it shows)."""
    lo, hi = _range(timeline)
    scale = _Scale(lo, hi)
    body = _legend(24)
    top = LEGEND_PX
    keys = timeline.keys()
    if not keys or not timeline.batches:
        body.append(element("text", text("no committed batch or no row in range"), x=PLOT_LEFT_PX, y=top + 20))
        top += 40
    for key in keys:
        drawn, top = _panel(timeline, key, scale, top)
        body += drawn
        top += PANEL_GAP_PX
    return svg(PLOT_LEFT_PX + PLOT_WIDTH_PX + RIGHT_PX, top, body, f"window timeline of job {timeline.job}")


def render_page(timeline: Timeline, picture: str) -> str:
    """An HTML page with the SVG inline, the notes and a table of the batches."""
    from pipelines.visual.svg import html_table
    counts = {t: sum(1 for p in timeline.panes if p.timing == t) for t in TIMING_COLOURS}
    rows = [[b.batch_id, time_label(b.processing_time_ms, True), time_label(b.watermark_before_ms, True),
             time_label(b.watermark_after_ms, True)] for b in timeline.batches]
    notes = "".join(f"<p class=\"note\">{text(n)}</p>" for n in timeline.notes)
    summary = (f"<p>{len(timeline.keys())} key(s), {len(timeline.batches)} batch(es); panes: "
               + ", ".join(f"{n} {t}" for t, n in counts.items())
               + f"; {sum(r.kind == LATE_ROW for r in timeline.rows)} late row(s), "
               f"{sum(r.kind == QUARANTINED_ROW for r in timeline.rows)} quarantined row(s).</p>")
    return page(f"Window timeline: {timeline.job}",
                [summary, notes, picture, "<h2>Batches</h2>",
                 html_table(["batch", "processing time", "watermark at start", "watermark after"], rows)])


def write_timeline(timeline: Timeline, out: str | Path) -> tuple[Path, Path]:
    """Write ``out`` (an ``.svg``) and the HTML page beside it (same name, ``.html``); return both paths."""
    out = Path(out)
    if out.suffix.lower() != ".svg":
        raise ValueError(f"--out {str(out)!r} must name an .svg file (the HTML page is written beside it)")
    out.parent.mkdir(parents=True, exist_ok=True)
    picture = render_svg(timeline)
    out.write_text(picture)
    html = out.with_suffix(".html")
    html.write_text(render_page(timeline, picture))
    return out, html


# ------------------------------------------------------------------ reading the tables
def arrival_batches(commit_ms: list[int | None], event_ms: list[int | None], batches: tuple[BatchRow, ...]
                    ) -> list[int | None]:
    """The batch each raw row arrived in (see the module docstring); None: not read by any committed batch yet."""
    if not batches:
        return [None] * len(commit_ms)
    times = [b.processing_time_ms for b in batches]
    known = [c for c in commit_ms if c is not None]
    by_commit = all(t is not None for t in times) and not (known and len(batches) > 1 and max(known) <= times[0])
    out: list[int | None] = []
    if by_commit:
        for c in commit_ms:
            i = bisect.bisect_left(times, c) if c is not None else 0
            out.append(batches[i].batch_id if i < len(batches) else None)
        return out
    seen = [b.max_seen_ms if b.max_seen_ms is not None else MIN_MS for b in batches]
    running = [max(seen[:i + 1]) for i in range(len(seen))]
    for e in event_ms:
        i = bisect.bisect_left(running, e) if e is not None else 0
        out.append(batches[min(i, len(batches) - 1)].batch_id)
    return out


def _key_text(row, key_columns) -> str:
    return ", ".join(str(row[c]) for c in key_columns) if key_columns else "(all)"


def _commit_times(source_path: str) -> dict[str, int]:
    """File name -> commit timestamp (ms) of the commit that added it, from the table's ``_delta_log`` JSON."""
    out: dict[str, int] = {}
    for commit in sorted(Path(source_path, "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
        stamp = next((a["commitInfo"].get("timestamp") for a in actions if "commitInfo" in a), None)
        stamp = stamp if stamp is not None else int(commit.stat().st_mtime * 1000)
        for a in actions:
            if "add" in a:
                out[Path(a["add"]["path"]).name] = stamp
    return out


def _values_text(row, names: list[str]) -> str:
    return ", ".join(f"{n}={row[n]}" for n in names if n in row)


def load_timeline(spark, job, key: str | None = None, from_ms: int | None = None, to_ms: int | None = None,
                  max_rows: int = 20_000) -> Timeline:
    """Read a job's progress, results, late, quarantine and raw tables into a :class:`Timeline`.

    Args:
        key: only this key (the key columns' values joined by ``", "``).
        from_ms, to_ms: only rows with event time in ``[from_ms, to_ms)`` and
            windows that overlap it (panes of global windows always).
        max_rows: at most this many raw rows are drawn (the picture says so).
    """
    from pyspark.sql import functions as F

    from pipelines.drivers import event_time_ms_sql
    from windowing.spark import delta_io
    from windowing.spark.stores import DeltaStore

    store = DeltaStore(spark, job.operator_id, job.state_root, job.results_path, job.late_path, job.quarantine_path)
    keys = list(job.spec.key_columns)
    notes: list[str] = []
    batches: list[BatchRow] = []
    if delta_io.table_exists(spark, store.progress_path):
        wm = MIN_MS
        for p in (spark.read.format("delta").load(store.progress_path)
                  .select("batch_id", "watermark_ms", "processing_time_ms", "max_seen_ms").orderBy("batch_id")
                  .collect()):
            batches.append(BatchRow(p["batch_id"], wm, p["watermark_ms"], p["processing_time_ms"], p["max_seen_ms"]))
            wm = p["watermark_ms"]
    batches_t = tuple(batches)

    def in_range(ts):
        return ((ts >= F.lit(from_ms)) if from_ms is not None else F.lit(True)) & \
               ((ts < F.lit(to_ms)) if to_ms is not None else F.lit(True))

    def with_key(df):
        if key is None:
            return df
        text_key = F.concat_ws(", ", *[F.col(c).cast("string") for c in keys]) if keys else F.lit("(all)")
        return df.where(text_key == F.lit(key))

    rows: list[RowMark] = []
    excluded = None
    for kind, path in ((LATE_ROW, job.late_path), (QUARANTINED_ROW, job.quarantine_path)):
        if not path or not delta_io.table_exists(spark, path):
            continue
        df = with_key(spark.read.format("delta").load(path))
        if "event_time_ms" not in df.columns:
            df = df.withColumn("event_time_ms", F.expr(event_time_ms_sql(job.spec.event_time_column,
                                                                          dict(df.dtypes)[job.spec.event_time_column])))
        df = df.where(in_range(F.col("event_time_ms")) | F.col("event_time_ms").isNull())
        for r in df.select(*keys, "event_time_ms", "batch_id", "reason").collect():
            rows.append(RowMark(_key_text(r, keys), r["event_time_ms"], r["batch_id"], kind, r["reason"]))
        if job.event_id_column and job.event_id_column in df.columns:
            ids = df.select(job.event_id_column)
            excluded = ids if excluded is None else excluded.unionByName(ids)
    if delta_io.table_exists(spark, job.source_path):
        raw = with_key(spark.read.format("delta").load(job.source_path))
        ts = F.expr(event_time_ms_sql(job.spec.event_time_column, dict(raw.dtypes)[job.spec.event_time_column]))
        raw = raw.select("*", ts.alias("__viz_ts"), F.col("_metadata.file_path").alias("__viz_file"))
        raw = raw.where(in_range(F.col("__viz_ts")) & F.col("__viz_ts").isNotNull())
        if excluded is not None:
            raw = raw.join(excluded.distinct(), job.event_id_column, "left_anti")
        else:
            notes.append("The job has no event_id column: late and quarantined rows are also drawn as input rows.")
        picked = raw.select(*keys, "__viz_ts", "__viz_file").limit(max_rows + 1).collect()
        if len(picked) > max_rows:
            notes.append(f"Only the first {max_rows} input rows are drawn.")
            picked = picked[:max_rows]
        commits = _commit_times(job.source_path)
        arrivals = arrival_batches([commits.get(Path(r["__viz_file"]).name) for r in picked],
                                   [r["__viz_ts"] for r in picked], batches_t)
        unread = 0
        for r, b in zip(picked, arrivals):
            if b is None:
                unread += 1
                continue
            rows.append(RowMark(_key_text(r, keys), r["__viz_ts"], b, EVENT))
        if unread:
            notes.append(f"{unread} raw row(s) were added after the last committed batch and are not drawn.")
    panes: list[PaneMark] = []
    if job.results_path and delta_io.table_exists(spark, job.results_path):
        results = with_key(spark.read.format("delta").load(job.results_path))
        if from_ms is not None:
            results = results.where(F.col("window_end_ms").isNull() | (F.col("window_end_ms") > F.lit(from_ms)))
        if to_ms is not None:
            results = results.where(F.col("window_start_ms").isNull() | (F.col("window_start_ms") < F.lit(to_ms)))
        names = [n for n, _ in job.spec.aggregates] or [c for c in results.columns
                                                        if c not in PANE_COLUMNS and c not in keys]
        for r in results.collect():
            d = r.asDict()
            superseded = tuple((s["window_start_ms"], s["window_end_ms"]) for s in (d.get("supersedes") or []))
            panes.append(PaneMark(_key_text(d, keys), d["window_start_ms"], d["window_end_ms"], d["batch_id"],
                                  d["timing"], d["pane_index"], bool(d["is_final"]), _values_text(d, names),
                                  superseded))
    panes.sort(key=lambda p: (p.key, p.batch_id, p.window_start_ms or 0, p.pane_index))
    return Timeline(job.name, batches_t, tuple(rows), tuple(panes), from_ms, to_ms, tuple(notes))
