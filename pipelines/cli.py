"""``winjob``: run and inspect windowed jobs.

    winjob demo [--root DIR] [--sessions | --join]
    winjob stream --job jobs/purchases_per_minute.toml [--root DIR] [--processing-time "30 seconds" --timeout S] [--reset-state]
    winjob backfill --job jobs/purchases_per_minute.toml [--start ISO --end ISO] [--chunk "1 hour"] [--reset-state]
    winjob reprocess --job jobs/purchases_per_minute.toml --start ISO --end ISO [--window '{"size": "5 minutes"}']
                     [--into NAME] [--chunk "1 hour"]
    winjob replay --job jobs/purchases_per_minute.toml --into NAME [--from-batch A --to-batch B] [--window '{"size": "5 minutes"}']
                  [--diff]
    winjob inspect --job jobs/purchases_per_minute.toml [--root DIR]
    winjob inspect --job jobs/purchases_per_minute.toml --timeline [--key K] [--from ISO --to ISO] [--max-keys N] --out FILE.svg
    winjob report --job jobs/purchases_per_minute.toml [--root DIR] [--out FILE.html]

    winjob validate --job jobs/purchases_per_minute.toml [--root DIR] [--batch-id N] [--run-kind K] [--suite S ...]

A join job (jobs/joins/*.toml) runs with stream, backfill, reprocess, replay, inspect (also --timeline) and
validate; its --window overrides are keys of [join.window] (an interval join has none).

Every command also takes ``--verbose`` (the stack trace of a failure).

Exit codes (``pipelines.errors.ExitCode``; docs/operations.md says what to do for each):
0 success; 1 a critical data-quality expectation failed; 2 the command line or the job file is
wrong, or the job does not fit its state (a changed spec); 3 an input table is missing, not a
Delta table, or unreadable; 4 another run wrote the same batch at the same time; 5 any other
failure. A failure prints one line naming what failed, where and what to do.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import traceback
from pathlib import Path

from pipelines.errors import ExitCode, JobError, explain
from pipelines.job import load_job
from pipelines.orchestration import DEFAULT_DATA_ROOT as DEMO_ROOT


def _time(text: str) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO date/time such as 2026-11-01T09:00:00") from None
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


def _window(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{text!r} is not a JSON object such as '{{\"size\": \"5 minutes\"}}'")
    return value


def _spark(job=None, verbose: bool = False, master: str | None = None):
    """The process's SparkSession: the job's ``[spark]`` settings, ``--master`` over ``spark.master``.

    A session started here logs nothing of Spark's own unless ``verbose``: a
    failure ends as one line of :func:`main` (a session the caller started keeps its log level).
    """
    from pyspark.sql import SparkSession
    from windowing.spark import get_spark
    started_here = SparkSession.getActiveSession() is None
    spark = get_spark("winjob", master=master, conf=(job.spark_conf if job else None))
    if started_here and not verbose:
        spark.sparkContext.setLogLevel("OFF")
    return spark


def inspect(spark, job) -> dict:
    """Watermark, last batch, open windows and row counts of every table of a job."""
    from windowing.spark.lake import delta_lake_io
    from windowing.spark.state import log as state_log
    from windowing.spark import DeltaStore
    store = DeltaStore(spark, job.operator_id, job.state_root, job.results_path, job.late_path, job.quarantine_path)
    last = store.last_progress()
    from windowing.spark import execution_path
    info = {"job": job.name, "operator_id": job.operator_id, "spec": job.spec.describe(),
            "execution_path": execution_path(job.spec),
            "last_batch_id": last["batch_id"] if last else None,
            "watermark_ms": last["watermark_ms"] if last else None,
            "last_batch_metrics": json.loads(last["metrics"]) if last else None, "tables": {}}
    if last and -(2**63) < last["watermark_ms"] < 2**63 - 1:
        info["watermark"] = dt.datetime.fromtimestamp(last["watermark_ms"] / 1000, dt.timezone.utc).isoformat()
    for name, path in (("raw", job.source_path), ("windows (open)", store.windows_path),
                       ("buffers", store.buffers_path), ("progress", store.progress_path),
                       ("keyed state (per-key path)", store.windows_path.rsplit("/", 1)[0] + "/keyed_state"),
                       ("results", job.results_path), ("late", job.late_path),
                       ("quarantine", job.quarantine_path)):
        if path == store.windows_path:
            # the state after the last committed batch: changes logged in progress rows folded in
            frame = state_log.committed_windows(spark, path.rsplit("/", 1)[0], job.operator_id)
            if frame is not None:
                info["tables"][name] = {"path": path, "rows": frame.count()}
        elif delta_lake_io.table_exists(spark, path):
            info["tables"][name] = {"path": path, "rows": spark.read.format("delta").load(path).count()}
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="winjob", description="Flink-style windowed jobs on Spark + Delta.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--verbose", action="store_true", help="on a failure, print the stack trace too")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", parents=[common],
                          help="generate purchases, stream them in arrivals, backfill, compare")
    demo.add_argument("--root", default=str(DEMO_ROOT),
                      help=f"folder for the demo's Delta tables (default {DEMO_ROOT}, where ./dev airflow looks)")
    demo.add_argument("--sessions", action="store_true",
                      help="the second example: session windows with early firings and a late bridge")
    demo.add_argument("--join", action="store_true",
                      help="a window join of two inputs with early and late panes and a late row per side")
    for name, text in (("stream", "run the streaming job (availableNow by default)"),
                       ("backfill", "run the job over a time range of the raw table"),
                       ("reprocess", "recompute the windows of a time range (maybe with another window spec) "
                                     "and replace that range in the results, or write a new output table"),
                       ("replay", "run the stream's recorded micro-batches again on a fresh operator, into tables "
                                  "of their own (maybe with another window spec); --diff compares with the stream"),
                       ("inspect", "show watermark, last batch, open windows, table row counts"),
                       ("validate", "check the job's Delta tables with Great Expectations; build Data Docs"),
                       ("report", "write the data-quality-over-time page beside the job's Data Docs")):
        p = sub.add_parser(name, help=text, parents=[common])
        p.add_argument("--job", required=True, help="job definition (TOML)")
        p.add_argument("--root", default=None, help="folder or URI (s3a://bucket/prefix) relative paths of "
                                                    "the job resolve against")
        p.add_argument("--master", default=None, help="Spark master (spark://host:7077, local[2]); "
                                                      "default: the job's [spark] spark.master")
        if name in ("stream", "backfill"):
            p.add_argument("--reset-state", action="store_true", help="discard this operator's state first")
        if name == "validate":
            p.add_argument("--batch-id", type=int, default=None, help="only this batch's output rows")
            p.add_argument("--run-kind", default="adhoc", help="recorded: stream, backfill, reprocess, adhoc "
                                                              "(backfill adds the reconciliation suite)")
            p.add_argument("--suite", action="append", default=None, help="run only this suite (repeatable)")
        if name == "inspect":
            p.add_argument("--timeline", action="store_true",
                           help="draw the windows, panes, rows and watermark per key and batch (SVG + HTML)")
            p.add_argument("--key", default=None, help="timeline: only this key (key values joined by ', ')")
            p.add_argument("--from", dest="from_time", type=_time, default=None, help="timeline: event time from")
            p.add_argument("--to", dest="to_time", type=_time, default=None, help="timeline: event time to")
            p.add_argument("--out", default=None, help="timeline: the .svg to write (an .html page beside it)")
            p.add_argument("--max-keys", type=int, default=None, help="timeline: draw the keys with the most rows "
                                                                      "and panes, this many (default 12; 0: every key)")
        if name == "report":
            p.add_argument("--out", default=None, help="the .html to write (default: beside the Data Docs index)")
        if name == "stream":
            p.add_argument("--processing-time", default=None, help="long-running: micro-batch interval")
            p.add_argument("--timeout", type=float, default=None, help="stop a long-running stream after S seconds")
        if name == "backfill":
            p.add_argument("--start", type=_time, default=None)
            p.add_argument("--end", type=_time, default=None)
            p.add_argument("--chunk", default=None, help="event-time chunk, e.g. '1 hour'")
        if name == "reprocess":
            p.add_argument("--start", type=_time, required=True, help="windows ending after this time ...")
            p.add_argument("--end", type=_time, required=True, help="... and at or before this one")
            p.add_argument("--window", type=_window, default=None,
                           help='JSON overrides of the job\'s [window] table (a join job\'s [join.window]), '
                                'e.g. \'{"size": "5 minutes"}\'')
            p.add_argument("--into", default=None, metavar="NAME",
                           help="write new tables results_NAME, late_NAME, ... instead of replacing the range "
                                "in the job's own tables")
            p.add_argument("--chunk", default=None, help="event-time chunk, e.g. '1 hour'")
        if name == "replay":
            p.add_argument("--into", required=True, metavar="NAME",
                           help="the replay's tables: replay_NAME/{results,late,quarantine} in the job's output folder")
            p.add_argument("--from-batch", type=int, default=None, help="first batch whose outputs are written")
            p.add_argument("--to-batch", type=int, default=None, help="last batch replayed")
            p.add_argument("--window", type=_window, default=None,
                           help='JSON overrides of the job\'s [window] table (a join job\'s [join.window]), '
                                'e.g. \'{"size": "5 minutes"}\'')
            p.add_argument("--diff", action="store_true",
                           help="print the differences against the stream's outputs of the batch range")
    args = parser.parse_args(argv)
    from pipelines import logs
    logs.to_console()
    job = None
    try:
        if args.command == "demo" and args.sessions:
            from examples.sessions_demo import run_sessions_demo
            return 0 if run_sessions_demo(_spark(verbose=args.verbose), Path(args.root) / "sessions") else 1
        if args.command == "demo" and args.join:
            from examples.join_demo import run_join_demo
            return 0 if run_join_demo(_spark(verbose=args.verbose), Path(args.root) / "join") else 1
        if args.command == "demo":
            from examples.demo import run_demo
            run_demo(_spark(verbose=args.verbose), args.root)
            return 0
        job = _load(args.job, args.root)
        if args.command == "inspect" and args.timeline and not str(args.out or "").lower().endswith(".svg"):
            raise ValueError(f"inspect --timeline needs --out FILE.svg, got {args.out!r}")
        from pipelines.join_job import JoinJob
        if isinstance(job, JoinJob):   # two inputs joined: pipelines/join_drivers.py
            from pipelines.join_drivers import run_command
            return run_command(lambda: _spark(job, args.verbose, args.master), job, args)
        if args.command in ("stream", "backfill", "reprocess", "replay"):
            from pipelines.drivers import require_raw_table
            require_raw_table(None, job)   # a missing raw table is told before Spark starts
        spark = _spark(job, args.verbose, args.master)
        from pipelines import transforms
        if isinstance(job, transforms.TransformJob):   # a stateless stage: stream and backfill only
            if args.command not in ("stream", "backfill"):
                raise JobError(f"{args.job} is a [transform] job: it runs with stream and backfill only")
            if args.command == "stream":
                transforms.run_stream(spark, job, processing_time=args.processing_time, timeout_s=args.timeout)
            else:
                transforms.run_backfill(spark, job)
            return ExitCode.OK
        if args.command == "stream":
            from pipelines.drivers import run_stream
            from pipelines.errors import raw_schema_checked
            with raw_schema_checked(spark, job):
                run_stream(spark, job, processing_time=args.processing_time, timeout_s=args.timeout,
                           reset_state=args.reset_state)
        elif args.command == "backfill":
            from pipelines.drivers import run_backfill
            run_backfill(spark, job, args.start, args.end, args.chunk, reset_state=args.reset_state)
        elif args.command == "reprocess":
            from pipelines.reprocess import new_output_job, reprocess_range
            into = new_output_job(job, args.into) if args.into else None
            report = reprocess_range(spark, job, args.start, args.end, into=into, window=args.window,
                                     chunk=args.chunk)
            print(json.dumps(report.__dict__, indent=2))
        elif args.command == "replay":
            from pipelines.replay import replay_stream
            report = replay_stream(spark, job, args.into, args.from_batch, args.to_batch, window=args.window,
                                   diff=args.diff)
            print(json.dumps(report.as_dict(), indent=2))
            if report.diff is not None:
                print(report.diff.summary())
        elif args.command == "validate":
            from pipelines.quality import DataQualityError, validate_job
            try:
                report = validate_job(spark, job, batch_id=args.batch_id, run_kind=args.run_kind,
                                      suites=args.suite)
            except DataQualityError as error:
                print(error.report.summary())
                print(f"winjob validate: {error}", file=sys.stderr)
                return ExitCode.DATA_QUALITY
            print(report.summary())
        elif args.command == "report":
            from pipelines.visual.report import write_report
            print(write_report(spark, job, args.out))
        elif args.timeline:
            from pipelines.visual.job_timeline import load_timeline
            from pipelines.visual.timeline import write_timeline
            timeline = load_timeline(spark, job, key=args.key,
                                     from_ms=int(args.from_time.timestamp() * 1000) if args.from_time else None,
                                     to_ms=int(args.to_time.timestamp() * 1000) if args.to_time else None)
            from pipelines.visual.timeline import DEFAULT_MAX_KEYS
            max_keys = DEFAULT_MAX_KEYS if args.max_keys is None else args.max_keys
            for path in write_timeline(timeline, args.out, max_keys):
                print(path)
        else:
            print(json.dumps(inspect(spark, job), indent=2, default=str))
        return ExitCode.OK
    except (Exception, KeyboardInterrupt) as error:  # noqa: BLE001 - every failure ends as one line and a code
        explained = explain(error, outputs=job.output_root if job is not None else None)
        if args.verbose:
            traceback.print_exc()
        print(f"winjob {args.command}: {explained.line}", file=sys.stderr)
        return explained.code


def _load(path: str, root: str | None):
    """The job of ``path``; any problem with the file is a :class:`JobError` naming it."""
    try:
        return load_job(path, root=root)
    except (ValueError, TypeError, KeyError, FileNotFoundError, OSError) as error:
        message = str(error) if str(path) in str(error) else f"job definition {path}: {error}"
        raise JobError(message) from error


if __name__ == "__main__":
    sys.exit(main())
