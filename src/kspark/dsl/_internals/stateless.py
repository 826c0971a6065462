"""Processors of the stateless KStream operations: filter, mapValues, map, selectKey, peek,
flatMap, flatMapValues, merge, split, processValues, print, foreach, and the null-key filter in
front of a repartition topic (Kafka ``KStreamFilter``, ``KStreamMapValues``, ``KStreamMap``,
``KStreamPeek``, ``KStreamFlatMap``, ``KStreamFlatMapValues``, ``PassThrough``, ``KStreamBranch``,
``KStreamPrint``, ``ForeachProcessor``)."""

from __future__ import annotations

import sys
from typing import Any

from ...errors import StreamsException
from ...processor import ContextualProcessor, FixedKeyProcessorContext, FixedKeyRecord, ProcessorContext, Record

__all__ = [
    "ForeachProcessor", "FixedKeyProcessorAdapter", "KStreamBranch", "KStreamFilter", "KStreamFlatMap",
    "KStreamFlatMapValues", "KStreamMap", "KStreamMapValues", "KStreamPeek", "KStreamPrint", "KStreamSelectKey",
    "PassThrough", "RepartitionNullKeyFilter", "javaString",
]


class KStreamFilter(ContextualProcessor):
    def __init__(self, predicate, filterNot: bool) -> None:
        self.predicate, self.filterNot = predicate, filterNot

    def process(self, record: Record) -> None:
        if self.filterNot ^ bool(self.predicate(record.key(), record.value())):
            self.context().forward(record)

    def fusedStep(self, drop):
        """``process`` as a step of a fused chain (``StreamTask._fuseChains``): the value when
        the record passes (a pass-through: ``process`` forwards its input record), else ``drop``."""
        predicate, filterNot = self.predicate, self.filterNot

        def step(key, value):
            return value if filterNot ^ bool(predicate(key, value)) else drop

        return step, True


class KStreamMapValues(ContextualProcessor):
    def __init__(self, mapper, withKey: bool) -> None:
        self.mapper, self.withKey = mapper, withKey

    def process(self, record: Record) -> None:
        value = self.mapper(record.key(), record.value()) if self.withKey else self.mapper(record.value())
        self.context().forward(record.withValue(value))

    def fusedStep(self, drop):
        """``process`` as a step of a fused chain (``StreamTask._fuseChains``): the mapped value
        (``process`` forwards it in a copy of the record, ``withValue``)."""
        mapper = self.mapper
        if self.withKey:
            return mapper, False
        return (lambda key, value: mapper(value)), False


class KStreamMap(ContextualProcessor):
    def __init__(self, mapper) -> None:
        self.mapper = mapper

    def process(self, record: Record) -> None:
        result = self.mapper(record.key(), record.value())
        try:
            key, value = result
        except (TypeError, ValueError):
            raise TypeError(f"The mapper of map() must return a KeyValue or (key, value) pair, got {result!r}") from None
        self.context().forward(Record(key, value, record.timestamp(), record._headers))


class KStreamSelectKey(ContextualProcessor):
    def __init__(self, mapper) -> None:
        self.mapper = mapper

    def process(self, record: Record) -> None:
        self.context().forward(record.withKey(self.mapper(record.key(), record.value())))


class KStreamPeek(ContextualProcessor):
    def __init__(self, action) -> None:
        self.action = action

    def process(self, record: Record) -> None:
        self.action(record.key(), record.value())
        self.context().forward(record)


class RepartitionNullKeyFilter(ContextualProcessor):
    """Drops null-key records before a repartition sink (rule RP-2); counted per node as kspark's addition.

    ``policy.dropNullKeys`` is False when a relaxed (left) join is downstream (KIP-962): null keys pass.
    """

    def __init__(self, policy=None) -> None:
        self.dropNullKeys = True if policy is None else policy.dropNullKeys

    def process(self, record: Record) -> None:
        if self.dropNullKeys and record.key() is None:
            self.context().metrics().recordDropped(
                self.context().taskId(), self.context().currentNode.name, "null key before repartition"
            )
            return
        self.context().forward(record)


class KStreamFlatMap(ContextualProcessor):
    """``mapper(key, value)`` returns an iterable of ``KeyValue``/``(key, value)``; each pair is
    forwarded with the input's timestamp and headers (Kafka ``KStreamFlatMap``)."""

    def __init__(self, mapper) -> None:
        self.mapper = mapper

    def process(self, record: Record) -> None:
        pairs = self.mapper(record.key(), record.value())
        if pairs is None:
            raise TypeError("The provided KeyValueMapper returned null which is not allowed.")
        for pair in pairs:
            try:
                key, value = pair
            except (TypeError, ValueError):
                raise TypeError(f"The mapper of flatMap() must return KeyValue or (key, value) pairs, got {pair!r}") from None
            self.context().forward(Record(key, value, record.timestamp(), record._headers))


class KStreamFlatMapValues(ContextualProcessor):
    """Forwards one record per value of ``mapper(value)`` / ``mapper(key, value)``, same key,
    timestamp and headers (Kafka ``KStreamFlatMapValues``)."""

    def __init__(self, mapper, withKey: bool) -> None:
        self.mapper, self.withKey = mapper, withKey

    def process(self, record: Record) -> None:
        values = self.mapper(record.key(), record.value()) if self.withKey else self.mapper(record.value())
        if values is None:
            raise TypeError("The ValueMapper of flatMapValues() returned None; return an iterable (empty to drop).")
        for value in values:
            self.context().forward(record.withValue(value))


class PassThrough(ContextualProcessor):
    """Forwards every record unchanged (Kafka ``PassThrough``: merge and branch children)."""

    def process(self, record: Record) -> None:
        self.context().forward(record)


class KStreamBranch(ContextualProcessor):
    """Sends a record to the child of the first predicate it matches, else to the default branch
    if there is one, else nowhere (Kafka ``KStreamBranch``). ``predicates`` and ``childNames`` are
    shared lists the ``BranchedKStream`` keeps filling."""

    def __init__(self, predicates: list, childNames: list) -> None:
        self.predicates, self.childNames = predicates, childNames

    def process(self, record: Record) -> None:
        key, value = record.key(), record.value()
        for i, predicate in enumerate(self.predicates):
            if predicate(key, value):
                self.context().forward(record, self.childNames[i])
                return
        if len(self.childNames) > len(self.predicates):
            self.context().forward(record, self.childNames[len(self.predicates)])


class ForeachProcessor(ContextualProcessor):
    """Calls ``action(key, value)``; a terminal node (Kafka ``ForeachProcessor``)."""

    def __init__(self, action) -> None:
        self.action = action

    def process(self, record: Record) -> None:
        self.action(record.key(), record.value())


def javaString(x: Any) -> str:
    """``String.valueOf`` for the values Kafka's ``Printed`` formats: None -> "null", bools lower case."""
    if x is None:
        return "null"
    if x is True:
        return "true"
    if x is False:
        return "false"
    return str(x)


class KStreamPrint(ContextualProcessor):
    """Writes ``[label]: mapper(key, value)`` per record (Kafka ``KStreamPrint`` +
    ``PrintForeachAction``); the default mapper renders ``"key, value"``."""

    def __init__(self, path: str | None, mapper, label: str) -> None:
        self.path, self.mapper, self.label = path, mapper, label
        self._file = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        if self.path is not None:
            self._file = open(self.path, "a", encoding="utf-8")

    def process(self, record: Record) -> None:
        key, value = record.key(), record.value()
        text = self.mapper(key, value) if self.mapper is not None else f"{javaString(key)}, {javaString(value)}"
        line = f"[{self.label}]: {text}\n"
        if self._file is not None:
            self._file.write(line)
            self._file.flush()
        else:
            sys.stdout.write(line)
            sys.stdout.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class _FixedKeyContext(FixedKeyProcessorContext):
    """The context a ``processValues`` processor sees: forwarding a record whose key differs from
    the input record's raises (Kafka's ``FixedKeyRecord`` makes that impossible by type)."""

    def __init__(self, inner, owner: "FixedKeyProcessorAdapter") -> None:
        self._inner, self._owner = inner, owner

    def forward(self, record: Record, childName: str | None = None) -> None:
        current = self._owner.current
        if (current is not None and type(record) is not FixedKeyRecord and record.key() is not current.key()
                and record.key() != current.key()):
            raise StreamsException(
                f"processValues() processor {self._inner.currentNode.name} forwarded key {record.key()!r} "
                f"for an input record with key {current.key()!r}; a fixed-key processor may not change the key "
                "(use process() to change keys)"
            )
        if type(record) is FixedKeyRecord:  # Kafka's context forwards a new Record of its fields
            record = Record(record._key, record._value, record._timestamp, record._headers)
        self._inner.forward(record, childName)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def getStateStore(self, name: str):
        return self._inner.getStateStore(name)

    def schedule(self, interval, type, callback):
        return self._inner.schedule(interval, type, callback)

    def recordMetadata(self):
        return self._inner.recordMetadata()

    def taskId(self) -> str:
        return self._inner.taskId()

    def applicationId(self) -> str:
        return self._inner.applicationId()

    def currentStreamTimeMs(self) -> int:
        return self._inner.currentStreamTimeMs()

    def currentSystemTimeMs(self) -> int:
        return self._inner.currentSystemTimeMs()

    def appConfigs(self) -> dict:
        return self._inner.appConfigs()


class FixedKeyProcessorAdapter(ContextualProcessor):
    """Runs a user processor for ``KStream.processValues`` (Kafka ``FixedKeyProcessor``)."""

    def __init__(self, processor) -> None:
        if processor is None or not hasattr(processor, "process"):
            raise StreamsException(f"processValues() supplier returned {processor!r}, not a Processor")
        self.processor = processor
        self.current: Record | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.processor.init(_FixedKeyContext(context, self))

    def process(self, record: Record) -> None:
        self.current = record
        try:
            self.processor.process(FixedKeyRecord._of(record))
        finally:
            self.current = None

    def close(self) -> None:
        self.processor.close()
