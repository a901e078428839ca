"""The project's log: what a run says, through :mod:`logging`, readable in a terminal and in an Airflow task.

Every summary line of a run (a batch's outcome, a backfill chunk, a validation)
goes to the ``pipelines`` logger at INFO, a problem at WARNING. Where it ends up
depends on who runs the code:

* the ``winjob`` CLI (and ``./dev demo``) calls :func:`to_console`: lines on
  stderr as ``[hh:mm:ss] message``;
* an Airflow task routes the records into its task log at their own level (a
  summary is INFO there, not the red ERROR of a line on stderr);
* a test reads them with pytest's ``caplog``.

:func:`quiet_libraries` puts the libraries that talk a lot at INFO (Great
Expectations, py4j) at WARNING, so that a task log holds the run's own lines.
:func:`jvm_output_to_stdout` starts Spark's JVM with its stderr on stdout: its
start-up banner and log4j lines are then INFO in a task log, not ERROR.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys

LOGGER_NAME = "pipelines"
NOISY_LIBRARIES = ("great_expectations", "py4j", "py4j.clientserver", "py4j.java_gateway", "urllib3",
                   "matplotlib", "filelock")
"""Loggers put at WARNING by :func:`quiet_libraries` (with every child logger that set a level of its own)."""
CONSOLE_FORMAT = "[%(asctime)s] %(message)s"

logger = logging.getLogger(LOGGER_NAME)
logger.setLevel(logging.INFO)   # the project's lines are INFO whatever the root logger's level


def info(message: str) -> None:
    """A summary line of a run (INFO)."""
    logger.info(message)


def warning(message: str) -> None:
    """Something a person should look at, though the run goes on (WARNING)."""
    logger.warning(message)


def quiet_libraries() -> None:
    """Great Expectations, py4j and other chatty libraries log WARNING and above only.

    Child loggers that set a level of their own (Great Expectations sets INFO on
    some of its modules) are put at WARNING too, so call this again after
    importing such a library. Python warnings go to the log as WARNING records
    instead of stderr.
    """
    for name in NOISY_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)
    for name, child in list(logging.root.manager.loggerDict.items()):
        if (isinstance(child, logging.Logger) and name.split(".")[0] in NOISY_LIBRARIES
                and logging.NOTSET < child.level < logging.WARNING):
            child.setLevel(logging.WARNING)
    logging.captureWarnings(True)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record comes (a test may have replaced it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def to_console() -> None:
    """Print the project's log lines on stderr as ``[hh:mm:ss] message`` (installed once)."""
    if any(isinstance(h, _StderrHandler) for h in logger.handlers):
        return
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter(CONSOLE_FORMAT, datefmt="%H:%M:%S"))
    logger.addHandler(handler)


@contextlib.contextmanager
def jvm_output_to_stdout():
    """Inside: file descriptor 2 is stdout's, so a process started here (Spark's JVM) writes its stderr there.

    The JVM keeps the descriptors it was started with; Python's own stderr is
    put back on leaving. Under Airflow a task's stdout is logged at INFO and its
    stderr at ERROR: Spark's banner and log4j warnings are not errors.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(1, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


quiet_libraries()
