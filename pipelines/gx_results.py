"""The validation results a GE project keeps in its store: the newest; older ones in an archive beside it.

Great Expectations lists its whole validation results store, parsing every result's
run time, several times each time it builds Data Docs, and every validation builds
them: a store that keeps every result makes each validation of a stream slower than
the one before (about a millisecond per stored result, a second per 1,000, and a stream
of one-minute batches stores over 11,000 a day). :func:`archive_older_results` moves all
but the newest results out of the store into ``<store>_archive`` (the same relative
paths, JSON as GE wrote it), where GE does not look, and each validation's cost stays what
the store's newest results cost. GE's next Data Docs build then drops the pages of the moved
results from the site (it removes pages whose result is no longer in the store); the JSON stays
in the archive. How many a job keeps: ``[quality] gx_results_kept`` (default 200, 25 stream
batches of the eight default suites).
"""
from __future__ import annotations

import os
from pathlib import Path

ARCHIVE_SUFFIX = "_archive"


def archive_dir(store_dir: Path) -> Path:
    """Where :func:`archive_older_results` moves the results of ``store_dir``."""
    return store_dir.with_name(store_dir.name + ARCHIVE_SUFFIX)


def archive_older_results(store_dir: Path, keep: int) -> int:
    """Move every result of the store at ``store_dir`` but the newest ``keep`` to :func:`archive_dir`;
    returns how many moved.

    A result is ``<suite>/<run name>/<run time>/<batch>.json``, its run time GE's
    ``%Y%m%dT%H%M%S.%fZ`` (UTC), which sorts as time. Folders a move empties go too (GE walks
    them all). Another process validating into the same project at the same time may find a
    result it listed gone; GE then skips it in the index.

    Raises:
        ValueError: ``keep`` is below 1.
    """
    if keep < 1:
        raise ValueError(f"keep={keep}: the store must keep at least one validation result")
    results = sorted(store_dir.rglob("*.json"), key=lambda path: (path.parent.name, str(path)))
    older = results[:-keep]
    archive = archive_dir(store_dir)
    for path in older:
        target = archive / path.relative_to(store_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        _remove_empty_folders(path.parent, store_dir)
    return len(older)


def _remove_empty_folders(folder: Path, store_dir: Path) -> None:
    """``folder`` and its parents up to (not including) ``store_dir``, while empty."""
    while folder != store_dir and store_dir in folder.parents:
        try:
            folder.rmdir()
        except OSError:        # not empty (or already gone with another process's move)
            return
        folder = folder.parent
