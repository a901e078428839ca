"""Which LogStore Delta uses for a path, and whether it writes a file put-if-absent atomically across processes.

Delta picks a LogStore per path scheme (``DelegatingLogStore``): the class named by
``spark.delta.logStore.class``, else by ``spark.delta.logStore.<scheme>.impl`` (each also read
without the ``spark.`` prefix), else the scheme's default: ``HDFSLogStore`` for ``hdfs``, the local
file system and every scheme without a default of its own (a rename that refuses an existing
target: atomic on HDFS; on a local disk a check for the target, then a rename, as for Delta's own
commits there), ``AzureLogStore`` for ``abfs``/``abfss``/``adl``/``wasb``/``wasbs`` and
``GCSLogStore`` for ``gs`` (both documented by Delta as safe for concurrent writers from several
clusters), ``S3SingleDriverLogStore`` for ``s3``/``s3a``/``s3n`` (not atomic across drivers; the
configured ``io.delta.storage.S3DynamoDBLogStore`` is). Any other LogStore counts as not atomic.
:mod:`windowing.spark.lake.claims` keeps claims as files only where this says atomic.
"""
from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit

S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
AZURE_SCHEMES = frozenset({"abfs", "abfss", "adl", "wasb", "wasbs"})
GCS_SCHEMES = frozenset({"gs"})
HDFS_LOG_STORE = "io.delta.storage.HDFSLogStore"
S3_SINGLE_DRIVER_LOG_STORE = "io.delta.storage.S3SingleDriverLogStore"
AZURE_LOG_STORE = "io.delta.storage.AzureLogStore"
GCS_LOG_STORE = "io.delta.storage.GCSLogStore"
S3_DYNAMODB_LOG_STORE = "io.delta.storage.S3DynamoDBLogStore"
DELEGATING_LOG_STORE = "org.apache.spark.sql.delta.storage.DelegatingLogStore"
LOG_STORE_CLASS_KEY = "spark.delta.logStore.class"
"""Delta's key for one LogStore class for every scheme (it then does not look at the per-scheme keys)."""
LOG_STORE_SCHEME_KEY = "spark.delta.logStore.{scheme}.impl"
"""Delta's key for the LogStore class of one scheme."""

ATOMIC_LOG_STORES: dict[str, frozenset[str]] = {
    HDFS_LOG_STORE: frozenset({"hdfs", "file"}),
    AZURE_LOG_STORE: AZURE_SCHEMES,
    GCS_LOG_STORE: GCS_SCHEMES,
    S3_DYNAMODB_LOG_STORE: S3_SCHEMES,
}
"""The LogStores whose put-if-absent is atomic across processes, each with the schemes where it is
(see the module docstring)."""


def default_log_store(scheme: str) -> str:
    """The LogStore Delta's ``DelegatingLogStore`` uses for ``scheme`` when none is configured."""
    if scheme in S3_SCHEMES:
        return S3_SINGLE_DRIVER_LOG_STORE
    if scheme in AZURE_SCHEMES:
        return AZURE_LOG_STORE
    if scheme in GCS_SCHEMES:
        return GCS_LOG_STORE
    return HDFS_LOG_STORE


class ConfReader(Protocol):
    """What the chooser reads a configuration through: a ``SparkConf`` (or a dict) ``get``."""

    def get(self, key: str) -> str | None: ...


def _conf_value(conf: ConfReader, key: str) -> str | None:
    """``key``'s value, or that of the key without the ``spark.`` prefix (Delta accepts both)."""
    values = {k: conf.get(k) for k in (key, key.removeprefix("spark."))}
    given = {k: v for k, v in values.items() if v is not None}
    if len(set(given.values())) > 1:
        raise ValueError(f"the Spark configuration sets {key}={given[key]!r} and "
                         f"{key.removeprefix('spark.')}={given[key.removeprefix('spark.')]!r}; Delta accepts "
                         f"either key but refuses two different values")
    for k, value in given.items():
        if not value.strip():
            raise ValueError(f"the Spark configuration sets {k}={value!r}: a LogStore class name is needed")
        return value.strip()
    return None


def scheme_of(path: str, default_fs: str = "file:///") -> str:
    """The lower-case scheme of ``path``; a path without one is on ``default_fs`` (Hadoop's ``fs.defaultFS``)."""
    if not isinstance(path, str) or not path.strip():
        raise ValueError(f"a claims path must be a non-empty string, not {path!r}")
    try:
        scheme = urlsplit(path).scheme or urlsplit(default_fs or "").scheme or "file"
    except ValueError as error:
        raise ValueError(f"claims path {path!r} (default file system {default_fs!r}) is not a URI: {error}") from None
    return scheme.lower()


def log_store_of(conf: ConfReader, scheme: str) -> str:
    """The LogStore class Delta uses for paths of ``scheme`` under ``conf`` (Delta's ``LogStoreProvider``
    and ``DelegatingLogStore``: the class key, else the scheme's key, else the scheme's default)."""
    scheme_key = LOG_STORE_SCHEME_KEY.format(scheme=scheme)
    configured, per_scheme = _conf_value(conf, LOG_STORE_CLASS_KEY), _conf_value(conf, scheme_key)
    if configured is not None and per_scheme is not None:
        raise ValueError(f"the Spark configuration sets both {LOG_STORE_CLASS_KEY}={configured!r} and "
                         f"{scheme_key}={per_scheme!r}; Delta refuses a LogStore class together with a "
                         f"scheme's: keep one")
    if configured is not None and configured != DELEGATING_LOG_STORE:
        return configured
    return per_scheme or default_log_store(scheme)


def atomic_put_if_absent(conf: ConfReader, path: str, default_fs: str = "file:///") -> bool:
    """Whether the LogStore Delta uses for ``path`` under ``conf`` writes a new file put-if-absent
    atomically across processes (:data:`ATOMIC_LOG_STORES`). ``conf``: the Spark configuration Delta
    reads its LogStore from (the ``SparkConf``, or a dict); ``default_fs``: the file system of a path
    without a scheme (Hadoop's ``fs.defaultFS``)."""
    scheme = scheme_of(path, default_fs)
    return scheme in ATOMIC_LOG_STORES.get(log_store_of(conf, scheme), ())
