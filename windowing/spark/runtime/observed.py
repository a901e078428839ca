"""Reading a :class:`~pyspark.sql.Observation` without waiting forever on an action that never ran."""
from __future__ import annotations

import time

from pyspark.sql import Observation


def observed_metrics(observation: Observation, wait_s: float = 10.0) -> dict | None:
    """An observation's metrics, or None if they have not come within ``wait_s``.

    Spark fills them when the action that computed the observed rows ends
    (synchronously in Spark 4); ``Observation.get`` would wait forever for an
    action that never computed them, so this polls the JVM side's future.
    """
    future = observation._jo.future()   # set by DataFrame.observe
    deadline = time.monotonic() + wait_s
    while not future.isCompleted():
        if time.monotonic() > deadline:
            return None
        time.sleep(0.01)
    return observation.get
