"""Writers racing on the same batches: each in its own thread, all released together on every batch."""
from __future__ import annotations

import threading
from typing import Callable, Iterable

from windowing.spark import ConcurrentWriterError

REFUSED = "refused"
"""The outcome of a write that raised ConcurrentWriterError naming its batch."""


def race(names: Iterable[str], batches: Iterable[int],
         prepare: Callable[[str, int], Callable[[], str]]) -> dict[str, dict[int, str]]:
    """Each writer ``name`` runs, for every batch ``b`` in turn, ``prepare(name, b)`` (work before the start
    line: building its frames), waits for the others, then calls what ``prepare`` returned.

    Returns per writer and batch what the call returned (e.g. ``"committed"``), :data:`REFUSED` for a
    ConcurrentWriterError naming the batch, or the repr of any other error (for the caller's assertion).
    """
    names, batches = list(names), list(batches)
    barrier, outcomes = threading.Barrier(len(names)), {name: {} for name in names}

    def writer(name: str) -> None:
        for b in batches:
            write = prepare(name, b)
            barrier.wait()
            try:
                outcomes[name][b] = write()
            except ConcurrentWriterError as error:
                outcomes[name][b] = REFUSED if f"batch {b}" in str(error) else str(error)
            except Exception as error:      # noqa: BLE001 - reported by the caller's assertion
                outcomes[name][b] = repr(error)

    threads = [threading.Thread(target=writer, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes
