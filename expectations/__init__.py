"""Great Expectations suites, as code, for a windowed job's Delta tables.

One module per kind of table; each exposes ``checks(spark, job, scope)``
(see :mod:`expectations.base`). ``pipelines.quality.validate_job`` runs them.

========================  ==========================  =========================================
suite                     module                      table
========================  ==========================  =========================================
``raw_events``            ``raw_events``              the raw events (or a micro-batch of them)
``window_results``        ``window_results``          the panes (results table)
``late_rows``             ``late_quarantine``         the late-data table
``quarantine_rows``       ``late_quarantine``         the quarantine table
``state_windows``         ``state``                   open windows (as of the last batch)
``state_progress``        ``state``                   the progress table
``reconciliation``        ``reconciliation``          raw vs results + late + quarantine (backfill)
``row_accounting``        ``accounting``              each batch's progress metrics vs its rows in the tables
``watermark_jumps``       ``watermark``               progress + a batch's raw rows (stream)
``join_results``          ``join_results``            a join job's results (pipelines.join_quality)
``join_accounting``       ``join_results``            a join job's progress vs its late and quarantine tables
========================  ==========================  =========================================
"""
from expectations import accounting, late_quarantine, raw_events, reconciliation, state, watermark, window_results

SUITE_MODULES = (raw_events, window_results, late_quarantine, state, accounting, reconciliation, watermark)
SUITES = {
    raw_events.SUITE: raw_events,
    window_results.SUITE: window_results,
    late_quarantine.LATE_SUITE: late_quarantine,
    late_quarantine.QUARANTINE_SUITE: late_quarantine,
    state.WINDOWS_SUITE: state,
    state.PROGRESS_SUITE: state,
    accounting.SUITE: accounting,
    reconciliation.SUITE: reconciliation,
    watermark.SUITE: watermark,
}
