"""Joins of two streams on Spark: window join, co-group and interval join, state in Delta, exactly once.

* :mod:`operator`: :class:`~windowing.spark.joins.operator.JoinOperator`, the batch protocol.
* :mod:`intake`: each side's rows tagged and checked; the two-input clock and watermark.
* :mod:`plans`: which plan runs a spec: :mod:`window_plan` (the DataFrame plan of the event-time
  trigger on tumbling and sliding windows), :mod:`keyed_plan` (the per-key path: every window
  join), :mod:`interval_plan` (the interval join).
* :mod:`stores`: the Delta tables (or memory, in tests); :mod:`outputs`: their schemas.

The design is in docs/joins.md.
"""
