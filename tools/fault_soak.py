"""Fault soak of the ``winjob`` CLI: SIGKILLs at random points, concurrent runs, compared with a clean run.

    ./dev python tools/fault_soak.py --kills 50 [--seed N] [--concurrent-pairs 4] [--workdir DIR]

Prints every run (its fault plan and outcome), every table compared with the
clean run's, and a PASS/FAIL line with the seed. Exit code 0 on PASS, 1 on a
difference or a failed run, 2 on bad arguments. ``docs/fault-soak.md`` explains
what it does and checks; :mod:`tools.soak` is the harness (shared with
``tests/e2e/test_fault_soak.py``).
"""
from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.soak import Soak, SoakConfig  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fault_soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=50,
                        help="SIGKILLs in all, split between backfill and stream (default 50)")
    parser.add_argument("--stream-kills", type=int, default=None, help="kills of the stream (overrides the split)")
    parser.add_argument("--backfill-kills", type=int, default=None, help="kills of the backfill (overrides the split)")
    parser.add_argument("--seed", type=int, default=None, help="replay a soak (default: a random seed, printed)")
    parser.add_argument("--concurrent-pairs", type=int, default=4, help="pairs of concurrent stream runs (default 4)")
    parser.add_argument("--arrivals", type=int, default=None,
                        help="arrivals streamed under kills (default: one per 3 stream kills, at least 3)")
    parser.add_argument("--events", type=int, default=600, help="purchases generated (default 600)")
    parser.add_argument("--minutes", type=int, default=12, help="event-time span of the purchases (default 12)")
    parser.add_argument("--chunk", default="1 minute", help="the backfill's event-time chunk (default 1 minute)")
    parser.add_argument("--delay-share", type=float, default=0.4,
                        help="share of kills placed by a random delay instead of at a commit stage (default 0.4)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="folder for the roots and logs (default: a new temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder after a PASS (a FAIL keeps it)")
    args = parser.parse_args(argv)

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    backfill_kills = args.backfill_kills if args.backfill_kills is not None else args.kills // 2
    stream_kills = args.stream_kills if args.stream_kills is not None else args.kills - backfill_kills
    try:
        config = SoakConfig(seed=seed, stream_kills=stream_kills, backfill_kills=backfill_kills,
                            concurrent_pairs=args.concurrent_pairs,
                            arrivals=args.arrivals or max(3, -(-stream_kills // 3)), events=args.events,
                            minutes=args.minutes, backfill_chunk=args.chunk, delay_share=args.delay_share)
    except ValueError as error:
        print(f"fault_soak: {error}", file=sys.stderr)
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"fault-soak-{seed}-"))
    if any(Path(workdir).glob("*")):
        print(f"fault_soak: {workdir} is not empty; give an empty or new folder", file=sys.stderr)
        return 2

    from windowing.spark.runtime.spark_session import get_spark
    spark = get_spark("fault-soak", shuffle_partitions=2)
    report = Soak(spark, config, workdir).run()
    print()
    print(report.summary())
    if report.passed and not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
