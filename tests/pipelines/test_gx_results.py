"""The GE validation results store keeps the newest results; older ones move to an archive beside it.

Files only (no Spark, no GE): the store's layout is GE's, ``<suite>/<run name>/<run time>/<batch>.json``.
``tests/pipelines/test_quality.py`` checks the same on a real project after a real validation.
"""
from __future__ import annotations

import pytest

from pipelines.gx_results import archive_dir, archive_older_results


def _store(root, run_times: dict[str, list[str]]):
    """A results store with one result per (suite, run time); suites may be dotted into folders."""
    store = root / "validations"
    for suite, times in run_times.items():
        for run_time in times:
            path = store / suite / "job.stream.batch-0" / run_time / "delta_tables-x.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{suite} {run_time}")
    (store / ".ge_store_backend_id").write_text("store id")     # GE's own file stays where it is
    return store


def _results(folder) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*.json")}


def test_the_newest_results_stay_and_the_older_move_with_their_paths_and_contents(tmp_path):
    times = ["20261129T090000.000001Z", "20261129T090100.000001Z", "20261129T090200.000001Z",
             "20261129T090300.000001Z"]
    store = _store(tmp_path, {"op/raw_events": times, "op/window_results": times[1:]})
    before = _results(store)

    assert archive_older_results(store, keep=3) == 4
    archive = archive_dir(store)
    kept, moved = _results(store), _results(archive)
    assert kept | moved == before and not kept & moved
    assert {p.split("/")[3] for p in kept} == {times[3], times[2]}              # the newest three results
    assert len(kept) == 3
    for path in moved:
        assert (archive / path).read_text() == f"{'/'.join(path.split('/')[:2])} {path.split('/')[3]}"
    # the folders the moves emptied are gone: GE walks every folder of the store
    assert not (store / "op/raw_events/job.stream.batch-0" / times[0]).exists()
    assert not any(p.is_dir() and not any(p.iterdir()) for p in store.rglob("*"))
    assert (store / ".ge_store_backend_id").read_text() == "store id"

    assert archive_older_results(store, keep=3) == 0                           # nothing more to move
    assert archive_older_results(store, keep=10) == 0


@pytest.mark.parametrize("keep", [0, -5])
def test_a_store_must_keep_a_result(tmp_path, keep):
    store = _store(tmp_path, {"s": ["20261129T090000.000001Z"]})
    with pytest.raises(ValueError, match=f"keep={keep}"):
        archive_older_results(store, keep=keep)
    assert len(_results(store)) == 1
