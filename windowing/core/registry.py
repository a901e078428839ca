"""Job-file names of the built-in assigners, triggers and evictors: one table per kind.

Every built-in part that a job file can name declares ``job_form``, a
:class:`~windowing.core.config_values.JobForm`: its name (``"tumbling"``,
``"count"``), the keys its table takes (``("size", "offset")``) and the key
that the short form ``"<name>:<value>"`` fills (``"n"`` for
``trigger = "count:3"``; None: no short form); and the classmethod
``from_config(table)`` that builds it from those keys. A
job file names a part by a string (``"event_time"``, ``"count:3"``,
``"time:10 seconds"``) or by a table (``{type = "continuous_event_time",
interval = "1 minute"}``); :meth:`Registry.from_config` reads both, refuses
unknown names and keys (naming the valid ones) and calls the class's
``from_config``. A new job-file name is the class (with ``job_form`` and
``from_config``) plus its entry in a table below.

User parts (a class of the user's own) are not in these tables: job files
name them by import path (``"package.module:Name"``, see
``pipelines.job.import_object``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from windowing.core.aggregates import BUILTIN_AGGREGATES
from windowing.core.assigners import (
    CumulativeEventTimeWindows, EventTimeSessionWindows, ProcessingTimeSessionWindows, SlidingEventTimeWindows,
    SlidingProcessingTimeWindows, TumblingEventTimeWindows, TumblingProcessingTimeWindows)
from windowing.core.evictors import CountEvictor, DeltaEvictor, TimeEvictor
from windowing.core.triggers import (
    ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, CountTrigger, DeltaTrigger,
    EarlyLateEventTimeTrigger, EventTimeTrigger, ProcessingTimeTrigger)

TYPE_KEY = "type"
"""The key of a table form that holds the part's name: ``{type = "count", n = 3}``."""


@dataclass(frozen=True)
class Registry:
    """The built-in parts of one kind that job files name, in the order messages list them.

    Attributes:
        what: the kind, as messages say it (``"trigger"``, ``"window type"``).
        classes: the classes, each with ``job_form`` and ``from_config``.
        also: names the caller handles itself (listed in messages, e.g. the count window,
            which is an assigner, a trigger and an evictor together).
        user_hint: how a user part is named instead, appended to the unknown-name message.
    """

    what: str
    classes: tuple[type, ...]
    also: tuple[str, ...] = ()
    user_hint: str = ""

    def __post_init__(self) -> None:
        names = [cls.job_form.name for cls in self.classes] + list(self.also)
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"{self.what} names are declared twice: {repeated}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(cls.job_form.name for cls in self.classes) + self.also

    def forms(self) -> list[str]:
        """How each name is written as a string: ``'event_time'``, ``'count:<n>'``."""
        forms = [cls.job_form.name if cls.job_form.arg is None else f"{cls.job_form.name}:<{cls.job_form.arg}>" for cls in self.classes]
        return forms + list(self.also)

    def knows(self, value: Any) -> bool:
        """Whether ``value`` (a string such as ``"count:3"``) names a part of this table."""
        return isinstance(value, str) and value.partition(":")[0] in self.names

    def lookup(self, name: Any) -> type:
        """The class named ``name``.

        Raises:
            ValueError: naming ``name`` and the valid names.
        """
        for cls in self.classes:
            if cls.job_form.name == name:
                return cls
        hint = f" (a table {{{TYPE_KEY} = '<name>', ...}} takes the same names)" if self.what != "window type" else ""
        user = f", nor {self.user_hint}" if self.user_hint else ""
        raise ValueError(f"{self.what} {name!r} is not one of {self.forms()}{hint}{user}")

    def from_config(self, value: str | Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> Any:
        """The part that ``value`` names: ``"<name>"``, ``"<name>:<value>"`` or ``{type = "<name>", ...}``.

        ``extra`` adds keys from elsewhere in the job file (e.g. ``evict_after``).

        Raises:
            ValueError: naming the unknown name or keys and the valid ones, or
                the bad value (from the class's ``from_config``).
        """
        if isinstance(value, Mapping):
            table = dict(value)
            name = table.pop(TYPE_KEY, None)
            cls = self.lookup(name)
        elif isinstance(value, str):
            name, colon, arg = value.partition(":")
            cls = self.lookup(name)
            if colon and cls.job_form.arg is None:
                raise ValueError(f"{self.what} {name!r} takes no value after ':' (got {value!r}); "
                                 f"write {name!r}")
            table = {cls.job_form.arg: arg.strip()} if colon else {}
        else:
            raise ValueError(f"{self.what} {value!r} must be a name such as {self.forms()[0]!r} or a table "
                             f"{{{TYPE_KEY} = '<name>', ...}}")
        table.update(extra or {})
        unknown = sorted(set(table) - set(cls.job_form.keys))
        if unknown:
            raise ValueError(f"{self.what} {name!r} does not take {unknown}; it takes {sorted(cls.job_form.keys)}")
        return cls.from_config(table)


COUNT_WINDOW = "count"
"""``[window] type = "count"``: ``WindowSpecBuilder.count_window`` (global windows, a count
trigger and, with a slide, a count evictor), not one assigner."""

_IMPORT_HINT = "an import path 'package.module:Name' of a user {}"

JOB_WINDOW_TYPES = Registry(
    "window type",
    (TumblingEventTimeWindows, SlidingEventTimeWindows, CumulativeEventTimeWindows, EventTimeSessionWindows,
     TumblingProcessingTimeWindows, SlidingProcessingTimeWindows, ProcessingTimeSessionWindows),
    also=(COUNT_WINDOW,), user_hint=_IMPORT_HINT.format("window assigner"))
JOB_TRIGGERS = Registry(
    "trigger",
    (EventTimeTrigger, ProcessingTimeTrigger, CountTrigger, EarlyLateEventTimeTrigger, ContinuousEventTimeTrigger,
     ContinuousProcessingTimeTrigger, DeltaTrigger),
    user_hint=_IMPORT_HINT.format("trigger"))
JOB_EVICTORS = Registry("evictor", (CountEvictor, TimeEvictor, DeltaEvictor), user_hint=_IMPORT_HINT.format("evictor"))


JOB_AGGREGATES: dict[str, type] = {cls.job_name: cls for cls in BUILTIN_AGGREGATES}
"""Job-file name -> built-in aggregate class (``total = "sum(amount)"``): each declares its
``job_name``; ``Count`` alone may go without a column (``"count()"``)."""
