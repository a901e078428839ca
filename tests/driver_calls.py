"""What the drivers ask of other modules, recorded while a test watches (the calls still run)."""
from __future__ import annotations

import contextlib

import pytest

from pipelines import quality


@contextlib.contextmanager
def validations_asked():
    """While open, each :func:`pipelines.quality.validate_job` call the drivers make is recorded as
    ``(batch_id, settings)`` in the yielded list, then made as asked."""
    asked, validate_job = [], quality.validate_job

    def recording(*args, **kwargs):
        asked.append((kwargs.get("batch_id"), kwargs.get("settings")))
        return validate_job(*args, **kwargs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quality, "validate_job", recording)
        yield asked
