"""``MockProcessorContext``: unit tests of one processor without a topology (Kafka test-utils'
``org.apache.kafka.streams.processor.api.MockProcessorContext``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable, Mapping, NamedTuple

from .._duration import toMillis
from ..config import StreamsConfig
from ..errors import StreamsException
from ..processor import Cancellable, ProcessorContext, PunctuationType, Record, RecordMetadata
from ..runtime.metrics import Metrics

__all__ = ["CapturedForward", "CapturedPunctuator", "MockProcessorContext"]


class CapturedForward(NamedTuple):
    """A record the processor forwarded, and the child it named (None: all children)."""

    forwardedRecord: Record
    child: str | None

    def record(self) -> Record:
        return self.forwardedRecord

    def childName(self) -> str | None:
        return self.child


class CapturedPunctuator:
    """A punctuator the processor scheduled: ``getIntervalMs()`` / ``getInterval()`` (timedelta),
    ``getType()``, ``getPunctuator()``, ``cancelled()`` (Kafka ``CapturedPunctuator``)."""

    def __init__(self, intervalMs: int, type: PunctuationType, punctuator: Callable[[int], None],
                 cancellable: Cancellable) -> None:
        self._intervalMs, self._type, self._punctuator, self._cancellable = intervalMs, type, punctuator, cancellable

    def getIntervalMs(self) -> int:
        return self._intervalMs

    def getInterval(self) -> timedelta:
        return timedelta(milliseconds=self._intervalMs)

    def getType(self) -> PunctuationType:
        return self._type

    def getPunctuator(self) -> Callable[[int], None]:
        return self._punctuator

    def cancelled(self) -> bool:
        return self._cancellable.cancelled


class MockProcessorContext(ProcessorContext):
    """A ``ProcessorContext`` that records what a processor does, for unit tests of one processor
    (Kafka ``MockProcessorContext``): ``processor.init(context)``, ``processor.process(record)``,
    then inspect ``forwarded()``, ``scheduledPunctuators()``, ``committed()`` and the stores.

    Nothing runs by itself: punctuators are called by the test (``getPunctuator()(time)``), record
    metadata and times are set with ``setRecordMetadata``, ``setCurrentStreamTimeMs`` and
    ``setCurrentSystemTimeMs``. Stores are built by the test and added with ``addStateStore``.

    Parameters
    ----------
    config : mapping, optional
        Streams configuration (``application.id`` defaults to ``"dummy-application-id"``).
    taskId : str, optional
        Default ``"0_0"``.

    Examples
    --------
    >>> from kspark import ContextualProcessor, Record, Stores
    >>> class Count(ContextualProcessor):
    ...     def init(self, context):
    ...         super().init(context)
    ...         self.store = context.getStateStore("counts")
    ...     def process(self, record):
    ...         n = (self.store.get(record.key()) or 0) + 1
    ...         self.store.put(record.key(), n)
    ...         self.context().forward(record.withValue(n))
    >>> context = MockProcessorContext()
    >>> store = Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("counts")).withLoggingDisabled().build()
    >>> store.init(context.getStateStoreContext(), store)
    >>> context.addStateStore(store)
    >>> processor = Count()
    >>> processor.init(context)
    >>> processor.process(Record("a", "x", 10))
    >>> [f.record() for f in context.forwarded()]
    [Record(key='a', value=1, timestamp=10, headers=())]
    """

    def __init__(self, config: Mapping[str, Any] | None = None, taskId: str = "0_0") -> None:
        props = {StreamsConfig.APPLICATION_ID_CONFIG: "dummy-application-id", **(config or {})}
        self._config = StreamsConfig(props)
        self._taskId = taskId
        self._metadata: RecordMetadata | None = None
        self._streamTime = -1
        self._systemTime = 0
        self._stores: dict[str, Any] = {}
        self._forwarded: list[CapturedForward] = []
        self._punctuators: list[CapturedPunctuator] = []
        self._committed = False
        self._metrics = Metrics()

    # -- ProcessorContext
    def forward(self, record: Record, childName: str | None = None) -> None:
        self._forwarded.append(CapturedForward(record, childName))

    def getStateStore(self, name: str) -> Any:
        """The store added with ``addStateStore`` under ``name``, or None (as Kafka's mock)."""
        return self._stores.get(name)

    def schedule(self, interval, type, callback) -> Cancellable:
        ms = toMillis(interval, "interval")
        if ms < 1:
            raise ValueError("The minimum supported scheduling interval is 1 millisecond.")
        cancellable = Cancellable()
        self._punctuators.append(CapturedPunctuator(ms, PunctuationType(type), callback, cancellable))
        return cancellable

    def recordMetadata(self) -> RecordMetadata | None:
        return self._metadata

    def taskId(self) -> str:
        return self._taskId

    def applicationId(self) -> str:
        return self._config.get(StreamsConfig.APPLICATION_ID_CONFIG)

    def currentStreamTimeMs(self) -> int:
        return self._streamTime

    def currentSystemTimeMs(self) -> int:
        return self._systemTime

    def metrics(self) -> Metrics:
        return self._metrics

    def commit(self) -> None:
        """Request a commit (Kafka ``ProcessorContext#commit``); see ``committed()``."""
        self._committed = True

    def appConfigs(self) -> dict:
        return dict(self._config._values)

    # -- set up by the test
    def setRecordMetadata(self, topic: str, partition: int, offset: int) -> None:
        self._metadata = RecordMetadata(topic, partition, offset)

    def setCurrentStreamTimeMs(self, currentStreamTimeMs: int) -> None:
        self._streamTime = currentStreamTimeMs

    def setCurrentSystemTimeMs(self, currentSystemTimeMs: int) -> None:
        self._systemTime = currentSystemTimeMs

    def addStateStore(self, stateStore) -> None:
        """Make ``stateStore`` (built by the test, e.g. ``StoreBuilder.build()``) available by its name."""
        name = stateStore.name()
        if name in self._stores:
            raise StreamsException(f"Store {name} is already added")
        self._stores[name] = stateStore

    def getStateStoreContext(self) -> "MockProcessorContext":
        """The context to pass to ``store.init(context, root)`` (kspark's stores need nothing from it)."""
        return self

    # -- what the processor did
    def forwarded(self, childName: str | None = None) -> list[CapturedForward]:
        """Every forwarded record in order; with ``childName``, those forwarded to it or to all
        children (Kafka's ``forwarded(childName)``)."""
        return [f for f in self._forwarded if childName is None or f.child in (None, childName)]

    def resetForwards(self) -> None:
        self._forwarded.clear()

    def scheduledPunctuators(self) -> list[CapturedPunctuator]:
        return list(self._punctuators)

    def committed(self) -> bool:
        return self._committed

    def resetCommit(self) -> None:
        self._committed = False
