"""The window state kept in the driver between batches equals the Delta state it stands for.

A stream reads its state from the rows it wrote the batch before when they are the state
the last commit recorded (:mod:`windowing.spark.state.cache`); otherwise from Delta. While
the state is in the driver a batch logs its changes in its progress row and every few
batches compacts them into the windows table (:mod:`windowing.spark.state.log`). Each test
compares a run that keeps the state in the driver with one that reads every batch from
Delta, table by table and state by state, and checks that the cache is dropped when another
writer's commit, a replay or a reset comes between, and that logged changes reach the
windows table at a compaction, a new process and a state too large for the driver.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import GlobalWindows, TumblingEventTimeWindows
from windowing.core.spec import WindowSpecBuilder
from windowing.core.triggers import CountTrigger, PurgingTrigger
from windowing.core.time import MAX_TIMESTAMP_MS
from windowing.spark.lake import delta_lake_io
from windowing.spark.state import cache as state_cache
from windowing.spark.state import log as state_log
from windowing.spark.state import stores
from windowing.spark.runtime.local_frames import arrow_frame
from windowing.spark.operator.protocol import SparkWindowOperator
from windowing.spark.state.cache import DELETE_FLAG, CachedState, apply_changes, apply_table_changes
from windowing.spark.state.log import LOG_BATCHES_SETTING, StatePin

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("state_cache")]

SCHEMA = "k string, ts bigint, v bigint"
# Windows of 10 ms, 5 ms allowed lateness: windows fire, fire late, are cleaned; one row too late.
BATCHES = [
    [("a", 1, 1), ("b", 2, 10), ("a", 12, 2)],
    [("a", 8, 4), ("b", 25, 20), ("c", 31, 100)],
    [("a", 3, 8), ("b", 14, 40), ("c", 44, 200)],     # a@3 is beyond the lateness: late table
    [("a", 52, 16), ("b", 47, 80)],
    [("c", 70, 300)],
]


def tumbling_spec():
    return (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(10))
            .allowed_lateness(5).side_output_late_data().aggregate(s=Sum("v"), n=Count()))


def global_count_spec():
    # global windows: the state is one bucket, written by MERGE
    return (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(GlobalWindows())
            .trigger(PurgingTrigger(CountTrigger(2))).aggregate(s=Sum("v"), n=Count()))


def _tuples(spark, cached: CachedState) -> list[tuple]:
    """The rows kept in the driver as a batch reads them: tuples in the windows table's column order."""
    return [tuple(row) for row in arrow_frame(spark, cached.rows, cached.schema).collect()]


@pytest.fixture
def log_batches(spark):
    """Sets how many batches log their state changes before one compacts (0: none logs)."""
    def set_to(batches: int) -> None:
        spark.conf.set(LOG_BATCHES_SETTING, str(batches))
    yield set_to
    spark.conf.unset(LOG_BATCHES_SETTING)


def _tables(spark, op) -> dict:
    """The outputs, the committed window state (logged changes folded in) and the progress."""
    store = op.store
    out = {}
    for name, path in (("results", store.results_path), ("late", store.late_path)):
        if delta_lake_io.table_exists(spark, path):
            out[name] = sorted(map(repr, (tuple(r) for r in spark.read.format("delta").load(path).collect())))
    out["windows"] = sorted(map(repr, store.open_windows()))
    progress = spark.read.format("delta").load(store.progress_path).orderBy("batch_id").collect()
    out["progress"] = [(r.batch_id, r.watermark_ms, json.loads(r.metrics)) for r in progress]
    return out


def _table_rows(spark, op) -> list:
    """The windows table as it is (without the changes logged since its last compaction)."""
    return sorted(map(repr, (tuple(r) for r in spark.read.format("delta").load(op.store.windows_path).collect())))


def _committed_pin(op) -> StatePin:
    return op.store.start_versions(op.last_progress(), buffers=False)[0]


def _run(spark, root, spec, batches, in_driver: bool, monkeypatch, first_batch: int = 0, max_rows: int = -1):
    """Run ``batches`` on a new operator as a new process would (nothing kept from earlier stores)."""
    state_cache.forget_all()
    with monkeypatch.context() as patch:
        if not in_driver:
            patch.setattr(stores, "MAX_CACHED_STATE_ROWS", max_rows)     # no state is small enough
        op = SparkWindowOperator.on_delta(spark, spec, "op", str(root))
        for b, rows in enumerate(batches, start=first_batch):
            op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
            cached = op.store._cached
            if in_driver:
                assert cached is not None and cached.pin == _committed_pin(op)
            else:
                assert cached is None
    return op


@pytest.fixture(scope="module")
def tumbling_alone(spark, tmp_path_factory):
    """The tables of one operator running every batch of the tumbling spec with its state kept."""
    with pytest.MonkeyPatch.context() as patch:
        op = _run(spark, tmp_path_factory.mktemp("alone"), tumbling_spec(), BATCHES, True, patch)
    assert sorted(op.store.open_windows()) == sorted(_tuples(spark, op.store._cached))
    return _tables(spark, op)


@pytest.fixture(scope="module")
def global_read(spark, tmp_path_factory):
    """The tables of one operator running every batch of the global spec, reading its state from Delta."""
    with pytest.MonkeyPatch.context() as patch:
        return _tables(spark, _run(spark, tmp_path_factory.mktemp("global_read"), global_count_spec(), BATCHES,
                                   False, patch))


def test_state_kept_in_the_driver_gives_the_tables_of_reading_delta(spark, tmp_path, monkeypatch, tumbling_alone):
    read = _run(spark, tmp_path / "read", tumbling_spec(), BATCHES, False, monkeypatch)
    assert _tables(spark, read) == tumbling_alone


def test_global_windows_kept_in_the_driver_merge_as_reading_delta(spark, tmp_path, monkeypatch, global_read):
    kept = _run(spark, tmp_path / "kept", global_count_spec(), BATCHES, True, monkeypatch)
    assert _tables(spark, kept) == global_read
    assert sorted(kept.store.open_windows()) == sorted(_tuples(spark, kept.store._cached))


def test_another_writers_version_is_read_from_delta(spark, tmp_path, tumbling_alone):
    """A writes batches 0-1, B (another store on the root) batch 2, A batch 3 onwards: A's kept
    rows are of a version B's commit followed; A must read B's version from Delta."""
    spec = tumbling_spec()
    a = SparkWindowOperator.on_delta(spark, spec, "op", str(tmp_path / "two"))
    for b in (0, 1):
        a.process_batch(spark.createDataFrame(BATCHES[b], SCHEMA), b)
    stale = a.store._cached
    b_op = SparkWindowOperator.on_delta(spark, spec, "op", str(tmp_path / "two"))
    b_op.process_batch(spark.createDataFrame(BATCHES[2], SCHEMA), 2)
    state_cache.forget_all()                # B ran in another process: A's process knows nothing of it
    a.store._loaded = False                 # A learns of B's commit as a restarted stream would
    for b in (3, 4):
        a.process_batch(spark.createDataFrame(BATCHES[b], SCHEMA), b)
    assert a.store._cached.pin != stale.pin
    assert _tables(spark, a) == tumbling_alone


def test_a_replayed_batch_drops_the_kept_rows(spark, tmp_path, tumbling_alone, log_batches):
    """A batch that dies after its state write and is replayed by the same operator finds the
    write landed: what it keeps cannot be known, so the next batch reads Delta."""
    log_batches(0)                     # every batch writes the windows table
    spec = tumbling_spec()
    armed = []

    def die_once(stage: str) -> None:
        if stage == "before_progress" and armed:
            armed.clear()
            raise RuntimeError("killed")
    op = SparkWindowOperator.on_delta(spark, spec, "op", str(tmp_path / "replay"), fault_injection=die_once)
    for b, rows in enumerate(BATCHES):
        if b == 2:
            armed.append(True)
            with pytest.raises(RuntimeError, match="killed"):
                op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
            assert op.store._cached is not None                       # of the version the batch wrote...
            assert op.store._cached.pin != _committed_pin(op)          # ...not the committed one
        op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
        if b == 2:
            assert op.store._cached is None        # the replay found its state write landed
    assert _tables(spark, op) == tumbling_alone


def test_small_batches_run_without_adaptive_execution_and_restore_the_session(spark, tmp_path):
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    try:
        seen = []
        op = SparkWindowOperator.on_delta(spark, tumbling_spec(), "op", str(tmp_path),
                                          fault_injection=lambda stage: seen.append(
                                              (stage, spark.conf.get("spark.sql.adaptive.enabled"))))
        for b, rows in enumerate(BATCHES[:3]):
            op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
            assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
        adaptive = {stage: value for stage, value in seen[-5:]}
        assert seen[0] == ("start", "true")                  # the first batch: the session's settings
        assert adaptive["after_outputs"] == "false"          # later ones: small
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", "false")


def test_applying_changes_replaces_deletes_and_inserts_by_key():
    schema = T.StructType([T.StructField(n, T.LongType()) for n in ("k", "end_bucket", "s")])
    arrow = to_arrow_schema(schema)
    rows = pa.Table.from_pylist([{"k": 1, "end_bucket": 0, "s": 10}, {"k": 2, "end_bucket": 0, "s": 20},
                                 {"k": 3, "end_bucket": 1, "s": 30}, {"k": None, "end_bucket": 1, "s": 5}],
                                schema=arrow)
    cached = CachedState(StatePin(4), schema, rows)
    change_schema = arrow.append(pa.field(DELETE_FLAG, pa.bool_()))
    changes = cached.apply(pa.Table.from_pylist([
        {"k": 1, "end_bucket": 0, "s": 11, DELETE_FLAG: False},
        {"k": 3, "end_bucket": 1, "s": None, DELETE_FLAG: True},
        {"k": 9, "end_bucket": 2, "s": None, DELETE_FLAG: True},       # matches nothing
        {"k": None, "end_bucket": 1, "s": 6, DELETE_FLAG: False},      # a null key matches a null key
        {"k": 4, "end_bucket": 2, "s": 40, DELETE_FLAG: False}], schema=change_schema), ["k", "end_bucket"],
        "end_bucket")
    assert changes.rows.schema == arrow
    assert sorted((tuple(r.values()) for r in changes.rows.to_pylist()), key=str) == sorted(
        [(1, 0, 11), (2, 0, 20), (4, 2, 40), (None, 1, 6)], key=str)
    assert changes.deleted == 1 and changes.touched == {0, 1, 2}
    assert cached.after(changes, 4, 5, wrote=True) == CachedState(StatePin(5), schema, changes.rows)
    assert cached.after(changes, 4, 5, wrote=False) is None      # the write was a replay's
    assert cached.after(changes, 4, 6, wrote=True) is None       # another commit came between
    assert cached.after(changes, 5, 6, wrote=True) is None       # the table had moved on before it


_KEY = st.one_of(st.none(), st.integers(0, 3))


@given(state=st.lists(st.tuples(_KEY, _KEY, st.integers(0, 9)), max_size=12,
                      unique_by=lambda r: r[:2]),
       changes=st.lists(st.tuples(_KEY, _KEY, st.one_of(st.none(), st.integers(0, 9)), st.booleans()),
                        max_size=12, unique_by=lambda c: c[:2]))
@settings(max_examples=200, deadline=None)
def test_arrow_changes_leave_the_rows_a_change_list_leaves(state, changes):
    """The Arrow table the driver keeps changes as the Python rows of the per-key path and the
    in-memory store do (:func:`apply_changes`): the same rows, the same deletes, null keys equal."""
    names = ["k", "j", "v"]
    schema = pa.schema([(n, pa.int64()) for n in names])
    change_rows = [dict(zip([*names, DELETE_FLAG], c)) for c in changes]
    table, deleted = apply_table_changes(
        pa.Table.from_pylist([dict(zip(names, r)) for r in state], schema=schema),
        pa.Table.from_pylist(change_rows, schema=schema.append(pa.field(DELETE_FLAG, pa.bool_()))), ["k", "j"])
    rows, listed_deleted = apply_changes(state, names, change_rows, ["k", "j"])
    assert sorted(map(tuple, (r.values() for r in table.to_pylist())), key=str) == sorted(rows, key=str)
    assert deleted == listed_deleted


def test_small_batch_settings_reach_the_streaming_querys_own_session(spark, tmp_path):
    """In ``foreachBatch`` the batch's DataFrame belongs to the query's clone of the session:
    the small-batch settings must be set (and put back) there too."""
    raw = str(tmp_path / "raw")
    for rows in BATCHES[:3]:
        spark.createDataFrame(rows, SCHEMA).coalesce(1).write.format("delta").mode("append").save(raw)
    seen, current = [], {}
    op = SparkWindowOperator.on_delta(spark, tumbling_spec(), "op", str(tmp_path / "state"),
                                      fault_injection=lambda stage: seen.append(
                                          (stage, current["session"].conf.get("spark.sql.adaptive.enabled"))))

    def each_batch(df, batch_id):
        current["session"] = df.sparkSession
        op.process_batch(df, batch_id)
        seen.append(("after_batch", df.sparkSession.conf.get("spark.sql.adaptive.enabled")))

    spark.conf.set("spark.sql.adaptive.enabled", "true")
    try:
        query = (spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(raw).writeStream
                 .foreachBatch(each_batch).option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", "false")
    assert current["session"] is not spark                      # the query's own session
    outputs = [value for stage, value in seen if stage == "after_outputs"]
    assert outputs == ["true", "false", "false"]                 # the first batch: the session's settings
    assert {value for stage, value in seen if stage == "after_batch"} == {"true"}


def test_scoped_settings_put_back_a_session_named_twice(spark):
    """Two Python objects of one session are one session: the setting goes back to what it was."""
    from pyspark.sql import SparkSession
    from windowing.spark.input.batch_settings import ScopedSettings
    twin = SparkSession(spark.sparkContext, spark._jsparkSession)
    before = spark.conf.get("spark.sql.shuffle.partitions")
    scoped = ScopedSettings(spark, twin)
    scoped.set({"spark.sql.shuffle.partitions": "7"})
    assert twin.conf.get("spark.sql.shuffle.partitions") == "7"
    scoped.restore()
    assert spark.conf.get("spark.sql.shuffle.partitions") == before


def test_a_batch_that_dies_before_its_progress_commit_wrote_no_state(spark, tmp_path, tumbling_alone):
    """With the state in the driver a batch's changes go into its progress row: a batch that dies
    before that commit left the windows table as it was, and its replay gives the same tables."""
    armed = []

    def die_once(stage: str) -> None:
        if stage == "before_progress" and armed:
            armed.clear()
            raise RuntimeError("killed")
    op = SparkWindowOperator.on_delta(spark, tumbling_spec(), "op", str(tmp_path / "replay"), fault_injection=die_once)
    for b, rows in enumerate(BATCHES):
        if b == 2:
            version = delta_lake_io.latest_version(spark, op.store.windows_path)
            armed.append(True)
            with pytest.raises(RuntimeError, match="killed"):
                op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
            assert delta_lake_io.latest_version(spark, op.store.windows_path) == version
        op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
    assert _tables(spark, op) == tumbling_alone


# Both limits compact the same batches: after two batches by the number of batches; by the logged
# rows, for the global spec's state changes of 2 and 3 rows (batches 0, 1) and 3 (batch 2), at 7.
@pytest.mark.parametrize("spec_of, batches_logged, rows_logged",
                         [(tumbling_spec, 2, None), (global_count_spec, 10, 7)], ids=["tumbling", "global"])
def test_logged_changes_are_compacted_into_the_windows_table(spark, tmp_path, monkeypatch, log_batches, spec_of,
                                                             batches_logged, rows_logged):
    """Two batches log their changes, the third compacts them into the table, and so on; the end
    of the input compacts too. After every batch the committed state equals that of an operator
    that writes the table every batch, and after each compaction the table alone equals it."""
    if rows_logged is not None:
        monkeypatch.setattr(state_log, "COMPACT_AFTER_ROWS", rows_logged)
    written = SparkWindowOperator.on_delta(spark, spec_of(), "op", str(tmp_path / "written"))
    logged = SparkWindowOperator.on_delta(spark, spec_of(), "op", str(tmp_path / "logged"))
    logged_from, table_moved = [], []

    def both(run) -> None:
        log_batches(0)
        run(written)
        before = delta_lake_io.latest_version(spark, logged.store.windows_path)
        log_batches(batches_logged)
        run(logged)
        last = logged.last_progress()
        logged_from.append(last[state_log.LOGGED_FROM])
        table_moved.append(delta_lake_io.latest_version(spark, logged.store.windows_path) != before)
        assert sorted(logged.store.open_windows()) == sorted(written.store.open_windows())
        assert json.loads(last["metrics"]) == json.loads(written.last_progress()["metrics"])
        if last[state_log.LOGGED_FROM] is None:
            assert _table_rows(spark, logged) == _table_rows(spark, written)

    for b, rows in enumerate(BATCHES):
        both(lambda op: op.process_batch(spark.createDataFrame(rows, SCHEMA), b))
    both(lambda op: op.flush(len(BATCHES)))
    assert logged_from == [0, 0, None, 3, 3, None]
    assert table_moved[1:] == [False, True, False, False, True]     # batch 0 created the table
    assert logged.last_progress()["watermark_ms"] == MAX_TIMESTAMP_MS


def test_a_new_process_folds_the_logged_changes_into_what_it_reads(spark, tmp_path, monkeypatch, log_batches,
                                                                     tumbling_alone):
    log_batches(10)
    root = tmp_path / "restarted"
    first = _run(spark, root, tumbling_spec(), BATCHES[:3], True, monkeypatch)
    assert first.last_progress()[state_log.LOGGED_FROM] == 0            # three batches logged
    second = _run(spark, root, tumbling_spec(), BATCHES[3:], True, monkeypatch, first_batch=3)
    assert _tables(spark, second) == tumbling_alone


@pytest.mark.parametrize("spec_of, reference", [(tumbling_spec, "tumbling_alone"), (global_count_spec, "global_read")],
                         ids=["tumbling", "global"])
def test_a_state_too_large_for_the_driver_writes_the_logged_changes_with_its_own(spark, tmp_path, monkeypatch,
                                                                                 log_batches, spec_of, reference,
                                                                                 request):
    """Batches log while the state is in the driver; a process whose state does not fit reads the
    table with the logs folded in and writes them into the table with its own batch's changes; its
    tables are those of an uninterrupted run (the module's, whose equality of kept and read state
    the tests above check)."""
    log_batches(10)
    root = tmp_path / "grown"
    _run(spark, root, spec_of(), BATCHES[:3], True, monkeypatch)
    grown = _run(spark, root, spec_of(), BATCHES[3:], False, monkeypatch, first_batch=3)
    assert _tables(spark, grown) == request.getfixturevalue(reference)
    assert grown.last_progress()[state_log.LOGGED_FROM] is None
    assert _table_rows(spark, grown) == sorted(map(repr, grown.store.open_windows()))


@pytest.mark.parametrize("value", ["-1", "ten", "2.5"])
def test_a_bad_log_setting_names_itself_and_the_value(spark, value):
    spark.conf.set(LOG_BATCHES_SETTING, value)
    try:
        with pytest.raises(ValueError, match=rf"{LOG_BATCHES_SETTING} = '{value}'"):
            state_log.compact_after_batches(spark)
    finally:
        spark.conf.unset(LOG_BATCHES_SETTING)


def test_a_first_batch_too_large_for_the_driver_is_written_from_delta_and_not_kept(spark, tmp_path, monkeypatch,
                                                                                   tumbling_alone):
    """The first batch reads an empty table (kept in the driver) but changes more rows than the
    driver keeps (3 windows, at most 2 kept): it is written as from Delta, and no later batch
    keeps the state (a large backfill's state must not come back through the driver)."""
    grown = _run(spark, tmp_path / "large", tumbling_spec(), BATCHES, False, monkeypatch, max_rows=2)
    assert _tables(spark, grown) == tumbling_alone
    assert grown.last_progress()[state_log.LOGGED_FROM] is None


def _spark_jobs(spark) -> int:
    """Spark jobs this JVM started so far (the scheduler's next job id)."""
    next_id = spark.sparkContext._jsc.sc().dagScheduler().nextJobId()
    return int(next_id if isinstance(next_id, int) else next_id.get())


@pytest.fixture
def delta_reads(monkeypatch):
    """The paths the stores read Delta tables at (state at a version, and the progress table:
    through Delta or from its commits' files)."""
    paths = []
    read_as_of, newest_rows = delta_lake_io.read_as_of, delta_lake_io.newest_rows

    def reading_as_of(spark, path, version):
        paths.append(path)
        return read_as_of(spark, path, version)

    def reading_newest(table, column):
        paths.append("progress")
        return newest_rows(table, column)

    def reading_batch_files(spark, found, batches):   # the progress rows, from their commits' files
        paths.append("progress")
        return read_batch_files(spark, found, batches)
    read_batch_files = delta_lake_io.read_batch_files
    monkeypatch.setattr(delta_lake_io, "read_as_of", reading_as_of)
    monkeypatch.setattr(delta_lake_io, "newest_rows", reading_newest)
    monkeypatch.setattr(delta_lake_io, "read_batch_files", reading_batch_files)
    return paths


def test_the_next_store_in_the_process_reads_nothing_back(spark, tmp_path, delta_reads, tumbling_alone):
    """A new operator of the same state in the same process (the next ``run_stream`` call) takes
    the last progress row and the window state the last commit left, reading neither from Delta
    and starting no Spark job, and goes on to the same tables."""
    state_cache.forget_all()
    root = str(tmp_path / "next")
    first = SparkWindowOperator.on_delta(spark, tumbling_spec(), "op", root)
    for b in (0, 1, 2):
        first.process_batch(spark.createDataFrame(BATCHES[b], SCHEMA), b)
    kept = first.store._cached
    delta_reads.clear()
    jobs = _spark_jobs(spark)
    second = SparkWindowOperator.on_delta(spark, tumbling_spec(), "op", root)
    last = second.last_progress()
    state = second.store.read_windows(_committed_pin(second))
    assert (_spark_jobs(spark) - jobs, delta_reads) == (0, [])
    assert last["batch_id"] == 2 and second.store._cached is kept
    assert sorted(tuple(r) for r in state.collect()) == sorted(_tuples(spark, kept))
    for b in (3, 4):
        second.process_batch(spark.createDataFrame(BATCHES[b], SCHEMA), b)
    assert second.store.windows_path not in delta_reads and "progress" not in delta_reads
    assert _tables(spark, second) == tumbling_alone


@pytest.mark.parametrize("other", ["commit", "reset"])
def test_what_the_process_kept_is_not_used_after_another_processs_commit(spark, tmp_path, delta_reads, other,
                                                                        tumbling_alone):
    """Another process commits a batch (or resets the state and commits batches up to the same
    progress version) after this process kept what it knew: the next store of this process reads
    Delta, and the tables come out as one writer's."""
    state_cache.forget_all()
    root = str(tmp_path / other)
    mine = SparkWindowOperator.on_delta(spark, tumbling_spec(), "op", root)
    for b in (0, 1):
        mine.process_batch(spark.createDataFrame(BATCHES[b], SCHEMA), b)
    stale = state_cache._KEPT[mine.store.progress_path]
    assert stale.cached is not None and stale.last["batch_id"] == 1
    theirs = SparkWindowOperator.on_delta(spark, tumbling_spec(), "op", root, reset_state=other == "reset")
    for b in ((2,) if other == "commit" else (0, 1)):
        theirs.process_batch(spark.createDataFrame(BATCHES[b], SCHEMA), b)
    if other == "reset":   # the same progress version as the kept entry's, of another table
        assert delta_lake_io.table_identity(spark, mine.store.progress_path)[1] == stale.table[1]
    state_cache.keep(mine.store.progress_path, stale)      # their process's entry is not in this one
    delta_reads.clear()
    after = SparkWindowOperator.on_delta(spark, tumbling_spec(), "op", root)
    assert after.last_progress()["writer_id"] == theirs.writer_id
    assert "progress" in delta_reads and after.store._cached is not stale.cached
    for b in range(after.last_progress()["batch_id"] + 1, len(BATCHES)):
        after.process_batch(spark.createDataFrame(BATCHES[b], SCHEMA), b)
    # the state read from Delta: the windows table, or (a table still as created) only the changes
    # the progress rows logged, read after the last progress row
    assert after.store.windows_path in delta_reads or delta_reads.count("progress") >= 2
    tables = _tables(spark, after)
    if other == "reset":      # a reset keeps the outputs: batches 0-1 are in them twice
        tables = {k: v for k, v in tables.items() if k in ("windows", "progress")}
    assert tables == {k: v for k, v in tumbling_alone.items() if k in tables}


def test_a_state_larger_than_the_driver_keeps_is_not_kept_for_the_process(spark, tmp_path, monkeypatch,
                                                                          tumbling_alone):
    """The driver keeps at most MAX_CACHED_STATE_ROWS state rows per operator: a larger state
    (3 windows over a bound of 2) is read from Delta by every store, the process keeps none of it."""
    grown = _run(spark, tmp_path / "large", tumbling_spec(), BATCHES, False, monkeypatch, max_rows=2)
    assert state_cache._KEPT[grown.store.progress_path].cached is None
    with monkeypatch.context() as patch:
        patch.setattr(stores, "MAX_CACHED_STATE_ROWS", 2)
        again = SparkWindowOperator.on_delta(spark, tumbling_spec(), "op", str(tmp_path / "large"))
        again.store.read_windows(_committed_pin(again))
        assert again.store._cached is None and not again.store.state_in_driver
    assert _tables(spark, again) == tumbling_alone
