"""The second example: session windows with early firings and a late bridge.

Run with ``winjob demo --sessions`` (or ``./dev winjob demo --sessions``); its job file is
``examples/sessions_demo.toml`` (so ``winjob inspect --timeline`` draws it). Four
arrivals of clicks land in a raw Delta table; after each, the streaming
driver runs (``availableNow``), so the session state lives in Delta between
micro-batches. The spec: sessions per user with a 30-second gap, an
event-time trigger with early firings every 3 elements, 2 minutes of
allowed lateness and a late-data table. What to look for in the output:

* alice's first three clicks fire an EARLY pane before her session ends;
* the watermark passing the sessions' ends fires their ON_TIME panes;
* a late click of alice at 09:00:45 touches both of her closed sessions
  ([09:00:00, 09:00:50) and [09:01:10, 09:01:50)): they merge into one
  session that fires a LATE pane whose ``supersedes`` names the two;
* a click from long ago (beyond the allowed lateness) goes to the late table.

The same arrivals are run through the reference model, and the demo checks
that the Spark run emitted exactly the model's panes.
"""
from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from pyspark.sql import SparkSession

from examples.demo import RAW_SCHEMA, land
from pipelines.drivers import log, run_stream
from pipelines.job import Job, load_job
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpec
from windowing.spark import execution_path

T0 = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.timezone.utc)


def _click(event_id: str, user: str | None, seconds: float, items: int = 1) -> tuple:
    at = T0 + dt.timedelta(seconds=seconds)
    return (event_id, user, items, at, at)


# (what the arrival shows, its rows)
ARRIVALS: list[tuple[str, list[tuple]]] = [
    ("alice clicks 3 times (an EARLY pane), bob once",
     [_click("e1", "alice", 0), _click("e2", "alice", 10, 2), _click("e3", "alice", 20), _click("e4", "bob", 5)]),
    ("alice starts a second session, bob too; carol's click moves the watermark to 09:02:30",
     [_click("e5", "alice", 70), _click("e6", "alice", 80, 3), _click("e7", "bob", 100),
      _click("e8", "carol", 150)]),
    ("a late click of alice bridges her two sessions (a LATE pane); dave's click is too late",
     [_click("e9", "alice", 45, 5), _click("e10", "dave", -200)]),
    ("carol's next click moves the watermark past every cleanup time",
     [_click("e11", "carol", 400)]),
]


SESSIONS_JOB = Path(__file__).resolve().parent / "sessions_demo.toml"
"""The example's job file: its spec, and its tables directly under the example's folder."""


def sessions_spec() -> WindowSpec:
    """Sessions per user (30 s gap), an early pane every 3 clicks, 2 minutes of allowed lateness, a late table."""
    return load_job(SESSIONS_JOB, root=".").spec


def sessions_job(root: Path) -> Job:
    return load_job(SESSIONS_JOB, root=root)


def _hms(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%H:%M:%S")


def model_panes(spec: WindowSpec) -> list[tuple]:
    """The reference model's panes for the same arrivals: (batch, user, start, end, timing, index, items, clicks)."""
    model = ReferenceOperator(spec)
    names = [f.name for f in RAW_SCHEMA.fields]
    out = []
    for batch_id, (_, rows) in enumerate(ARRIVALS):
        dicts = []
        for row in rows:
            d = dict(zip(names, row))
            d["event_time"] = int(d["event_time"].timestamp() * 1000)
            dicts.append(d)
        for p in model.process_batch(dicts, batch_id).panes:
            out.append((batch_id, p.key[0], p.window_start_ms, p.window_end_ms, p.timing, p.pane_index,
                        p.values["items"], p.values["clicks"]))
    return sorted(out)


def run_sessions_demo(spark: SparkSession, root: str | Path = "demo-output/sessions") -> bool:
    """Run the example; return True when the Spark run emitted exactly the reference model's panes."""
    root = Path(root).resolve()
    shutil.rmtree(root, ignore_errors=True)
    job = sessions_job(root)
    print(f"spec: {job.spec.describe()}")
    print(f"execution path: {execution_path(job.spec)}")
    for batch, (what, rows) in enumerate(ARRIVALS):
        log(f"arrival {batch + 1}/{len(ARRIVALS)}: {what}")
        land(spark, rows, job.source_path)
        run_stream(spark, job, validate=False)

    results = spark.read.format("delta").load(job.results_path)
    has_supersedes = "supersedes" in results.columns
    rows = results.orderBy("batch_id", "user_id", "window_start_ms", "pane_index").collect()
    print("\nsession panes (batch, user, session, timing, pane, items, clicks, final, supersedes):")
    for r in rows:
        superseded = ", ".join(f"[{_hms(s['window_start_ms'])}, {_hms(s['window_end_ms'])})"
                               for s in (r["supersedes"] or [])) if has_supersedes else ""
        print(f"  {r['batch_id']}  {r['user_id']:<6} [{_hms(r['window_start_ms'])}, {_hms(r['window_end_ms'])})  "
              f"{r['timing']:<7} {r['pane_index']}  {r['items']:>3} {r['clicks']:>3}  "
              f"{'final' if r['is_final'] else '     '}  {superseded}")
    late = spark.read.format("delta").load(job.late_path).collect()
    print("\nlate rows (beyond allowed lateness):")
    for r in late:
        print(f"  {r['event_id']} {r['user_id']} at {_hms(r['event_time_ms'])}: {r['reason']} "
              f"(watermark {_hms(r['watermark_ms'])})")
    spark_panes = sorted((r["batch_id"], r["user_id"], r["window_start_ms"], r["window_end_ms"], r["timing"],
                          r["pane_index"], r["items"], r["clicks"]) for r in rows)
    same = spark_panes == model_panes(job.spec)
    print(f"\nthe Spark run emitted exactly the reference model's panes: {'yes' if same else 'NO'}")
    print(f"its timeline: ./dev winjob inspect --job {SESSIONS_JOB} --root {root} --timeline --out {root / 'timeline.svg'}")
    return same
