"""The same JVM calls with fewer py4j round trips.

In a classic (py4j) session every step of building a plan is a round trip between Python and
the JVM, and a batch's plan takes about a thousand of them. Three kinds carried no information
the JVM did not already have; counted by command over twelve transcripts (before any of this,
about 1,600 commands a batch):

* **Lookups.** ``sc._jvm.PythonUtils.toSeq`` or ``F.col`` first ask the JVM what
  ``PythonUtils`` is and then what its member ``toSeq`` is, every time. A class and its static
  methods stay what they are for the life of the JVM: :func:`install` keeps each answer on the
  object that asked (a class on the gateway's view, a method on its class). Fields are asked
  again (a static field can change).
* **Lists.** py4j hands a Python list to Java as an ``ArrayList`` built with one ``add`` call per
  element (every ``select``, ``groupBy`` and ``struct`` passes its columns so). Here the elements go
  ten at a time through ``java.util.List.of`` into the ``ArrayList``'s constructor and ``addAll``.
  A list with a ``None`` in it (``List.of`` refuses nulls) goes element by element as before.
* **Releases.** Each Python proxy of a JVM object that is garbage collected is deleted from the
  gateway's bindings in a round trip of its own, sent by py4j's finalizer thread; they were about
  two fifths of all commands. Here that thread keeps the ids and deletes each
  :data:`RELEASE_BATCH` of them in one call. An id is never reused, so a late release cannot
  remove a live object; at most ``RELEASE_BATCH`` dead entries (and what only they keep alive in
  the JVM) wait.

Nothing else changes: the same JVM methods run with the same arguments. Each part checks that
py4j still has the internals it relies on and otherwise leaves py4j as it is. Spark Connect
sessions hold no py4j gateway and never take these paths (this module imports py4j only when
installing).
"""
from __future__ import annotations

import logging

RELEASE_BATCH = 256
"""Released ids deleted from the gateway's bindings in one JVM call."""
LIST_CHUNK = 10
"""Elements per ``java.util.List.of`` call (its largest fixed-arity form)."""

_SEPARATOR = ","
_log = logging.getLogger(__name__)


# ------------------------------------------------------------------ lookups

def _keep_lookups() -> bool:
    from py4j import java_gateway as jg
    if getattr(jg.JVMView.__getattr__, "keeps_classes", False):
        return True
    view_lookup, class_lookup = jg.JVMView.__getattr__, jg.JavaClass.__getattr__

    def view_getattr(self, name):
        found = view_lookup(self, name)
        if isinstance(found, jg.JavaClass):
            self.__dict__[name] = found          # later reads find the attribute: no round trip
        return found

    def class_getattr(self, name):
        found = class_lookup(self, name)
        if isinstance(found, (jg.JavaMember, jg.JavaClass)):   # a method or a nested class, not a field's value
            self.__dict__[name] = found
        return found

    view_getattr.keeps_classes = True
    jg.JVMView.__getattr__, jg.JavaClass.__getattr__ = view_getattr, class_getattr
    return True


# ------------------------------------------------------------------ lists

class _ChunkedListConverter:
    """py4j's list conversion (``plain``), ``LIST_CHUNK`` elements a call."""

    def __init__(self, plain):
        self.plain, self.can_convert = plain, plain.can_convert
        self.classes: dict = {}
        """Per gateway client: ``ArrayList`` and ``List.of`` (each resolved once)."""

    def convert(self, object, gateway_client):
        from py4j.java_gateway import JavaClass
        items = list(object)
        if any(item is None for item in items):
            return self.plain.convert(items, gateway_client)
        classes = self.classes.get(gateway_client)
        if classes is None:
            classes = self.classes[gateway_client] = (JavaClass("java.util.ArrayList", gateway_client),
                                                      JavaClass("java.util.List", gateway_client).of)
        array_list, list_of = classes
        if not items:
            return array_list()
        converted = array_list(list_of(*items[:LIST_CHUNK]))
        for start in range(LIST_CHUNK, len(items), LIST_CHUNK):
            converted.addAll(list_of(*items[start:start + LIST_CHUNK]))
        return converted


def _chunked_lists() -> bool:
    from py4j import protocol
    from py4j.java_collections import ListConverter
    converters = protocol.INPUT_CONVERTER      # every auto-converting gateway client's list
    if any(isinstance(c, _ChunkedListConverter) for c in converters):
        return True
    plain = [i for i, c in enumerate(converters) if type(c) is ListConverter]
    if len(plain) != 1:
        return False
    converters[plain[0]] = _ChunkedListConverter(converters[plain[0]])
    return True


# ------------------------------------------------------------------ releases

class _BatchedReleases:
    """Stands in for ``JavaClient.garbage_collect_object`` of one py4j ``ClientServer`` client.

    py4j queues a release (``enqueue=True``, on the thread that dropped the proxy) and its
    finalizer thread sends each queued one (``enqueue=False``). Here the finalizer thread keeps
    them and deletes each ``RELEASE_BATCH`` together; the two proxies a deletion creates are
    released with the next one.
    """

    def __init__(self, gateway, client):
        from py4j import protocol
        self.client = client
        self.enqueue = client.garbage_collect_object
        self.keep = {protocol.ENTRY_POINT_OBJECT_ID, protocol.GATEWAY_SERVER_OBJECT_ID}
        self.bound_ids = gateway.java_gateway_server.getGateway().getBindings().keySet()
        self.splitter = gateway.jvm.java.util.regex.Pattern.compile(_SEPARATOR)
        self.to_set = gateway.jvm.java.util.stream.Collectors.toSet()
        self.pending: list[str] = []

    def __call__(self, target_id: str, enqueue: bool = True) -> None:
        if enqueue:
            self.enqueue(target_id)          # py4j's: onto the finalizer thread's queue
            return
        if target_id in self.keep:
            return
        self.pending.append(target_id)
        if len(self.pending) >= RELEASE_BATCH:
            self.release()

    def release(self) -> None:
        """Delete every kept id from the gateway's bindings in one JVM call."""
        ids, self.pending = self.pending, []
        if not self.client.is_connected:
            return
        try:
            self.bound_ids.removeAll(self.splitter.splitAsStream(_SEPARATOR.join(ids)).collect(self.to_set))
        except Exception:   # as py4j's own release: a closing gateway, a dead JVM
            _log.debug("releasing %d JVM objects failed", len(ids), exc_info=True)


def _batched_releases(gateway) -> bool:
    client = getattr(gateway, "_gateway_client", None)
    if client is None or not hasattr(client, "finalizer_deque") or not hasattr(client, "garbage_collect_object"):
        return False     # not a ClientServer client (pinned threads off): releases stay as they are
    if isinstance(client.__dict__.get("garbage_collect_object"), _BatchedReleases):
        return True
    try:
        releases = _BatchedReleases(gateway, client)
    except Exception:
        _log.debug("py4j gateway without a bindings table: releases stay one by one", exc_info=True)
        return False
    client.garbage_collect_object = releases
    return True


def install(gateway) -> dict[str, bool]:
    """All three for the process and ``gateway`` (``SparkContext._gateway``); idempotent.

    Returns which parts are in place: a part whose py4j internals moved is left out, and its
    calls go as py4j sends them.
    """
    return {"lookups": _keep_lookups(), "lists": _chunked_lists(), "releases": _batched_releases(gateway)}
