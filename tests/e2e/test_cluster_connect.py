"""A Spark Connect client session (``spark.remote``) against the installed PySpark's Connect server.

The module starts the server through ``./dev connect up`` on a free port and stops it by PID.
What runs through Connect here: the session with the job's SQL settings, Delta reads and
writes by format, and the commit markers read through Delta's history. Delta's table API
needs Delta Connect's server plugin, which this Delta release does not publish (see
docs/cluster.md): the test pins that down, so the docs change when it does.

Run as a script (``python tests/e2e/test_cluster_connect.py REMOTE FOLDER OUT``) this file is
the client.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from suite_machine import services_group
from test_cluster import CLUSTER_TESTS, DEV, free_port

pytestmark = [CLUSTER_TESTS, pytest.mark.slow, pytest.mark.xdist_group(services_group(__file__))]


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    port = free_port()
    env = {**os.environ, "WINDOWING_SERVICES_DIR": str(tmp_path_factory.mktemp("services")),
           "SPARK_CONNECT_PORT": str(port)}
    try:
        done = subprocess.run([str(DEV), "connect", "up"], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        yield f"sc://127.0.0.1:{port}"
    finally:
        subprocess.run([str(DEV), "connect", "down"], env=env, capture_output=True, timeout=120)


def test_a_connect_session_writes_and_reads_delta_and_lacks_only_the_table_api(remote, tmp_path):
    out = tmp_path / "connect.json"
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    done = subprocess.run([sys.executable, __file__, remote, str(tmp_path / "tables"), str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-5000:]
    result = json.loads(out.read_text())
    assert result["connect"] and result["time_zone"] == "UTC" and result["shuffle_partitions"] == "3"
    assert result["rows"] == 5
    assert result["table_api"].startswith("unsupported"), result["table_api"]


def client(remote: str, folder: str, out: str) -> None:
    from windowing.spark.runtime.spark_session import get_spark
    spark = get_spark("test-connect", shuffle_partitions=3, conf={"spark.remote": remote})
    path = str(Path(folder, "t").resolve())
    spark.range(5).write.format("delta").mode("overwrite").save(path)
    rows = spark.read.format("delta").load(path).count()
    try:
        from windowing.spark.lake import delta_lake_io
        delta_lake_io.table_exists(spark, path)
        table_api = "supported"
    except Exception as error:  # noqa: BLE001 - which error the server gives is what is recorded
        table_api = f"unsupported: {type(error).__name__}: {str(error)[:300]}"
    Path(out).write_text(json.dumps({
        "connect": not hasattr(spark, "_jvm"), "time_zone": spark.conf.get("spark.sql.session.timeZone"),
        "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions"), "rows": rows,
        "table_api": table_api}))
    spark.stop()


if __name__ == "__main__":
    client(*sys.argv[1:])
