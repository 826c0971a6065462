from __future__ import annotations

import math
import re
import threading
import time
from collections import deque
from datetime import datetime, timedelta, timezone
from operator import countOf, itemgetter
from typing import Any, Mapping

from .._duration import toMillis
from ..config import StreamsConfig
from ..keyvalue import KeyValue
from ..runtime.metrics import MetricName, SampledMetrics, rateName, withThreadId
from ..runtime.global_state import applyGlobalRecords, globalQueueKey
from ..runtime.record_queue import RawRecord
from ..runtime.stream_task import ProducedColumns, StreamTask
from ..serialization import Serde
from ..state import KeyValueStore, SessionStore, TimestampedKeyValueStore, VersionedKeyValueStore, WindowStore
from ._store_views import PlainValueStore, SessionStoreView, WindowStoreView
from ..topology import Subtopology, Topology
from ..topology._topology import SinkNodeSpec

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_UNSET: Any = type("_Unset", (), {"__repr__": lambda self: "<unset>"})()  # an argument not given

__all__ = ["TestInputTopic", "TestOutputTopic", "TestRecord", "TopologyTestDriver"]


class TestRecord:
    """A record read from or piped into a test topic (Kafka ``TestRecord``).

    Equality compares key, value, timestamp (ms) and headers.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, key: Any, value: Any, timestamp: int | None = None, headers: tuple = ()) -> None:
        self._key, self._value, self._timestamp, self._headers = key, value, timestamp, tuple(headers or ())

    def key(self) -> Any:
        return self._key

    def value(self) -> Any:
        return self._value

    def timestamp(self) -> int | None:
        return self._timestamp

    getRecordTime = timestamp

    def headers(self) -> tuple:
        return self._headers

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TestRecord) and (self._key, self._value, self._timestamp, self._headers) == (
            other._key, other._value, other._timestamp, other._headers
        )

    def __repr__(self) -> str:
        h = f", headers={self._headers!r}" if self._headers else ""
        return f"TestRecord(key={self._key!r}, value={self._value!r}, timestamp={self._timestamp}{h})"


class TestInputTopic:
    """Pipes records into a driver's input topic (Kafka ``TestInputTopic``)."""

    __test__ = False

    def __init__(self, driver: "TopologyTestDriver", topic: str, keySerde: Serde, valueSerde: Serde,
                 startTimestampMs: int, autoAdvanceMs: int) -> None:
        self._driver, self._topic = driver, topic
        self._keySerde, self._valueSerde = keySerde, valueSerde
        self._currentTime = startTimestampMs
        self._advance = autoAdvanceMs
        self._valueHoldsInts: bool | None = None

    def advanceTime(self, advance: int | timedelta) -> None:
        ms = toMillis(advance, "advance")
        if ms < 0:
            raise ValueError("advance must be positive")
        self._currentTime += ms

    def pipeInput(self, key: Any = _UNSET, value: Any = _UNSET, timestamp: int | datetime | None = None,
                  headers: tuple = ()) -> None:
        """Pipe one record (Kafka ``TestInputTopic#pipeInput``), in Kafka's forms:

        - ``pipeInput(record)``: a ``TestRecord``;
        - ``pipeInput(value)``: a null key;
        - ``pipeInput(key, value)``;
        - ``pipeInput(value, timestamp)`` with ``timestamp`` a ``datetime`` (Kafka's ``Instant``),
          or an int when this topic's value serde cannot hold an int (String, ByteArray: Kafka's
          ``pipeInput(V value, long timestampMs)``, which Java tells apart by V's type); with a
          value serde that holds ints (JSON, Long, ...) two positional arguments are key and value:
          use ``timestamp=`` then;
        - ``pipeInput(key, value, timestamp)``; ``headers=`` adds headers.

        ``timestamp`` is ms (int, must be >= 0) or an aware ``datetime`` (may be before the
        epoch, to test invalid timestamps); ``None`` uses the topic's current time, then
        advances it by ``autoAdvance``.

        Raises
        ------
        ValueError
            If an int ``timestamp`` is negative (Kafka: ``IllegalArgumentException``).
        TypeError
            If no record or value is given, or ``timestamp`` is neither int nor datetime.
        """
        if type(timestamp) is int and timestamp >= 0 and not headers and value is not _UNSET and type(key) is not TestRecord:
            topic = self._topic  # the common case of _serialized, without building its tuple
            self._driver._pipeRecord(topic, self._keySerde.serialize(topic, key),
                                     self._valueSerde.serialize(topic, value), timestamp, ())
            return
        self._driver._pipeRecord(self._topic, *self._serialized(key, value, timestamp, headers))

    def _serialized(self, key, value, timestamp, headers) -> tuple:
        """``pipeInput``'s arguments as (key bytes, value bytes, timestamp ms, headers)."""
        if isinstance(key, TestRecord):
            key, value, timestamp, headers = key.key(), key.value(), key.timestamp(), key.headers()
        elif value is _UNSET:  # pipeInput(value) or pipeInput(value=...)
            if key is _UNSET:
                raise TypeError("pipeInput() takes a TestRecord, a value, or a key and a value")
            key, value = None, key
        elif key is _UNSET:
            key = None
        elif timestamp is None and (isinstance(value, datetime) or (type(value) is int and not self._holdsInts())):
            key, value, timestamp = None, key, value  # pipeInput(value, Instant | long timestampMs)
        if timestamp is None:
            ts = self._currentTime
            self._currentTime += self._advance
        elif isinstance(timestamp, datetime):
            if timestamp.tzinfo is None:
                raise ValueError("timestamp datetime must be timezone-aware")
            ts = (timestamp - _EPOCH) // timedelta(milliseconds=1)
        else:
            if isinstance(timestamp, bool) or not isinstance(timestamp, int):
                raise TypeError("timestamp must be int ms or a timezone-aware datetime")
            if timestamp < 0:
                raise ValueError(f"Timestamp cannot be negative, got {timestamp}")
            ts = timestamp
        return (self._keySerde.serialize(self._topic, key), self._valueSerde.serialize(self._topic, value), ts,
                tuple(headers or ()))

    def _holdsInts(self) -> bool:
        """Whether this topic's value serde serializes an int (then ``pipeInput(a, int)`` is key, value)."""
        if self._valueHoldsInts is None:
            try:
                self._valueSerde.serialize(self._topic, 0)
                self._valueHoldsInts = True
            except Exception:
                self._valueHoldsInts = False
        return self._valueHoldsInts

    def _timestamps(self, n: int, startTimestamp, advance) -> list:
        """``n`` record times from ``startTimestamp`` (datetime or ms) every ``advance`` (timedelta
        or ms), as Kafka's ``pipeValueList(values, Instant, Duration)``; all None without a start."""
        if startTimestamp is None:
            if advance is not None:
                raise TypeError("advance needs a startTimestamp")
            return [None] * n
        if isinstance(startTimestamp, datetime):
            if startTimestamp.tzinfo is None:
                raise ValueError("startTimestamp datetime must be timezone-aware")
            startTimestamp = (startTimestamp - _EPOCH) // timedelta(milliseconds=1)
        step = toMillis(advance if advance is not None else 0, "advance")
        return [startTimestamp + i * step for i in range(n)]

    def pipeValueList(self, values, startTimestamp: int | datetime | None = None,
                      advance: int | timedelta | None = None) -> None:
        """``pipeInput(v)`` for each value, in order; with ``startTimestamp`` (and ``advance``) the
        records are stamped ``start, start + advance, ...`` (Kafka ``pipeValueList(values, Instant,
        Duration)``) without moving the topic's current time."""
        values = list(values)
        self._pipeAll((None, v, t, ()) for v, t in zip(values, self._timestamps(len(values), startTimestamp, advance)))

    def pipeKeyValueList(self, keyValues, startTimestamp: int | datetime | None = None,
                         advance: int | timedelta | None = None) -> None:
        """``pipeInput(k, v)`` for each ``(k, v)`` pair (or ``KeyValue``), in order; ``startTimestamp``
        and ``advance`` as in ``pipeValueList``."""
        pairs = list(keyValues)
        self._pipeAll((k, v, t, ()) for (k, v), t in zip(pairs, self._timestamps(len(pairs), startTimestamp, advance)))

    def pipeRecordList(self, records) -> None:
        """``pipeInput(record)`` for each ``TestRecord``, in order."""
        self._pipeAll((r, None, None, ()) for r in records)

    def _pipeAll(self, arguments) -> None:
        """``pipeInput(*a)`` for each ``a``. When nothing can happen between two records (TTD-1 on a
        fused task: one input partition, no punctuator, no record cache to flush, no repartition
        topic, a built-in timestamp extractor), the records are queued, then processed in one call:
        the same records, outputs and state as piping them one by one. A record that does not
        deserialize or has an invalid timestamp is piped alone after the queued ones, where it
        fails or is skipped as ``pipeInput`` would; records after one that fails are not piped."""
        driver, topic = self._driver, self._topic
        if not driver._processesQueueAtOnce(topic):
            for a in arguments:
                self.pipeInput(*a)
            return
        queue = driver._task.queueOf[topic]  # _processesQueueAtOnce: not a pattern source's queue
        keyOf, valueOf = queue._keySerde.deserialize, queue._valueSerde.deserialize
        pending: list = []  # (offset, timestamp, key, value, headers, extracted): RawRecord fields

        def flush() -> None:  # queue what is pending, process it
            if pending:
                offset = driver._offsets.get(topic, 0)
                driver._offsets[topic] = offset + len(pending)
                queue.addRawRecords([_tupleNew(RawRecord, (offset + i,) + r) for i, r in enumerate(pending)])
                queue.lag = 0
                pending.clear()
            driver._processQueued(topic)

        try:
            for a in arguments:
                key, value, timestamp, headers = self._serialized(*a)
                try:
                    queueable = timestamp >= 0 and (keyOf(topic, key), valueOf(topic, value)) is not None
                except Exception:
                    queueable = False
                if queueable:  # a built-in extractor takes a valid timestamp as is (T-3)
                    pending.append((timestamp, key, value, headers, timestamp))
                else:
                    flush()
                    driver._pipeRecord(topic, key, value, timestamp, headers)
        finally:
            flush()


class TestOutputTopic:
    """Reads what the topology wrote to a topic, in order (Kafka ``TestOutputTopic``)."""

    __test__ = False

    def __init__(self, driver: "TopologyTestDriver", topic: str, keySerde: Serde, valueSerde: Serde) -> None:
        self._driver, self._topic = driver, topic
        self._keySerde, self._valueSerde = keySerde, valueSerde

    def readRecord(self) -> TestRecord:
        """The next record. Raises ``LookupError`` if there is none (Kafka: ``NoSuchElementException``)."""
        queue = self._driver._outputs.get(self._topic)
        if not queue:
            raise LookupError(f"Empty topic: {self._topic}")
        _, timestamp, key, value, headers = queue.popleft()
        return TestRecord(self._keySerde.deserialize(self._topic, key),
                          self._valueSerde.deserialize(self._topic, value), timestamp, headers)

    def readValue(self) -> Any:
        return self.readRecord().value()

    def readKeyValue(self) -> KeyValue:
        r = self.readRecord()
        return KeyValue(r.key(), r.value())

    def readRecordsToList(self) -> list[TestRecord]:
        out = []
        while not self.isEmpty():
            out.append(self.readRecord())
        return out

    def readKeyValuesToList(self) -> list[KeyValue]:
        return [KeyValue(r.key(), r.value()) for r in self.readRecordsToList()]

    def readValuesToList(self) -> list[Any]:
        return [r.value() for r in self.readRecordsToList()]

    def readKeyValuesToMap(self) -> dict:
        return {r.key(): r.value() for r in self.readRecordsToList()}

    def getQueueSize(self) -> int:
        return len(self._driver._outputs.get(self._topic, ()))

    def isEmpty(self) -> bool:
        return self.getQueueSize() == 0


class TopologyTestDriver:
    """Runs a topology in process, record by record, on the production task engine (Kafka ``TopologyTestDriver``).

    Rules TTD-1..TTD-4: every topic has one partition; the whole topology is one task
    (``0_0``); after each piped record the driver processes until nothing is processable,
    re-feeding records written to repartition topics into the task, so stream time and stores
    see records exactly as a single-partition Kafka Streams application would. A record piped
    into a global topic updates the global store at once, before the call returns (TTD-4).

    Parameters
    ----------
    topology : Topology
    config : mapping, optional
        Streams configuration (``StreamsConfig`` keys).
    initialWallClockTime : int or datetime, optional
        The mock wall-clock time in ms (an aware ``datetime`` is converted); default now, the
        machine's clock when the driver is created (Kafka's ``System.currentTimeMillis()``, rule
        TTD-3). Pass ``0`` for a clock that does not depend on when the test runs.
    """

    def __init__(self, topology: Topology, config: Mapping[str, Any] | None = None,
                 initialWallClockTime: int | datetime | None = None) -> None:
        props = {StreamsConfig.APPLICATION_ID_CONFIG: "topology-test-driver", **(config or {})}
        self._config = StreamsConfig(props)
        self._appId = self._config.get(StreamsConfig.APPLICATION_ID_CONFIG)
        if initialWallClockTime is None:
            initialWallClockTime = time.time_ns() // 1_000_000  # TTD-3: Kafka's System.currentTimeMillis()
        elif isinstance(initialWallClockTime, datetime):
            initialWallClockTime = int(initialWallClockTime.timestamp() * 1000)
        self._wallClock = initialWallClockTime
        self._topology = topology
        self._internal = {Topology.decorate(self._appId, t, True) for t in topology.internalTopics()}
        whole = Subtopology(0, [n for s in topology.subtopologies() + topology.globalSubtopologies() for n in s.nodes],
                            list(topology.storeBuilders()))
        self._task = StreamTask(
            "0_0", whole, topology.storeBuilders(), self._config, 0,
            lambda t: Topology.decorate(self._appId, t, t in topology.internalTopics()),
            lambda t: 1,
        )
        self._task.logPrefix = "topology-test-driver "  # Kafka's TopologyTestDriver's log prefix
        self._globalTopics = set(topology.globalTopics())
        for queue in self._task.queueOf.values():
            queue.lag = 0  # everything piped is available at once: never wait for a partition
        self._offsets: dict[str, int] = {}
        # topic -> what the topology wrote there, not read yet: (partition, timestamp, key bytes,
        # value bytes, headers) plain tuples (the cyclic GC stops tracking them; a NamedTuple per
        # output record would be walked by every full collection)
        self._outputs: dict[str, deque[tuple]] = {}
        self._task.wallClockTime = self._wallClock
        self._task.initialize()
        # metrics(): windowed rates and e2e latencies on the mock wall clock (Kafka's TTD metrics
        # run on its mock time); Kafka's thread-id tag is the creating thread's name, "main" for
        # the main thread (Java's name for it)
        self._sampled = SampledMetrics(self._config.get("metrics.sample.window.ms"),
                                       self._config.get("metrics.num.samples"))
        self._sampledTotals: dict[MetricName, float] = {}
        self._pipedSinceSync = 0
        thread = threading.current_thread()
        self._threadId = "main" if thread is threading.main_thread() else thread.name

    # ------------------------------------------------------------------ topics
    def createInputTopic(self, topicName: str, keySerializer: Serde | None = None,
                         valueSerializer: Serde | None = None, startTimestamp: int | datetime | None = None,
                         autoAdvance: int | timedelta = 0) -> TestInputTopic:
        """An input topic; ``None`` serdes use ``default.key.serde``/``default.value.serde`` (or the
        source's serdes when the topic is read by exactly one source with its own serdes).
        ``keySerializer``/``valueSerializer`` may be a ``Serde`` or a ``Serializer``
        (``Serdes.String().serializer()``). Records piped without a timestamp get the topic's
        current time: ``startTimestamp`` (ms or an aware ``datetime``), default now, the
        machine's clock when the topic is created (Kafka's ``Instant.now()``, not the driver's
        mock wall clock), advanced by ``autoAdvance`` after each such record."""
        q = self._queueOf(topicName) or self._task.queueOf.get(globalQueueKey(topicName, 0))
        if q is None:
            raise ValueError(f"Unknown topic: {topicName}")
        if isinstance(startTimestamp, datetime):
            startTimestamp = int(startTimestamp.timestamp() * 1000)
        return TestInputTopic(
            self, topicName, keySerializer or q._keySerde, valueSerializer or q._valueSerde,
            time.time_ns() // 1_000_000 if startTimestamp is None else startTimestamp,  # Kafka: Instant.now()
            toMillis(autoAdvance, "autoAdvance"),
        )

    def createOutputTopic(self, topicName: str, keyDeserializer: Serde | None = None,
                          valueDeserializer: Serde | None = None) -> TestOutputTopic:
        """An output topic; ``None`` deserializers use the serdes of the sink writing ``topicName``
        (or of the only ``TopicNameExtractor`` sink), else the defaults. Each may be a ``Serde``
        or a ``Deserializer`` (``Serdes.Long().deserializer()``)."""
        sinks = [n for s in self._topology.subtopologies() for n in s.nodes if isinstance(n, SinkNodeSpec)]
        dynamic = [n for n in sinks if n.topic is None]
        sink = next((n for n in sinks if n.topic == topicName), dynamic[0] if len(dynamic) == 1 else None)
        keySerde = keyDeserializer or (sink and sink.keySerde) or self._config.defaultKeySerde()
        valueSerde = valueDeserializer or (sink and sink.valueSerde) or self._config.defaultValueSerde()
        return TestOutputTopic(self, topicName, keySerde, valueSerde)

    def producedTopicNames(self) -> set[str]:
        return set(self._outputs)

    # ------------------------------------------------------------------ processing
    def _pipeRecord(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int, headers: tuple) -> None:
        self._pipedSinceSync += 1
        if self._pipedSinceSync >= 65536:  # bound the timestamps kept for record-e2e-latency
            self._syncMetrics()
        if topic in self._globalTopics:  # TTD-4: a global record updates the global store at once
            offset = self._offsets.get(topic, 0)
            self._offsets[topic] = offset + 1
            self._task.addRecords(globalQueueKey(topic, 0), [RawRecord(offset, timestamp, key, value, headers)], lag=0)
            applyGlobalRecords(self._task)
            self._routeProduced()
            return
        task = self._task
        fused = task._fastPath
        if topic not in task.queueOf:  # a topic of a pattern source
            self._enqueue(topic, key, value, timestamp, headers)
            self._completeAllProcessableWork()
            return
        if fused is not None and not task._streamTimeHeap and not task.commitCallbacks:
            # _completeAllProcessableWork's fused-loop case: the record, then what it wrote
            offset = self._offsets.get(topic, 0)
            queue = task.queueOf[topic]
            rec = queue.pollAlone(offset, timestamp, key, value, headers)
            task.wallClockTime = self._wallClock
            try:
                if rec is not None:  # the fused loop's step for it, without queueing it
                    self._offsets[topic] = offset + 1
                    queue.lag = 0
                    fused.processPolled(rec)
                else:
                    self._enqueue(topic, key, value, timestamp, headers)
                    fused(None)
            finally:
                self._routeProduced()
            return
        self._enqueue(topic, key, value, timestamp, headers)
        self._completeAllProcessableWork()

    def _processesQueueAtOnce(self, topic: str) -> bool:
        """Whether processing records of ``topic`` one by one (TTD-1) is processing them all at once."""
        task = self._task
        return (topic not in self._globalTopics and topic in task.queueOf and task._fastPath is not None
                and not task._streamTimeHeap and not task.commitCallbacks
                and task.queueOf[topic].extractsMetadataTimestamp())

    def _processQueued(self, topic: str) -> None:
        """Process the records queued by ``TestInputTopic._pipeAll``; if one fails, what was written
        is routed and the records queued after it are dropped, as if never piped."""
        try:
            self._completeAllProcessableWork()
            self._syncMetrics()
        except BaseException:
            queue = self._task.queueOf[topic]
            self._offsets[topic] -= queue.size()
            queue.head = queue._headRaw = None
            queue._raw.clear()
            raise

    def _queueOf(self, topic: str):
        """The task's queue of ``topic``: its own, or (Kafka TTD's ``getInputTopicOrPatternPartition``)
        the queue of the first pattern source matching it; None if there is none."""
        queue = self._task.queueOf.get(topic)
        if queue is None:
            queue = next((q for q in self._task.queueOf.values()
                          if q.recordTopics is not None and re.fullmatch(q.topic, topic)), None)
        return queue

    def _enqueue(self, topic, key, value, timestamp, headers) -> None:
        queue = self._queueOf(topic)
        offset = self._offsets.get(queue.topic, 0)  # a pattern's matching topics share its partition's offsets
        self._offsets[queue.topic] = offset + 1
        if queue.recordTopics is not None:
            queue.recordTopics[offset] = topic
        queue.addRawRecords((_tupleNew(RawRecord, (offset, timestamp, key, value, headers, None)),))
        queue.lag = 0

    def _completeAllProcessableWork(self) -> None:
        # TTD-1: process, punctuate on stream time, route repartition records back, until idle;
        # what a failing record wrote before it failed is routed too (Kafka's producer sent it)
        try:
            self._processAndRoute()
        except BaseException:
            self._routeProduced()
            raise

    def _processAndRoute(self) -> None:
        task = self._task
        heap = task._streamTimeHeap
        if task._fastPath is not None and not heap and not task.commitCallbacks:
            # the task's fused loop (one input partition, so no repartition records to route
            # back): with no punctuator scheduled and nothing to flush on commit, TTD-1's
            # process/punctuate/commit per record is processing every queued record
            task.processAll(self._wallClock)
            self._routeProduced()
            return
        while task.process(self._wallClock):
            if heap:  # nothing scheduled: nothing to punctuate
                task.maybePunctuateStreamTime()
            task.commit()
            self._routeProduced()
        self._routeProduced()

    def _routeProduced(self) -> None:
        """Move what the task wrote to the output topics' queues; records of internal topics go
        back into the task."""
        produced = self._task.produced  # ProducedRecord: topic, partition, timestamp, key, value, headers
        if not produced:
            return
        internal = self._internal
        topic = produced[0][0]
        if (topic not in internal and countOf(map(_topicOf, produced), topic) == len(produced)
                and ProducedColumns not in map(type, produced)):
            records = self._outputs.get(topic)
            if records is None:
                records = self._outputs[topic] = deque()
            records.extend(map(_withoutTopic, produced))  # one output topic: no Python loop
            produced.clear()
            return
        produced = self._task.drainProducedChunks()
        for r in produced:
            topic = r[0]
            if topic in internal:
                for topic, _, timestamp, key, value, headers in (r.records() if type(r) is ProducedColumns else (r,)):
                    self._enqueue(topic, key, value, timestamp, headers)
            elif type(r) is ProducedColumns:
                self._outputQueue(topic).extend(r.rows())
            else:
                self._outputQueue(topic).append(r[1:])

    def _outputQueue(self, topic: str) -> deque:
        records = self._outputs.get(topic)
        if records is None:
            records = self._outputs[topic] = deque()
        return records

    def advanceWallClockTime(self, advance: int | timedelta) -> None:
        """Advance the mock wall clock by ``advance`` (ms or timedelta), then process what is processable."""
        self._syncMetrics()  # what happened so far, at the time it happened
        self._wallClock += toMillis(advance, "advance")
        self._task.maybePunctuateSystemTime(self._wallClock)  # TTD-3
        self._task.commit()
        self._routeProduced()
        self._completeAllProcessableWork()

    # ------------------------------------------------------------------ stores and metrics
    def getStateStore(self, name: str) -> Any:
        return self._task.stores.get(name)

    def _cacheOf(self, name: str):
        caches = getattr(self._task, "recordCache", None)
        return None if caches is None else caches.byStore.get(name)

    def getKeyValueStore(self, name: str) -> Any:
        """The key-value store ``name``, or None; a timestamped (KTable) store is shown with plain
        values, as Kafka's driver does. Iterators have ``hasNext()``/``next()``/``close()``."""
        store = self._task.stores.get(name)
        return PlainValueStore(store) if isinstance(store, TimestampedKeyValueStore) else (
            store if isinstance(store, KeyValueStore) else None)

    def getTimestampedKeyValueStore(self, name: str) -> Any:
        """The timestamped key-value store ``name`` (values are ``ValueAndTimestamp``), or None."""
        store = self._task.stores.get(name)
        return store if isinstance(store, TimestampedKeyValueStore) else None

    def getVersionedKeyValueStore(self, name: str) -> Any:
        """The versioned key-value store ``name`` (``get(key)``, ``get(key, asOfTimestamp)`` ->
        ``VersionedRecord`` or None), or None (Kafka ``getVersionedKeyValueStore``)."""
        store = self._task.stores.get(name)
        return store if isinstance(store, VersionedKeyValueStore) else None

    def getWindowStore(self, name: str) -> Any:
        """The window store ``name`` with plain values (Kafka's ``WindowStoreFacade`` for a DSL
        window aggregation's timestamped store), read through its record cache: a cached window
        the store dropped past its retention is still shown (Kafka ``CachingWindowStore``); or None."""
        store = self._task.stores.get(name)
        if getattr(store, "retainDuplicates", False):  # a stream-stream join's store: no cache, plain values
            return store
        return WindowStoreView(store, self._cacheOf(name), True) if isinstance(store, WindowStore) else None

    def getTimestampedWindowStore(self, name: str) -> Any:
        """As ``getWindowStore`` with ``ValueAndTimestamp`` values, for a timestamped window store; or None."""
        store = self._task.stores.get(name)
        ok = isinstance(store, WindowStore) and store.timestamped
        return WindowStoreView(store, self._cacheOf(name), False) if ok else None

    def getSessionStore(self, name: str) -> Any:
        """The session store ``name`` read through its record cache, as Kafka's ``CachingSessionStore``:
        a session past the store's retention that the cache still holds is returned by
        ``fetch``/``findSessions``/``fetchSession`` (rule ST-9); or None."""
        store = self._task.stores.get(name)
        return SessionStoreView(store, self._cacheOf(name)) if isinstance(store, SessionStore) else None

    def getAllStateStores(self) -> dict[str, Any]:
        return dict(self._task.stores)

    def metrics(self) -> dict[MetricName, float]:
        """The metrics by ``MetricName`` (Kafka ``TopologyTestDriver#metrics``), with Kafka's
        groups and tags (``thread-id``: the thread that created the driver, ``"main"`` for the
        main thread; ``task-id`` ``"0_0"``):

        - ``stream-task-metrics``: ``process-total``/``-rate``, ``dropped-records-total``/``-rate``,
          ``punctuate-total``/``-rate``;
        - ``stream-processor-node-metrics``: ``record-e2e-latency-avg``/``-min``/``-max`` (ms) of
          source and terminal nodes, ``process-total``/``-rate`` (Kafka: source nodes only; kspark
          counts every node);
        - ``kspark-dropped-records``: ``dropped-records-total`` per node and ``reason``;
        - with ``metrics.recording.level`` ``DEBUG`` (Kafka's level of these sensors; nothing is
          recorded at the default ``INFO``): ``stream-state-metrics`` of the task's key-value,
          window and session stores (tags ``thread-id``, ``task-id``, ``<store type>-state-id``
          as Kafka's ``metricsScope()``: ``rocksdb``, ``in-memory``, ``rocksdb-window``...):
          ``<op>-rate`` (calls per second) and ``<op>-latency-avg``/``-max`` (ns per call) for
          ``put``, ``get``, ``put-if-absent``, ``put-all``, ``delete``, ``range``, ``all``,
          ``prefix-scan`` (key-value), ``put``, ``fetch`` (window), ``put``, ``remove``,
          ``fetch`` (session), from the start (a rate 0, a latency NaN before the first call), as
          Kafka's ``StateStoreMetrics`` (see ``kspark.runtime.store_metrics``).

        Rates and latencies are windowed on the mock wall clock as Kafka's are
        (``metrics.num.samples`` windows of ``metrics.sample.window.ms``): a rate is per second,
        over at least ``(num.samples - 1)`` windows; a latency without records in the live
        windows is NaN. Kafka's latencies of process and punctuate calls (DEBUG, 0 on its mock
        clock) are not reported.
        """
        self._syncMetrics()
        now, thread = self._wallClock, self._threadId
        out = {withThreadId(n, thread): v for n, v in self._sampledTotals.items()}
        for name in self._sampledTotals:
            rate = rateName(name)
            if rate is not None:
                out[withThreadId(rate, thread)] = 0.0
        for op in self._task.metrics.storeOps:  # Kafka's sensors exist from the store's init
            out[withThreadId(MetricName(f"{op.name}-rate", op.group, op.tags), thread)] = 0.0
            for stat in ("avg", "max"):
                out[withThreadId(MetricName(f"{op.name}-latency-{stat}", op.group, op.tags), thread)] = math.nan
        out.update({withThreadId(n, thread): v for n, v in self._sampled.values(now).items()})
        return out

    def _syncMetrics(self) -> None:
        """Hand what the task counted and the e2e latencies of the records it processed since the
        last call to the windowed metrics, at the current mock wall-clock time (every record
        since the last call was processed at it: the clock moves only in ``advanceWallClockTime``)."""
        self._pipedSinceSync = 0
        now, metrics, sampled = self._wallClock, self._task.metrics, self._sampled
        metrics.recordLatencies(now, now)
        for name, (n, total, lo, hi) in metrics.latencySummaries().items():
            sampled.record(name, "stat", now, total, n, lo, hi)
        metrics.latencies.clear()
        metrics.histogram.clear()
        for op, counter in metrics.storeOps.items():
            calls, ns, maxNs = counter
            if calls:
                sampled.record(MetricName(f"{op.name}-rate", op.group, op.tags), "rate", now, calls)
                latency = MetricName(f"{op.name}-latency", op.group, op.tags)
                sampled.record(latency, "stat", now, ns, calls, maxNs, maxNs)
                counter[0] = counter[1] = counter[2] = 0
        totals, before = metrics.all(), self._sampledTotals
        for name, value in totals.items():
            delta = value - before.get(name, 0)
            rate = rateName(name)
            if delta and rate is not None:
                sampled.record(rate, "rate", now, delta)
        self._sampledTotals = totals

    def close(self) -> None:
        self._task.close()

    def __enter__(self) -> "TopologyTestDriver":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_tupleNew = tuple.__new__
_topicOf, _withoutTopic = itemgetter(0), itemgetter(slice(1, None))
