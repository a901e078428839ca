"""The demo's pictures and pages in a real browser: the full timeline, the Data Docs and the quality report.

Headless Chromium (the machine's, driven by Playwright) opens each page from disk, and a request
to anything but a local file is a failure, as is a console error (a missing file logs one); the
checks read the browser's own layout
(``getBoundingClientRect``): no page logs a console error or asks for a missing file, no two
labels of a picture cover each other, a pane label stays inside its plot, every label inside its
picture. Screenshots go to the test's temporary folder. The pages are the demo's (one run per test
process, shared with the demo's own test: ``demo_run`` in ``tests/conftest.py``).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.xdist_group("demo")]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1400, "height": 900}

LABEL_PROBLEMS = """() => {
  const problems = [], slack = 0.5;
  const inside = (b, f) => b.left >= f.left - slack && b.right <= f.right + slack
                           && b.top >= f.top - slack && b.bottom <= f.bottom + slack;
  for (const picture of document.querySelectorAll('svg')) {
    const frame = picture.getBoundingClientRect();
    const plots = [...picture.querySelectorAll('rect.plot')].map(r => r.getBoundingClientRect());
    const boxes = [];
    for (const label of picture.querySelectorAll('text')) {
      const b = label.getBoundingClientRect();
      if (!b.width || !b.height) continue;
      const name = (label.firstChild && label.firstChild.nodeType === 3 ? label.textContent : label.lastChild.textContent).trim();
      if (!inside(b, frame)) problems.push('outside its picture: ' + name);
      if (label.classList.contains('pane-label') && !plots.some(p => inside(b, p)))
        problems.push('pane label outside its plot: ' + name);
      boxes.push([b, name]);
    }
    boxes.sort((x, y) => x[0].left - y[0].left);
    for (let i = 0; i < boxes.length; i++) {
      const [a, an] = boxes[i];
      for (let j = i + 1; j < boxes.length && boxes[j][0].left < a.right - slack; j++) {
        const [c, cn] = boxes[j];
        if (a.top < c.bottom - slack && c.top < a.bottom - slack) problems.push('"' + an + '" overlaps "' + cn + '"');
      }
    }
  }
  return problems;
}"""


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no chromium on this machine (apt-get install chromium): the pages are not checked in a browser")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def pages(spark, demo_run, tmp_path_factory, browser):
    """The demo's full timeline (every key's rows, the default panels), Data Docs and quality report."""
    from pipelines.job import load_job
    from pipelines.quality import data_docs_dir
    from pipelines.visual.job_timeline import load_timeline
    from pipelines.visual.timeline import write_timeline
    job = load_job("jobs/purchases_per_minute.toml", root=demo_run["root"])
    _, timeline = write_timeline(load_timeline(spark, job), tmp_path_factory.mktemp("timeline") / "timeline.svg")
    docs = Path(data_docs_dir(job))
    return {"job": job, "timeline": timeline, "docs": docs, "report": Path(demo_run["summary"]["quality_report"])}


class Visit:
    """A page opened from disk; what it logged, failed to load or asked of the network."""

    def __init__(self, browser, path: Path, shots: Path):
        self.page = browser.new_page(viewport=VIEWPORT)
        self.problems: list[str] = []
        self.page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}")
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.problems.append(f"not loaded: {r.url} ({r.failure})"))
        # (a route that let file requests through would hide a missing file's error: requests are only watched)
        self.page.on("request", lambda r: None if r.url.startswith(("file:", "data:", "about:"))
                     else self.problems.append(f"remote request: {r.url}"))
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_load_state("networkidle")
        self.page.screenshot(path=str(shots / f"{path.stem}.png"), full_page=True)

    def labels_in_place(self) -> list[str]:
        return self.page.evaluate(LABEL_PROBLEMS)

    def close(self):
        self.page.close()


def test_the_full_demo_timeline_reads(browser, pages, tmp_path):
    visit = Visit(browser, pages["timeline"], tmp_path)
    try:
        assert visit.problems == []
        assert visit.labels_in_place() == []
        panel_titles = visit.page.locator("svg text.panel-title").all_text_contents()
        assert panel_titles[0] == "quarantined rows without a key"     # the demo's rows with a null user
        assert len(panel_titles) == 13                                # the 12 busiest of 30 users, then a note
        assert "18 more key(s) are not drawn" in visit.page.locator("svg text.note").text_content()
        pane_labels = visit.page.locator("svg text.pane-label").count()
        panes = visit.page.locator("svg circle.pane").count()
        assert 0 < pane_labels <= panes
        assert visit.page.locator("details.guide").is_visible()
        assert visit.page.locator("svg text.axis-title", has_text="event time (UTC)").count() == 13
    finally:
        visit.close()


def test_data_docs_open_whole_and_say_severity(browser, pages, tmp_path):
    docs = pages["docs"]
    index = Visit(browser, docs / "index.html", tmp_path)
    try:
        assert index.problems == []
        link = index.page.locator("a", has_text="Data quality over time")
        assert (docs / link.get_attribute("href")).is_file()
        statuses = index.page.locator("td .offline-status").all_text_contents()
        # the raw table's null user and null event time fail WARNING expectations only
        assert any("passed with warnings" in s for s in statuses) and not any("failed" in s for s in statuses)
        assert index.labels_in_place() == []
    finally:
        index.close()
    (raw_page,) = [p for p in (docs / "validations").rglob("*.html") if "purchases_1m/raw_events/" in p.as_posix()]
    result = Visit(browser, raw_page, tmp_path)
    try:
        assert result.problems == []                          # the favicon too
        overview = result.page.locator(".alert", has_text="Overview")
        assert "passed with warnings" in overview.text_content()
        # the rows of the failed WARNING expectations (null user, null event time) say so, none is a red cross
        assert [s.strip() for s in result.page.locator("td .offline-status").all_text_contents()] == ["warning"] * 2
        assert result.page.locator("td i.fa-times").count() == 0
        heading_px = result.page.evaluate("parseFloat(getComputedStyle(document.querySelector('h5')).fontSize)")
        assert heading_px >= 14
        assert result.page.get_by_text("(as epoch ms) is between").count() == 1   # the event-time bounds as dates
        more = result.page.locator("a", has_text="Show more info")
        body = result.page.locator(more.get_attribute("href"))
        assert not body.is_visible()
        more.click()
        assert body.is_visible()
    finally:
        result.close()


def test_quality_report_fills_the_page_for_stream_and_backfill(browser, pages, tmp_path):
    visit = Visit(browser, pages["report"], tmp_path)
    try:
        assert visit.problems == []
        assert visit.labels_in_place() == []
        width = visit.page.evaluate("document.body.getBoundingClientRect().width")
        charts = visit.page.locator("svg.chart")
        assert charts.count() >= 7        # stream and backfill: rows, reasons, lag; then the validation runs
        for i in range(charts.count()):
            assert charts.nth(i).bounding_box()["width"] >= 0.9 * min(width, 1400)
        headings = visit.page.locator("h2").all_text_contents()
        assert any(h.startswith("Stream (operator purchases_1m)") for h in headings)
        assert any(h.startswith("Backfill (operator purchases_1m_backfill)") for h in headings)
        texts = " ".join(visit.page.locator("svg text").all_text_contents())
        assert "e+" not in texts and re.search(r"lag \((ms|seconds|minutes|hours|days)\)", texts)
    finally:
        visit.close()
