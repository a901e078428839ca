"""Pictures and pages of a job's tables: the window timeline, data quality over time, offline Data Docs.

The end-to-end test streams the session example (early firings, a late bridge that merges two
sessions, a row beyond the allowed lateness) batch by batch into Delta, validates it with Great
Expectations, then reads the picture and the pages back and compares them with the tables. Pages
are opened in headless Chromium inside a network namespace with no network at all.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from pipelines.visual.charts import Series, duration_unit, line, number_text, stacked_bars
from pipelines.visual.timeline import (PLOT_LEFT_PX, PLOT_RIGHT_PX, _Scale, label_width_px, pane_labels,
                                       render_page, render_svg, write_timeline)
from pipelines.visual.timeline_arrivals import arrival_batches
from pipelines.visual.timeline_marks import (EVENT, LATE_ROW, MAX_MS, MIN_MS, NULL_KEY, QUARANTINED_ROW, BatchRow,
                                             PairMark, PaneMark, RowMark, Timeline)

pytestmark = pytest.mark.xdist_group("visual")  # the module-scoped stream: one test process

REMOTE_RESOURCE = re.compile(r"<(?:script|img|iframe|link)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.IGNORECASE)
CSS_REMOTE_URL = re.compile(r"url\(\s*['\"]?(?:https?:)?//", re.IGNORECASE)


def _count(svg: str, css_class: str) -> int:
    return len(re.findall(rf'class="{re.escape(css_class)}"', svg))


def _offline_browser():
    """Chromium in a network namespace without network (None when either is missing)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    unshare = shutil.which("unshare")
    if not chromium or not unshare or subprocess.run([unshare, "--net", "true"], capture_output=True).returncode:
        return None
    return [unshare, "--net", chromium, "--headless", "--no-sandbox", "--disable-gpu"]


def _dom(browser, page: Path) -> str:
    done = subprocess.run(browser + ["--virtual-time-budget=3000", "--dump-dom", page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


# ---------------------------------------------------------------- without Spark
def _batches():
    return (BatchRow(0, MIN_MS, 19_999, 1_000, 20_000), BatchRow(1, 19_999, 149_999, 2_000, 150_000),
            BatchRow(2, 149_999, 149_999, 3_000, 150_000))


def test_arrival_batch_is_the_first_batch_at_or_after_the_commit():
    batches = _batches()
    assert arrival_batches([500, 1_000, 1_001, 2_500, 9_000], [0] * 5, batches) == [0, 0, 1, 2, None]


def test_arrival_batch_of_a_backfill_follows_the_largest_event_time_seen():
    # every commit precedes the first batch: batches were cut by event time
    batches = _batches()
    assert arrival_batches([10, 10, 10], [5_000, 100_000, 150_000], batches) == [0, 1, 1]


def test_picture_has_one_mark_per_pane_row_and_superseded_session():
    panes = (PaneMark("alice", 0, 50_000, 0, "EARLY", 0, False, "items=4"),
             PaneMark("alice", 0, 50_000, 1, "ON_TIME", 1, False, "items=4"),
             PaneMark("alice", 0, 110_000, 2, "LATE", 2, False, "items=12", ((0, 50_000), (70_000, 110_000))),
             PaneMark("bob", None, None, 1, "ON_TIME", 0, True, "n=1"))
    rows = (RowMark("alice", 0, 0, EVENT), RowMark("alice", 45_000, 2, EVENT),
            RowMark("dave", -200_000, 2, LATE_ROW, "late_beyond_allowed_lateness"),
            RowMark("bob", None, 1, QUARANTINED_ROW, "null_event_time"))
    picture = render_svg(Timeline("t", _batches(), rows, panes))
    assert {t: _count(picture, f"pane {t}") for t in ("EARLY", "ON_TIME", "LATE")} == \
        {"EARLY": 1, "ON_TIME": 2, "LATE": 1}
    assert (_count(picture, "event"), _count(picture, "late-row"), _count(picture, "quarantined-row")) == (2, 1, 1)
    assert _count(picture, "superseded") == 2
    assert _count(picture, "watermark") == 3          # one step line per key panel
    assert re.search(r'class="pane LATE" data-key="alice" data-batch="2"', picture)


def test_pane_labels_fit_apart_inside_the_plot():
    """Sliding windows every 10 s over 20 minutes: labels only where they fit, none on another or past the plot."""
    panes = [PaneMark("k", s, s + 60_000, 0, "ON_TIME", 0, False, f"items={s // 1000}, purchases=12, max=5")
             for s in range(0, 1_200_000, 10_000)]
    scale = _Scale(0, 1_260_000)
    placed = pane_labels(panes, scale)
    assert 10 < len(placed) < len(panes)          # some fit, not all: the rest are on hover only
    boxes = sorted((left, left + label_width_px(label)) for _, label, left in placed)
    assert all(PLOT_LEFT_PX < a and b < PLOT_RIGHT_PX for a, b in boxes)
    assert all(b1 < a2 for (_, b1), (a2, _) in zip(boxes, boxes[1:]))
    few = pane_labels(panes[::40], scale)         # room enough: every aggregate is written
    assert [label for _, label, _ in few] == [p.values for p in panes[::40]]


def test_watermark_infinities_are_written_not_drawn():
    batches = (BatchRow(0, MIN_MS, MIN_MS, 1_000, None), BatchRow(1, MIN_MS, 20_000, 2_000, 30_000),
               BatchRow(2, 20_000, MAX_MS, 3_000, 30_000))
    picture = render_svg(Timeline("t", batches, (RowMark("a", 30_000, 1, EVENT),), ()))
    (path,) = re.findall(r'<path[^>]*class="watermark"[^>]*>', picture)
    xs = [float(x) for x in re.findall(r"[ML]([0-9.]+),", re.search(r' d="([^"]+)"', path).group(1))]
    assert xs and all(PLOT_LEFT_PX < x < PLOT_RIGHT_PX for x in xs)      # only the finite watermark, 20 s
    assert "wm: none yet" in picture and "wm: end of input" in picture


def test_timeline_draws_the_busiest_keys_and_the_null_key_apart():
    batches = (BatchRow(0, MIN_MS, 1_000, 1_000, 2_000),)
    rows = tuple(RowMark(f"k{i:02d}", 1_000, 0, EVENT) for i in range(15) for _ in range(i + 1))
    rows += (RowMark(NULL_KEY, None, 0, QUARANTINED_ROW, "null_key"),)
    timeline = Timeline("t", batches, rows, ())
    picture = render_svg(timeline, max_keys=3)
    titles = re.findall(r'class="panel-title">([^<]+)<', picture)
    assert titles == ["quarantined rows without a key", "key k12", "key k13", "key k14"]
    assert "12 more key(s) are not drawn" in picture and "--max-keys 0" in picture
    assert "Not drawn: k00, k01" in render_page(timeline, picture, max_keys=3)
    assert len(re.findall(r'class="panel-title"', render_svg(timeline, max_keys=0))) == 16


def test_timeline_output_must_be_svg(tmp_path):
    with pytest.raises(ValueError, match=r"must name an \.svg file"):
        write_timeline(Timeline("t", (), (), ()), tmp_path / "t.png")


def test_charts_carry_their_values():
    bars = stacked_bars("rows", ["b0", "b1"], [Series("in windows", (3, 0), "#2ca02c"),
                                              Series("late", (1, 2), "#ff7f0e")])
    values = re.findall(r'data-series="([^"]+)" data-category="([^"]+)" data-value="([^"]+)"', bars)
    assert sorted(values) == [("in windows", "b0", "3"), ("late", "b0", "1"), ("late", "b1", "2")]
    lag = line("lag", ["b0", "b1", "b2"], [Series("lag", (1.5, None, 3.0), "#1f77b4")], "seconds")
    assert _count(lag, "point") == 2


def test_axis_values_are_written_out_in_a_unit_for_their_range():
    assert duration_unit(5e6) == ("days", 86_400) and duration_unit(90) == ("seconds", 1)
    assert duration_unit(0.2) == ("ms", 0.001) and duration_unit(3_000) == ("minutes", 60)
    assert number_text(1_500_000.0) == "1,500,000" and number_text(0.125) == "0.125"
    chart = line("lag", ["b0", "b1"], [Series("lag", (4.9e6, 5.2e6), "#000")], "seconds")
    assert "e+" not in chart and ("5,000,000" in chart or "6,000,000" in chart)


def test_offline_templates_reference_nothing_remote():
    """Every GX template and style, as the offline views load it, names no remote script, stylesheet or image."""
    from jinja2 import ChoiceLoader, Environment, PackageLoader
    from pipelines.visual.gx_offline import OfflineTemplateLoader
    package = ChoiceLoader([PackageLoader("great_expectations", "render/view/templates"),
                            PackageLoader("great_expectations", "render/view/static/styles")])
    env = Environment(loader=OfflineTemplateLoader(package))
    names = package.list_templates()
    assert "index_page.j2" in names and "data_docs_default_styles.css" in names
    original = "".join(package.get_source(env, n)[0] for n in names)
    assert REMOTE_RESOURCE.search(original) and CSS_REMOTE_URL.search(original)    # what GX ships
    for name in names:
        source = env.loader.get_source(env, name)[0]
        assert not REMOTE_RESOURCE.search(source), name
        assert not CSS_REMOTE_URL.search(source), name
        assert "https://great-expectations-web-assets" not in source, name


def test_offline_views_compile_each_template_once_per_process():
    """The offline views share one bytecode cache (GX makes a view per page of every Data Docs build):
    a second view renders what the first compiled without compiling it, and a changed source is
    compiled again. (Measured on a fresh cache: the process's may hold the pages already.)"""
    from jinja2 import DictLoader
    from pipelines.visual.gx_offline import TEMPLATE_CODE, OfflinePageView, ProcessBytecodeCache

    def compiles(view, cache) -> list[str]:
        view.env.bytecode_cache = cache
        seen, compile_ = [], view.env.compile
        view.env.compile = lambda source, name=None, filename=None, *a, **k: (
            seen.append(name), compile_(source, name, filename, *a, **k))[1]
        return seen

    first, second = OfflinePageView(), OfflinePageView()
    assert first.env.bytecode_cache is TEMPLATE_CODE is second.env.bytecode_cache
    fresh = ProcessBytecodeCache()
    first_compiled, second_compiled = compiles(first, fresh), compiles(second, fresh)
    page = first.env.get_template("page.j2")
    assert "page.j2" in first_compiled
    again = second.env.get_template("page.j2")
    assert second_compiled == [], "the second view compiled again what the first had compiled"
    assert again.root_render_func.__code__.co_code == page.root_render_func.__code__.co_code

    def with_source(text: str):
        view = OfflinePageView()
        view.env.loader.own, view.env.loader.fallback = DictLoader({}), DictLoader({"changed.j2": text})
        return view, compiles(view, fresh)
    changed, changed_compiled = with_source("one {{ x }}")
    assert changed.env.get_template("changed.j2").render(x=1) == "one 1"
    other, other_compiled = with_source("two {{ x }}")
    assert other.env.get_template("changed.j2").render(x=1) == "two 1"
    assert changed_compiled == ["changed.j2"] and other_compiled == ["changed.j2"]


# ---------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def streamed(spark, tmp_path_factory):
    """The session example streamed in four arrivals, then validated (stream, last batch)."""
    from examples.demo import land
    from pipelines.drivers import run_stream
    from examples.sessions_demo import ARRIVALS, sessions_job
    root = tmp_path_factory.mktemp("visual")
    job = sessions_job(root)
    for _, rows in ARRIVALS:
        land(spark, rows, job.source_path)
        run_stream(spark, job, validate=False)
    return job


@pytest.mark.spark
@pytest.mark.slow
def test_timeline_shows_what_the_tables_hold(spark, streamed, tmp_path):
    from pipelines.visual.job_timeline import load_timeline
    job = streamed
    results = spark.read.format("delta").load(job.results_path).collect()
    late = spark.read.format("delta").load(job.late_path).collect()
    raw = spark.read.format("delta").load(job.source_path).count()
    timeline = load_timeline(spark, job)
    svg_path, html_path = write_timeline(timeline, tmp_path / "timeline.svg")
    picture = svg_path.read_text()
    assert Counter(r["timing"] for r in results) == Counter(
        {t: _count(picture, f"pane {t}") for t in ("EARLY", "ON_TIME", "LATE") if _count(picture, f"pane {t}")})
    assert _count(picture, "late-row") == len(late) == 1
    # no event_id in this job: every raw row is drawn as an input row, the late one also as a late row
    assert _count(picture, "event") == raw
    assert _count(picture, "superseded") == sum(len(r["supersedes"] or []) for r in results) == 2
    assert _count(picture, "watermark") == len({r["user_id"] for r in results} | {r["user_id"] for r in late})
    # arrival batches from the raw table's commits: alice's bridging click came with the third arrival
    bridge = [r for r in timeline.rows if r.kind == EVENT and r.key == "alice" and r.event_time_ms % 60_000 == 45_000]
    assert [r.batch_id for r in bridge] == [2]
    assert {r.batch_id for r in timeline.rows if r.kind == EVENT and r.key == "carol"} == {1, 3}
    only = load_timeline(spark, job, key="alice")
    assert only.keys() == ["alice"] and len(only.panes) == sum(r["user_id"] == "alice" for r in results)
    assert "<svg" in html_path.read_text()


@pytest.mark.spark
@pytest.mark.slow
def test_data_docs_and_quality_report_render_offline(spark, streamed, tmp_path):
    from pipelines.quality import data_docs_dir, validate_job
    from pipelines.visual.report import report_path, write_report
    job = streamed
    validate_job(spark, job, batch_id=3, run_kind="stream", suites=["window_results", "late_rows"])
    docs = Path(data_docs_dir(job))
    pages = list(docs.rglob("*.html"))
    assert len(pages) >= 3
    for page in pages:
        html = page.read_text()
        assert not REMOTE_RESOURCE.search(html), page
        assert not CSS_REMOTE_URL.search(html), page
    index = (docs / "index.html").read_text()
    assert "sessions_demo.stream.batch-3" in index and "__none__" not in index
    assert "quality_report.html" in index
    path = write_report(spark, job)
    assert path == report_path(job) and path.parent == docs
    report = path.read_text()
    from windowing.spark.state.stores import DeltaStore
    progress = DeltaStore(spark, job.operator_id, job.state_root).progress_path
    metrics = spark.read.format("delta").load(progress).collect()
    in_windows = {f"b{r['batch_id']}": json.loads(r["metrics"])["accepted_rows"] for r in metrics}
    drawn = dict(re.findall(r'data-series="in windows" data-category="(b\d+)" data-value="(\d+)"', report))
    assert {k: int(v) for k, v in drawn.items()} == {k: v for k, v in in_windows.items() if v}
    assert "expectations failed per validation run" in report and "sessions_demo" in report
    assert not REMOTE_RESOURCE.search(report)
    browser = _offline_browser()
    if browser is None:
        pytest.skip("no chromium or no network namespace here: the pages were checked for remote URLs only")
    dom = _dom(browser, docs / "index.html")
    table_rows = re.findall(r"<tr>", dom)
    assert len(table_rows) >= 3, dom[:2000]                    # the index lists the runs without JavaScript
    assert "sessions_demo.stream.batch-3" in dom
    assert "<svg" in _dom(browser, path)


@pytest.mark.airflow
def test_quality_dag_builds_the_report_after_each_validation_even_a_failed_one():
    import test_airflow_dags as airflow_tests     # sets up Airflow's home and DAGs folder for the test run
    dag = airflow_tests.dagbag().dags["purchases_per_minute_quality"]
    report = dag.get_task("report")
    assert report.upstream_task_ids == {"validate"}
    # none_skipped: the report runs after a failed validation too, and not when validation skipped
    # (nothing new to validate, so nothing new to draw).
    assert report.trigger_rule == "none_skipped"


def test_a_join_picture_tells_the_sides_apart_and_draws_a_pair_between_its_rows():
    rows = (RowMark("u1", 1_000, 0, EVENT, side="left"), RowMark("u1", 4_000, 0, EVENT, side="right"),
            RowMark("u1", -5_000, 1, LATE_ROW, "late", side="right"))
    pairs = (PairMark("u1", 1_000, 4_000, 0, "page=home, amount=5"),)
    picture = render_svg(Timeline("j", _batches()[:2], rows, (), pairs=pairs, two_inputs=True))
    assert re.findall(r'<circle [^>]*data-side="left"', picture) and re.findall(r'<rect [^>]*data-side="right"',
                                                                                picture)
    assert _count(picture, "pair") == 1 and 'data-left-time-ms="1000" data-right-time-ms="4000"' in picture
    assert "left input row" in picture and "right input row" in picture and "superseded session" not in picture
    with pytest.raises(ValueError, match="row mark side 'middle'"):
        RowMark("u1", 0, 0, EVENT, side="middle")
