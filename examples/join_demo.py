"""The join example: a window join of clicks and orders with EARLY, ON_TIME and LATE panes.

Run with ``winjob demo --join`` (or ``./dev winjob demo --join``); its job file is
``jobs/joins/clicks_orders.toml`` and its inputs :mod:`examples.join_inputs`. The
two arrivals land in the two Delta tables; after each, the stream runs
(``availableNow``: both tables in one query). Then a one-pass backfill of the
same tables (into tables of its own). The demo prints the panes, the late rows
with their side and each side's accounting, and checks against the reference
model: the stream's outputs equal the model's on the same arrivals, the
backfill's equal the model's on one batch and the flush, and both say the same
pairs for the windows the stream closed.
"""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from pyspark.sql import SparkSession

from examples.join_inputs import ARRIVALS, T0_MS, land
from pipelines import logs
from pipelines.join_check import EndOfInput, final_pairs, model_outputs, table_outputs
from pipelines.join_drivers import run_join_backfill, run_join_stream
from pipelines.join_job import JoinJob
from pipelines.job import load_job

JOIN_JOB = Path(__file__).resolve().parents[1] / "jobs" / "joins" / "clicks_orders.toml"


def join_job(root: str | Path) -> JoinJob:
    return load_job(JOIN_JOB, root=root)


def backfill_job(job: JoinJob) -> JoinJob:
    """The same join writing to tables of its own beside the stream's (``*_backfill``)."""
    base = job.output_root
    return dataclasses.replace(job, operator_id=f"{job.operator_id}_backfill",
                               results_path=f"{base}/results_backfill", late_path=f"{base}/late_backfill",
                               quarantine_path=f"{base}/quarantine_backfill",
                               checkpoint_path=f"{job.checkpoint_path}_backfill")


def _s(ms: int) -> str:
    return f"{(ms - T0_MS) / 1000:g}s"


def run_join_demo(spark: SparkSession, root: str | Path = "demo-output/join") -> bool:
    """Run the example; return True when the stream and the backfill both equal the reference model."""
    root = Path(root).resolve()
    shutil.rmtree(root, ignore_errors=True)
    job = join_job(root)
    for i, (what, clicks, orders) in enumerate(ARRIVALS):
        logs.info(f"arrival {i + 1}/{len(ARRIVALS)}: {what}")
        land(spark, clicks, orders, job.left_path, job.right_path)
        run_join_stream(spark, job)
    backfill = backfill_job(job)
    run_join_backfill(spark, backfill)

    stream = table_outputs(spark, job)
    print(f"\nstream panes (times in seconds after 09:00) -- batch, user, window, pane, timing, final: "
          f"click x order")
    for (batch, key, start, end, pane, timing, final, row), n in sorted(stream.results.items(), key=repr):
        pair = "(no pair)" if row is None else f"{row[0]} ({row[1]}) x {row[2]} ({row[3]})"
        print(f"  {batch}  {key[0]}  [{_s(start)}, {_s(end)})  {pane}  {timing:<7} {'final' if final else '     '}"
              f"  {pair}")
    print("\nlate rows (beyond the allowed lateness), with their side:")
    for (batch, side, key, ts, reason), n in sorted(stream.late.items(), key=repr):
        print(f"  batch {batch}: {side:<5} {key[0]} at {_s(ts)}: {reason}")
    print("\neach side's rows per batch (input, accepted, late, dropped late, unassigned, quarantined):")
    for batch, sides in sorted(stream.metrics.items()):
        print(f"  batch {batch}: " + "; ".join(f"{side} {m}" for side, m in sorted(sides.items())))

    batches = [(clicks, orders) for _, clicks, orders in ARRIVALS]
    stream_model = model_outputs(job.spec, batches)
    backfill_model = model_outputs(job.spec, [EndOfInput(*(sum(side, []) for side in zip(*batches)))])
    backfilled = table_outputs(spark, backfill)
    closed_ms = max(w for (_, _, _, w, *_rest) in stream.results)
    checks = {
        "the stream's panes, late rows and accounting equal the reference model's on the same arrivals":
            stream.differences(stream_model),
        "the one-pass backfill's equal the model's on one batch and the flush": backfilled.differences(backfill_model),
        "stream and backfill end with the same pairs in every window the stream closed":
            [] if final_pairs(stream, closed_ms) == final_pairs(backfilled, closed_ms) else ["final pairs differ"]}
    print()
    for what, differences in checks.items():
        print(f"{what}: {'yes' if not differences else 'NO'}")
        for line in differences:
            print(f"    {line}")
    print(f"\ntables: winjob inspect --job {JOIN_JOB} --root {root}")
    print(f"picture: winjob inspect --job {JOIN_JOB} --root {root} --timeline --out {root}/timeline.svg")
    print(f"replay: winjob replay --job {JOIN_JOB} --root {root} --into check --diff")
    return not any(checks.values())
