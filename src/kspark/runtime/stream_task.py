"""The exact task engine: one Kafka Streams task, host-agnostic (no Spark import).

Both hosts drive this class: ``TopologyTestDriver`` record by record, the Spark host once per
task and micro-batch.
"""

from __future__ import annotations

import gc
import logging
from itertools import count, repeat
from time import perf_counter_ns as _perfNs
from typing import Any, Callable, NamedTuple

from ..config import StreamsConfig
from ..errors import ErrorHandlerContext, ProcessorStateException, StreamsException, handleError
from .._duration import toMillis
from ..processor import Cancellable, ProcessorContext, PunctuationType, Record, RecordMetadata
from ..serialization import IncompatibleTypeException, javaSerializerName, javaTypeName
from ..topology import Subtopology
from ..topology._topology import ProcessorNodeSpec, SinkNodeSpec, SourceNodeSpec
from .global_state import ReadOnlyStore, globalRecordQueues, globalStoreTopicsOf
from .metrics import NODE_GROUP, TASK_GROUP, MetricName, Metrics
from .partitioner import partitionForKey
from .punctuation_queue import PunctuationQueue, PunctuationSchedule
from .record_queue import PartitionGroup, RawRecord, RecordQueue
from .store_metrics import meterStores, recordsStoreMetrics

__all__ = ["ProducedColumns", "ProducedRecord", "RecordContext", "StreamTask", "encodeHeaders", "decodeHeaders"]

log = logging.getLogger("kspark.runtime")

_tupleNew = tuple.__new__  # builds a NamedTuple from a tuple ~2x faster than calling the class


class _Discard:
    """A list that keeps nothing (a global sub-topology's sink: no e2e latency)."""

    @staticmethod
    def append(item) -> None:
        pass


def _globalNodes(subtopology) -> dict[str, bool]:
    """Node name -> whether all its records come from global sources (Kafka's global thread
    records no e2e latency for them)."""
    specs = {spec.name: spec for spec in subtopology.nodes}
    out: dict[str, bool] = {}

    def isGlobal(name: str) -> bool:
        if name not in out:
            spec = specs[name]
            out[name] = False  # a cycle (none in a valid topology) ends here
            parents = [p for p in getattr(spec, "parents", []) if p in specs]
            out[name] = bool(getattr(spec, "isGlobal", False)) or (bool(parents) and all(map(isGlobal, parents)))
        return out[name]

    for name in specs:
        isGlobal(name)
    return out


_DROP = object()  # a fused chain step's result when its processor forwards nothing (see StreamTask._fuseChains)


class ProducedRecord(NamedTuple):
    """A record a sink wrote: raw topic name, partition, timestamp (ms), serialized key/value, headers."""

    topic: str
    partition: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple


class ProducedColumns(NamedTuple):
    """Consecutive records a sink wrote to one topic, as columns (written by column-at-a-time
    loops such as ``session_count_batch``): ``partitions`` and ``timestamps`` (ms) are int64 numpy
    arrays, ``keys`` and ``values`` pyarrow binary arrays (null = None), ``headers`` a list of
    tuples or None when every record has none."""

    topic: str
    partitions: Any
    timestamps: Any
    keys: Any
    values: Any
    headers: list | None

    def records(self) -> list[ProducedRecord]:
        n = len(self.timestamps)
        headers = self.headers if self.headers is not None else [()] * n
        return list(map(_tupleNew, [ProducedRecord] * n, zip(
            [self.topic] * n, self.partitions.tolist(), self.timestamps.tolist(), self.keys.to_pylist(),
            self.values.to_pylist(), headers)))

    def rows(self):
        """The records without their topic, as plain (partition, timestamp, key, value, headers) tuples."""
        headers = self.headers if self.headers is not None else repeat((), len(self.timestamps))
        return zip(self.partitions.tolist(), self.timestamps.tolist(), self.keys.to_pylist(), self.values.to_pylist(),
                   headers)


def encodeHeaders(headers: tuple) -> bytes | None:
    """Headers as stored in a topic's ``headers`` column (None when there are none)."""
    if not headers:
        return None
    import json

    return json.dumps([[k, None if v is None else bytes(v).hex()] for k, v in headers]).encode()


def decodeHeaders(data: bytes | None) -> tuple:
    if not data:
        return ()
    import json

    return tuple((k, None if v is None else bytes.fromhex(v)) for k, v in json.loads(data))


class _Node:
    __slots__ = ("name", "children", "processCounter", "processed", "process", "processor", "sink", "fused", "stamps",
                 "stampArrays")

    def __init__(self, name: str) -> None:
        self.name = name
        self.fused = None  # a source's fused chain: its first node's call (StreamTask._fuseChains)
        self.children: list[_Node] = []
        self.processed = 0  # process-total, read through Metrics.addSource
        self.processor = None  # a processor node's Processor
        self.sink: SinkWriter | None = None  # a sink node's writer
        # a source or terminal node's record timestamps, kept for record-e2e-latency
        # (Metrics.addLatencyNode); None for other nodes
        self.stamps: list | None = None
        self.stampArrays: list | None = None


class _Context(ProcessorContext):
    """``ProcessorContext`` of one task; tracks the current node and record (Kafka ``ProcessorContextImpl``)."""

    def __init__(self, task: "StreamTask") -> None:
        self._task = task
        self.currentNode: _Node | None = None
        self.metadata: RecordMetadata | None = None
        # the input record being processed, as polled (StampedRecord: its rawKey/rawValue are the
        # ErrorHandlerContext's sourceRawKey/sourceRawValue); None in a punctuator, a cache flush
        # or for a buffered record, whose record context Kafka keeps without the raw record
        self.sourceRecord = None

    def forward(self, record: Record, childName: str | None = None) -> None:
        node = self.currentNode
        children = node.children
        if childName is None and len(children) == 1:  # the common chain: one child, no loop
            child = self.currentNode = children[0]
            try:
                child.process(record)
            finally:
                self.currentNode = node
            return
        if childName is not None:
            children = [c for c in children if c.name == childName]
            if not children:
                raise StreamsException(f"Unknown downstream node: {childName} either does not exist or is not connected to this processor.")
        try:
            for child in children:
                self.currentNode = child
                child.process(record)
        finally:
            self.currentNode = node

    def getStateStore(self, name: str) -> Any:
        node = self.currentNode
        if name in self._task.globalStoreNames:  # E-1: no connection needed; read-only but to its updater
            store = self._task.stores[name]
            return store if node is not None and name in self._task.storesOf.get(node.name, ()) else ReadOnlyStore(store)
        if node is None or name not in self._task.storesOf.get(node.name, ()):
            nodeName = node.name if node else None
            raise StreamsException(
                f"Processor {nodeName} has no access to StateStore {name} as the store is not connected to the "
                "processor. If you add stores manually via '.addStateStore()' make sure to connect the added store "
                "to the processor by providing the processor name to '.addStateStore()' or connect them via "
                "'.connectProcessorAndStateStores()'. DSL users need to provide the store name to '.process()', "
                "'.processValues()', or '.transformValues()' to connect the store to the corresponding operator, or they "
                "can provide a StoreBuilder by implementing the stores() method on the Supplier itself. If you do not "
                "add stores manually, please file a bug report at https://issues.apache.org/jira/projects/KAFKA."
            )
        return self._task.stores[name]

    def recordMetadata(self) -> RecordMetadata | None:
        return self.metadata

    def schedule(self, interval, type, callback) -> Cancellable:
        ms = toMillis(interval, "interval")
        if ms < 1:
            raise ValueError("The minimum supported scheduling interval is 1 millisecond.")
        if self.currentNode is None:
            raise RuntimeError("Current node is unknown. This can happen if 'schedule()' is called outside of init() or process().")
        return self._task.schedule(self.currentNode, ms, PunctuationType(type), callback)

    def taskId(self) -> str:
        return self._task.taskId

    def applicationId(self) -> str:
        return self._task.applicationId

    def currentStreamTimeMs(self) -> int:
        return self._task.partitionGroup.streamTime

    def currentSystemTimeMs(self) -> int:
        return self._task.wallClockTime

    def appConfigs(self) -> dict:
        """The application's configuration (Kafka ``ProcessorContext#appConfigs``): every key
        given, with its value as ``StreamsConfig`` parsed it (numbers as ints, classes as
        instances); a key not given is absent (``StreamsConfig.get`` gives its default)."""
        return dict(self._task.appConfigs)

    def keySerde(self):
        """The default key serde (``default.key.serde``; Kafka ``ProcessorContext#keySerde``)."""
        return self._task.defaultKeySerde

    def valueSerde(self):
        """The default value serde (``default.value.serde``; Kafka ``ProcessorContext#valueSerde``)."""
        return self._task.defaultValueSerde

    def cachingEnabled(self) -> bool:
        """Whether ``statestore.cache.max.bytes`` > 0 (kspark internal, for the DSL's record cache)."""
        return self._task.cacheMaxBytes > 0

    def registerCommitCallback(self, callback) -> None:
        """Call ``callback()`` at every commit, as the current node (kspark internal: cache flushes)."""
        self._task.commitCallbacks.append((self.currentNode, callback))

    def registerCheckpointCallback(self, callback) -> None:
        """Call ``callback()`` before every ``checkpoint()`` (kspark internal: a record cache writes
        its entries into its node state)."""
        self._task.checkpointCallbacks.append(callback)

    def nodeState(self) -> dict:
        """A picklable dict private to the current node, kept in the task checkpoint (kspark
        internal: DSL processors keep their stream time and buffers here, so a task rebuilt from a
        checkpoint behaves exactly as the live one, like Kafka's committed processor metadata)."""
        return self._task.nodeStates.setdefault(self.currentNode.name, {})

    def sharedState(self, name: str) -> dict:
        """A picklable dict shared by the processors of this task that ask for the same ``name``,
        kept in the task checkpoint like ``nodeState`` (kspark internal: the two sides of a
        stream-stream join share one time tracker per task, Kafka's ``TimeTrackerSupplier``)."""
        return self._task.nodeStates.setdefault(f"{name}#shared", {})

    def metrics(self) -> Metrics:
        return self._task.metrics


def _serde(serde, default, defaultKey=None, defaultValue=None, applicationId=None):
    """The node's serde, or the default one; a wrapping serde (a groupBy repartition topic's
    ``ChangedSerde``) gets the default as its inner serde if it has none (Kafka ``setIfUnset``);
    one whose inner serde is the other kind (a foreign-key join's subscription value wraps the
    primary *key*) takes both defaults with ``withDefaults(defaultKey, defaultValue)``, and the
    application id for its pseudo topic (``withApplicationId``)."""
    if serde is None:
        return default
    withDefaults = getattr(serde, "withDefaults", None)
    if withDefaults is not None:
        serde = withDefaults(defaultKey, defaultValue)
        forApplication = getattr(serde, "withApplicationId", None)
        return serde if forApplication is None or applicationId is None else forApplication(applicationId)
    withDefault = getattr(serde, "withDefault", None)
    return serde if withDefault is None else withDefault(default)


class SinkWriter:
    """Serializes, partitions and appends a sink node's records to the task's produced list
    (Kafka ``SinkNode`` + ``RecordCollector``).

    ``write(key, value, timestamp, headers)``; raises ``StreamsException`` on a serialization
    error or a partitioner result out of range.

    A ``StreamPartitioner`` (rule DP-1, Kafka 4's ``partitions(topic, key, value, numPartitions)``)
    returns None (the default partitioning), a set of partitions (the record is written to each,
    in ascending order: KIP-837's multicast; an empty set drops the record and counts it,
    ``onDropped()``), or one int (Kafka 3's ``partition()``).
    """

    __slots__ = ("name", "topic", "keySerde", "valueSerde", "partitioner", "baseKey", "_numPartitions",
                 "_n", "_produced", "_roundRobin", "extractor", "_context", "_onDropped")

    def __init__(self, name: str, topic: str | None, keySerde, valueSerde, partitioner, numPartitions, produced: list,
                 extractor=None, context=None, onDropped=None) -> None:
        self.name, self.topic, self.keySerde, self.valueSerde = name, topic, keySerde, valueSerde
        self.partitioner = partitioner
        # a TopicNameExtractor sink (topic None): extractor(key, value, RecordContext) per record
        self.extractor, self._context = extractor, context
        # a windowed key serde hashes only the base key (Kafka WindowedStreamPartitioner, DP-1)
        self.baseKey = getattr(keySerde, "baseKeyBytes", None)
        self._numPartitions, self._n, self._produced, self._roundRobin = numPartitions, None, produced, count()
        self._onDropped = onDropped

    def numPartitions(self) -> int:
        if self._n is None:  # looked up lazily: an internal topic's count is known at run time
            try:
                self._n = self._numPartitions(self.topic)
            except KeyError:
                raise StreamsException(f"Sink {self.name}: topic {self.topic} is unknown to this host "
                                       "(a TopicNameExtractor must pick an existing topic)") from None
        return self._n

    def writeExtracted(self, key, value, timestamp: int, headers: tuple) -> None:
        """``write`` to the topic the ``TopicNameExtractor`` picks for this record (Kafka ``SinkNode``)."""
        meta = self._context.metadata
        topic = self.extractor(key, value, RecordContext(meta, timestamp, headers))
        if not isinstance(topic, str):
            raise StreamsException(f"TopicNameExtractor of sink {self.name} returned {topic!r}, not a topic name")
        self.topic, self._n = topic, None
        try:
            self.write(key, value, timestamp, headers)
        finally:
            self.topic, self._n = None, None

    def write(self, key, value, timestamp: int, headers: tuple) -> None:
        topic = self.topic
        n = self._n if self._n is not None else self.numPartitions()
        partitioner = self.partitioner
        # Kafka's RecordCollectorImpl asks the partitioner before it serializes
        partitions = partitioner(topic, key, value, n) if partitioner else None
        keyBytes = self._serialize(self.keySerde, "key", topic, key, partitions, timestamp, headers)
        valueBytes = self._serialize(self.valueSerde, "value", topic, value, partitions, timestamp, headers)
        if partitions is None:
            # DP-1: the producer hashes a non-null key; a null key is spread without hashing
            # (Kafka's sticky partitioner; here a deterministic round robin per task and sink).
            hashed = keyBytes if self.baseKey is None or keyBytes is None else self.baseKey(keyBytes)
            partition = partitionForKey(hashed, n) if hashed is not None else next(self._roundRobin) % n
            self._produced.append(_tupleNew(ProducedRecord, (topic, partition, timestamp, keyBytes, valueBytes, headers)))
            return
        if isinstance(partitions, int) and not isinstance(partitions, bool):
            partitions = (partitions,)
        else:
            try:
                partitions = sorted(partitions)
            except TypeError:
                raise StreamsException(f"Partitioner of sink {self.name} returned {partitions!r} for topic {topic}: "
                                       "expected None, a set of partitions or a partition") from None
            if not partitions:
                log.warning("Skipping record as partitioner returned empty partitions. topic=[%s]", topic)
                if self._onDropped is not None:
                    self._onDropped()
                return
        for partition in partitions:
            if isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition < n:
                raise StreamsException(f"Partitioner of sink {self.name} returned partition {partition!r} for topic "
                                       f"{topic} with {n} partitions")
            self._produced.append(_tupleNew(ProducedRecord, (topic, partition, timestamp, keyBytes, valueBytes, headers)))


    def _serialize(self, serde, what: str, topic: str, data, partitions, timestamp: int, headers: tuple) -> bytes | None:
        try:
            return serde.serialize(topic, data)
        except Exception as e:
            if not isinstance(e, IncompatibleTypeException) and self._context is not None:
                self._productionError(e, timestamp, headers)
            raise serializationError(serde, what, topic, data, partitions, timestamp, e)

    def _productionError(self, e: Exception, timestamp: int, headers: tuple) -> None:
        """Kafka's ``DefaultProductionExceptionHandler.handleSerializationError`` (the only
        production handler kspark has): FAIL, after writing the input record's dead-letter record
        when ``errors.dead.letter.queue.topic.name`` is set (KIP-1034; the sink's processing
        handler then meets the ``StreamsException`` and may write its own)."""
        task = self._context._task
        if task._deadLetterTopic is None:
            return
        from ..errors import buildDeadLetterQueueRecord

        meta, source = self._context.metadata, self._context.sourceRecord
        context = ErrorHandlerContext(meta[0] if meta else None, meta[1] if meta else -1, meta[2] if meta else -1,
                                      timestamp, headers, self.name, task.taskId,
                                      None if source is None else source.rawKey,
                                      None if source is None else source.rawValue)
        task.sendDeadLetters([buildDeadLetterQueueRecord(task._deadLetterTopicName, context.sourceRawKey, context.sourceRawValue, context, e)],
                             context)


def classCastInvoking(nodeName: str, record: Record, cause) -> StreamsException:
    """What Kafka's ``ProcessorNode.process`` raises for a ``ClassCastException`` in a processor
    (kspark: a value of a type a serde cannot take, e.g. a store's or a suppress buffer's): not
    given to that node's processing handler, so the nodes above meet it (a processing error of
    theirs), or, from a cache flush, the commit."""
    key, value = record.key(), record.value()
    return StreamsException(
        f"ClassCastException invoking processor: {nodeName}. Do the Processor's input types match the deserialized "
        "types? Check the Serde setup and change the default Serdes in StreamConfig or provide correct Serdes via "
        "method parameters. Make sure the Processor can accept the deserialized input of type key: "
        f"{'unknown because key is null' if key is None else javaTypeName(key)}, and value: "
        f"{'unknown because value is null' if value is None else javaTypeName(value)}.\nNote that although incorrect "
        "Serdes are a common cause of error, the cast exception might have another cause (in user code, for example). "
        "For example, if a processor wires in a store, but casts the generics incorrectly, a class cast exception "
        "could be raised during processing, but the cause would not be wrong Serdes.")


def serializationError(serde, what: str, topic: str, data, partitions, timestamp: int, cause: Exception) -> StreamsException:
    """What a sink raises when ``serde`` fails to serialize its ``what`` ("key" or "value")
    ``data``, as Kafka's ``RecordCollectorImpl.send``: a value of a type the serializer cannot take
    (Java's ``ClassCastException``) and any other serializer error (``production.exception.handler``:
    kspark's is Kafka's default, FAIL). ``cause`` is the serde's exception."""
    if isinstance(cause, IncompatibleTypeException):
        actual = "unknown because %s is null" % what if data is None else javaTypeName(data)
        error = StreamsException(
            f"ClassCastException while producing data to topic {topic}. The {what} serializer "
            f"{javaSerializerName(serde)} is not compatible to the actual {what} type: {actual}. Change the "
            f"default {what} serde in StreamConfig or provide the correct {what} serde via method parameters "
            "(for example if using the DSL, `#to(String topic, Produced<K, V> produced)` with "
            f"`Produced.{what}Serde(WindowedSerdes.timeWindowedSerdeFrom(String.class))`).")
        error.__cause__ = cause.classCast()  # Java's text, then the serde's
    else:
        partition = partitions if isinstance(partitions, int) else None
        error = StreamsException(f"Unable to serialize record. ProducerRecord(topic=[{topic}], "
                                 f"partition=[{'null' if partition is None else partition}], timestamp=[{timestamp}]")
        error.__cause__ = cause
    return error


class RecordContext:
    """What a ``TopicNameExtractor`` sees of the record being written (Kafka ``RecordContext``):
    ``topic()``, ``partition()``, ``offset()`` of the input record (None/-1 in a punctuator),
    ``timestamp()`` (ms) and ``headers()`` of the record written."""

    __slots__ = ("_meta", "_timestamp", "_headers")

    def __init__(self, meta: RecordMetadata | None, timestamp: int, headers: tuple) -> None:
        self._meta, self._timestamp, self._headers = meta, timestamp, headers

    def topic(self) -> str | None:
        return None if self._meta is None else self._meta[0]

    def partition(self) -> int:
        return -1 if self._meta is None else self._meta[1]

    def offset(self) -> int:
        return -1 if self._meta is None else self._meta[2]

    def timestamp(self) -> int:
        return self._timestamp

    def headers(self) -> tuple:
        return self._headers


class StreamTask:
    """One task: a sub-topology instance for one input partition number (Kafka ``StreamTask``).

    Parameters
    ----------
    taskId : str
        ``"<subtopology>_<partition>"``.
    subtopology : Subtopology
        The nodes to instantiate (a host may pass several merged into one, as TopologyTestDriver does).
    storeBuilders : dict of store name -> StoreBuilder
    config : StreamsConfig
    partition : int
        The input partition number every source topic of this task is read at.
    topicName : callable
        Maps a raw topic name to the physical one (internal topics get the application id prefix).
    numPartitions : callable
        Physical topic name -> partition count, for sinks.
    """

    def __init__(
        self,
        taskId: str,
        subtopology: Subtopology,
        storeBuilders: dict,
        config: StreamsConfig,
        partition: int,
        topicName: Callable[[str], str],
        numPartitions: Callable[[str], int],
    ) -> None:
        self.taskId = taskId
        self.applicationId = config.get(StreamsConfig.APPLICATION_ID_CONFIG) or ""
        self.appConfigs = {**config.originals(), **config._values}
        self.logPrefix = f"task [{taskId}] "  # Kafka's; TopologyTestDriver's is "topology-test-driver "
        self.metrics = Metrics()
        self._punctuateCounter = MetricName("punctuate-total", TASK_GROUP, (("task-id", taskId),))
        self.punctuateNanos = 0  # time spent in punctuators (a host's punctuate-latency)
        self.produced: list[ProducedRecord] = []
        # A host's callable that takes the produced records off the task while a batch runs
        # (handOffProduced); None: they stay in ``produced`` until drained.
        self.producedListener: Callable[[list], None] | None = None
        self.wallClockTime = 0
        self.context = _Context(self)
        defaultKey, defaultValue = config.defaultKeySerde(), config.defaultValueSerde()
        self.defaultKeySerde, self.defaultValueSerde = defaultKey, defaultValue
        self._deserializationHandler = config.deserializationExceptionHandler()
        self._processingHandler = config.processingExceptionHandler()
        dlq = self._deadLetterTopicName = config.get(StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG)
        self._deadLetterTopic = None if dlq is None else topicName(dlq)
        self._topicName, self._numPartitions = topicName, numPartitions
        self.stores = {
            name: storeBuilders[name].build(defaultKey, defaultValue) for name in subtopology.stores
        }
        for name, store in self.stores.items():
            if hasattr(store, "_serdeTopic"):  # Kafka's MeteredKeyValueStore: serdes see ProcessorContextUtils.changelogFor
                store._serdeTopic = f"{self.applicationId}-{name}-changelog"
            forApplication = getattr(getattr(store, "_valueSerde", None), "withApplicationId", None)
            if forApplication is not None:  # the FK subscription store's values: their pseudo topic
                store._valueSerde = forApplication(self.applicationId)
            if hasattr(store, "droppedCounter"):  # session stores count puts dropped as expired (ST-7)
                store.droppedCounter = lambda name=name: self.metrics.recordDropped(taskId, name, "expired store segment")
            if hasattr(store, "expiredCounter"):  # a versioned store's puts past its grace period (Kafka's
                # RocksDBVersionedStore records them on the task's dropped-records sensor)
                store.expiredCounter = lambda name=name: self.metrics.recordDropped(taskId, name, "expired versioned put")
        # stores a host keeps outside the checkpoint (the Spark host's local RocksDB stores,
        # kspark.state._persistent); the others are part of checkpoint()
        self.persistentStores: set[str] = set()
        self.legacySnapshots: dict[str, Any] = {}
        self.globalPositionsKnown = True  # False after restore() of a checkpoint without them
        self.nodeStates: dict[str, dict] = {}
        self.checkpointCallbacks: list = []
        self.cacheMaxBytes = config.get(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG)
        self.commitCallbacks: list = []
        self.storesOf: dict[str, set[str]] = {}
        nodes: dict[str, _Node] = {}
        self._processors: list = []
        queues: list[RecordQueue] = []
        globalQueues: list[RecordQueue] = []
        self.queueOf: dict[str, RecordQueue] = {}
        self._nullKeyCounters: dict[str, Any] = {}
        self._sourceNodes: list[_Node] = []
        self.fusedChains: list[list[str]] = []  # node names of each chain _fuseChains fused
        globalNodes = _globalNodes(subtopology)
        for spec in subtopology.nodes:
            node = _Node(spec.name)
            node.processCounter = MetricName(
                "process-total", NODE_GROUP, (("task-id", taskId), ("processor-node-id", spec.name))
            )
            self.metrics.addSource(node)
            if isinstance(spec, SourceNodeSpec) and not spec.isGlobal:
                self.metrics.addInputNode(node, taskId)
                self.metrics.addLatencyNode(node, taskId, source=True, output=False)
            elif isinstance(spec, SinkNodeSpec) and not globalNodes.get(spec.name):
                # terminal (Kafka's e2e sensor of a sink); an output unless it writes an internal topic
                self.metrics.addLatencyNode(node, taskId, source=False,
                                            output=spec.topic is None or topicName(spec.topic) == spec.topic)
            if isinstance(spec, SourceNodeSpec):
                node.process = self._forwarder(node)
                self._sourceNodes.append(node)
                if spec.isGlobal:  # one queue per partition of a global topic (see GlobalKTable)
                    globalQueues += globalRecordQueues(self, spec, node, topicName, numPartitions, config)
                for topic in spec.topics if not spec.isGlobal else ():
                    physical = topicName(topic)
                    if partition >= numPartitions(physical):
                        # Kafka: a task only reads the partitions that exist; with topics of different
                        # sizes in one sub-topology (merge, several topics of one source) task 0_2 of
                        # a 2- and a 3-partition topic reads the second one only. A queue for the
                        # missing partition would never get data and stall the task (T-14).
                        continue
                    q = RecordQueue(
                        physical, partition,
                        _serde(spec.keySerde, defaultKey, defaultKey, defaultValue, self.applicationId),
                        _serde(spec.valueSerde, defaultValue, defaultKey, defaultValue, self.applicationId),
                        spec.timestampExtractor or config.defaultTimestampExtractor(),
                        self.metrics, taskId, spec.name,
                    )
                    q.sourceNode = node
                    q.onDeserializationError = self._onDeserializationError
                    if spec.topicPattern is not None:  # one queue for every matching topic
                        q.recordTopics, q._pollsAlone = {}, False
                    queues.append(q)
                    self.queueOf[physical] = q
            elif isinstance(spec, ProcessorNodeSpec):
                processor = spec.supplier()
                if processor is None or not hasattr(processor, "process"):
                    raise StreamsException(
                        f"Processor supplier of {spec.name} returned {processor!r}, not a Processor"
                    )
                node.process = self._processorCall(node, processor)
                node.processor = processor
                self._processors.append((node, processor))
                self.storesOf[spec.name] = set(spec.stores)
            else:
                topic = None if spec.topic is None else topicName(spec.topic)
                node.process = self._sinkCall(node, spec, topic, numPartitions, defaultKey, defaultValue)
            nodes[spec.name] = node
        for spec in subtopology.nodes:
            for parent in getattr(spec, "parents", []):
                nodes[parent].children.append(nodes[spec.name])
        for node, _ in self._processors:  # terminal processors: Kafka records their records' e2e latency
            if not node.children and not globalNodes.get(node.name):
                self.metrics.addLatencyNode(node, taskId, source=False, output=False)
                node.process = self._terminal(node.process, node.stamps)
        globalTopics = globalStoreTopicsOf(subtopology)
        self.globalStoreNames = set(globalTopics)
        for name, topic in globalTopics.items():  # a global store's serdes see its source topic, not a changelog name
            if hasattr(self.stores.get(name), "_serdeTopic"):
                self.stores[name]._serdeTopic = topicName(topic)
        # global queues first: on equal timestamps a global update is applied before the stream record
        self.partitionGroup = PartitionGroup(globalQueues + queues, config.get(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG))
        self._queues = {PunctuationType.STREAM_TIME: PunctuationQueue(), PunctuationType.WALL_CLOCK_TIME: PunctuationQueue()}
        self._registered: dict[tuple, int] = {}  # (node, type, interval) -> schedules registered so far
        self._cancellables: dict[tuple, Cancellable] = {}
        self._restoredSchedules: dict[tuple, int] = {}  # schedule key -> next fire time, from a checkpoint
        self._fastPath = None  # set by initialize(), see _buildFastPath
        self._prefillPlan = None  # set by the first prefillStores()
        # metrics.recording.level DEBUG: Kafka's store-level metrics (put-rate, get-rate...) of the
        # task's own stores, counted by wrappers of their methods (kspark.runtime.store_metrics)
        self.storeMetrics = recordsStoreMetrics(config)
        if self.storeMetrics:
            meterStores({n: s for n, s in self.stores.items() if n not in self.globalStoreNames}, taskId,
                        self.metrics.storeOps)
        self._streamTimeHeap = self._queues[PunctuationType.STREAM_TIME]._heap  # empty: nothing scheduled

    # ------------------------------------------------------------------ node behaviour
    # Whether initialize() fuses chains of built-in processors (_fuseChains); False keeps every
    # node on the per-node path (tests compare both).
    fuseChains = True

    def _forwarder(self, node: _Node):
        context = self.context
        stamps = node.stamps
        if stamps is None:  # a global source: no e2e latency
            def process(record: Record) -> None:
                node.processed += 1
                context.currentNode = node
                context.forward(record)

            return process

        def process(record: Record) -> None:
            node.processed += 1
            stamps.append(record._timestamp)
            context.currentNode = node
            context.forward(record)

        return process

    @staticmethod
    def _terminal(process, stamps: list):
        """A terminal processor's ``process``, its record's timestamp kept once processed (Kafka's
        ``ProcessorContextImpl.forwardInternal``: the e2e latency of a terminal child)."""
        def terminal(record: Record) -> None:
            process(record)
            stamps.append(record._timestamp)

        return terminal

    def _processorCall(self, node: _Node, processor):
        call, failed = processor.process, self._processingFailed

        def process(record: Record) -> None:
            node.processed += 1
            try:
                call(record)
            except Exception as e:
                failed(node, record, e)

        return process

    def _processingFailed(self, node: _Node, record: Record, e: Exception) -> None:
        """What a processor node does with an exception raised by its processor or below it
        (Kafka's ``ProcessorNode.process``): returns when the processing handler says CONTINUE
        (the record is dropped and counted), raises otherwise. ``record`` is the node's input."""
        if getattr(e, "failedProcessing", False):  # a descendant's failure, handled there (FAIL)
            raise e
        if isinstance(e, IncompatibleTypeException):  # Java's ClassCastException: not this node's handler's
            raise classCastInvoking(node.name, record, e) from e.classCast()  # KIP-1033: handled at the failing node; siblings go on
        # (Kafka's ProcessorNode: a StreamsException too, such as a sink's serialization
        # error, which a sink has no handler of its own for)
        self._onProcessingError(node, record, e)

    # ------------------------------------------------------------------ error handling
    def _errorContext(self, node: _Node | None, record: Record | None, timestamp: int = -1) -> ErrorHandlerContext:
        """Kafka ``DefaultErrorHandlerContext`` of the current record context: the input record's
        topic, partition, offset and raw bytes (none in a punctuator), the failing node's record's
        timestamp and headers (``timestamp`` in a punctuator)."""
        meta, source = self.context.metadata, self.context.sourceRecord
        return ErrorHandlerContext(
            meta[0] if meta else None, meta[1] if meta else -1, meta[2] if meta else -1,
            record.timestamp() if record is not None else timestamp, record._headers if record is not None else (),
            node.name if node else None, self.taskId,
            source.rawKey if source is not None else None, source.rawValue if source is not None else None,
        )

    def _onProcessingError(self, node: _Node, record: Record | None, e: Exception) -> None:
        context = self._errorContext(node, record)
        if self._handle(self._processingHandler, context, record, e):
            self.metrics.recordDropped(self.taskId, node.name, f"processing error: {type(e).__name__}")
            return
        where = (f"topic={context.topic}, partition={context.partition}, offset={context.offset}"
                 if context.topic is not None else "in a punctuator")
        failed = StreamsException(f"Exception caught in process. taskId={self.taskId}, processor={node.name}, {where}, "
                                  f"stacktrace={type(e).__name__}: {e}")
        failed.failedProcessing = True  # Kafka's FailedProcessingException: the nodes above re-raise it
        raise failed from e

    def _onDeserializationError(self, queue: RecordQueue, raw: RawRecord, e: Exception) -> bool:
        context = ErrorHandlerContext(queue.topic, queue.partition, raw.offset, raw.timestamp, raw.headers,
                                      queue.sourceNodeName, self.taskId, raw.key, raw.value)
        if not self._handle(self._deserializationHandler, context, raw, e):
            return False
        self.metrics.recordDropped(self.taskId, queue.sourceNodeName, "deserialization error")
        return True

    def _handle(self, handler, context: ErrorHandlerContext, record, e: Exception) -> bool:
        """Ask ``handler`` (Kafka 4's ``handleError``, or 3's ``handle``); send the dead-letter
        records it returns, whether it resumes or fails (Kafka's ``ProcessorNode``,
        ``RecordDeserializer``, ``StreamTask.punctuate``); return whether to resume."""
        response = handleError(handler, context, record, e)
        records = response.deadLetterQueueRecords()
        if records:
            self.sendDeadLetters(records, context)
        return response.result().name == "RESUME"

    def sendDeadLetters(self, records, context: ErrorHandlerContext) -> None:
        """Write a handler's dead-letter records (``ProducerRecord``, KIP-1034), as Kafka's
        ``RecordCollector.send(producerRecord)``: to their own partition, else the key's
        (murmur2, a null key: the input record's partition)."""
        for r in records:
            topic = self._topicName(r.topic)
            n = self._numPartitions(topic)
            partition = r.partition if r.partition is not None else (
                partitionForKey(r.key, n) if r.key is not None else max(context.partition, 0) % n)
            self.produced.append(ProducedRecord(topic, partition, max(r.timestamp, 0), r.key, r.value,
                                                tuple(r.headers or ())))

    def _sinkCall(self, node: _Node, spec: SinkNodeSpec, topic: str | None, numPartitions, defaultKey, defaultValue):
        writer = node.sink = SinkWriter(spec.name, topic, _serde(spec.keySerde, defaultKey, defaultKey, defaultValue, self.applicationId),
                                        _serde(spec.valueSerde, defaultValue, defaultKey, defaultValue, self.applicationId),
                                        spec.partitioner, numPartitions, self.produced, spec.topicExtractor,
                                        self.context,
                                        lambda: self.metrics.recordDropped(self.taskId, spec.name,
                                                                           "partitioner returned no partition"))
        write = writer.write if spec.topicExtractor is None else writer.writeExtracted
        stamps = node.stamps if node.stamps is not None else _Discard()

        def process(record: Record) -> None:
            node.processed += 1
            timestamp = record.timestamp()
            write(record.key(), record.value(), timestamp, record._headers)
            stamps.append(timestamp)

        return process

    # ------------------------------------------------------------------ lifecycle
    def initialize(self) -> None:
        """Call ``init(context)`` on every processor, in topology order."""
        for node, processor in self._processors:
            self.context.currentNode = node
            try:
                processor.init(self.context)
            except Exception as e:  # Kafka's ProcessorNode.init
                raise StreamsException(f"failed to initialize processor {node.name}") from e
        self.context.currentNode = None
        self._restoredSchedules = {}
        # the fused windowed loops call no store method per record: DEBUG's store metrics need the
        # per-node path, whose processors call the store as Kafka's do
        self._fastPath = None if self.storeMetrics else self._buildFastPath()
        if self.fuseChains:
            self._fuseChains()

    def _buildFastPath(self):
        """A fused record loop for the whole task, or None (kspark internal).

        When the task reads a single partition and its source's only child is a processor with a
        ``fastPath(task, sourceNode, node, queue)`` method (DSL built-ins that recognise the rest of
        the graph, e.g. a session aggregation whose only downstream is ``toStream().to()``), that
        method may return ``run(limit) -> records processed``: it processes up to ``limit``
        records (None: all processable ones) exactly as ``process`` would, without the per-hop
        ``Record``/``forward`` calls. It is used only while no stream-time punctuator is scheduled.
        ``run.processPolled(record)`` processes one ``StampedRecord`` just polled from the queue
        (partition time advanced), e.g. one ``RecordQueue.pollAlone`` returned.
        """
        queues = self.partitionGroup.queues
        if len(queues) != 1 or queues[0].isGlobal:
            return None
        queue = queues[0]
        source = queue.sourceNode
        if len(source.children) != 1:
            return None
        node = source.children[0]
        factory = getattr(node.processor, "fastPath", None)
        return None if factory is None else factory(self, source, node, queue)

    def prefillStores(self) -> int:
        """Cache fill before a batch is processed (kspark internal, the Spark host's persistent
        stores): each store that a processor reads and writes under the key of the records of a
        source loads the entries of the queued records' keys in one read (``_prefill``, one
        RocksDB ``MultiGet``) instead of one point read per key at its first access. Returns the
        keys read.

        Exact whatever the keys: a fill only loads entries the batch's own reads would load,
        never over an entry already loaded or written (``PersistentKeyValueStore._prefill``), so
        a wrong or missing key costs a read, not a result. The conditions only pick the stores
        where the record's serialized key *is* the store key (hits):
        - the source's records reach the processor through nodes that forward the record's key
          unchanged: a chain of single-child nodes whose processors have ``fusedStep`` (its
          contract: the same key; see ``_fuseChains``);
        - the processor declares ``storeKeyedByRecordKey()`` (``KStreamAggregate``: count,
          reduce, aggregate of ``groupByKey`` or after a repartition topic's source);
        - the store has ``_prefill`` (a persistent key-value store) and its key serde is of the
          source's key serde's built-in type whose bytes round-trip (String, Long, Integer,
          Short, ByteArray, Bytes): ``serialize(deserialize(b)) == b``.
        """
        plan = self._prefillPlan
        if plan is None:
            plan = self._prefillPlan = self._buildPrefillPlan()
        n = 0
        for queue, stores in plan:
            if queue.size():
                keys = queue.pendingRawKeys()
                for store in stores:
                    n += store._prefill(keys)
        return n

    def _buildPrefillPlan(self) -> list:
        from ..serialization import _ByteArraySerde, _BytesSerde, _IntegerSerde, _LongSerde, _ShortSerde, _StringSerde

        roundTrip = (_ByteArraySerde, _BytesSerde, _IntegerSerde, _LongSerde, _ShortSerde, _StringSerde)
        plan = []
        for queue in self.partitionGroup.queues:
            if queue.isGlobal or type(queue._keySerde) not in roundTrip:
                continue
            stores, node = [], queue.sourceNode
            while len(node.children) == 1:
                node = node.children[0]
                named = getattr(node.processor, "storeKeyedByRecordKey", None)
                if named is not None:
                    store = self.stores.get(named())
                    if hasattr(store, "_prefill") and type(store._keySerde) is type(queue._keySerde):
                        stores.append(store)
                    break
                if getattr(node.processor, "fusedStep", None) is None:
                    break
            if stores:
                plan.append((queue, stores))
        return plan

    def _fuseChains(self) -> None:
        """Give each source node whose records pass through a chain of built-in processors one
        call per processor instead of ``forward`` -> node wrapper -> ``process`` -> ``forward``.

        A chain is the source's only child, that node's only child, and so on, while the node's
        processor has ``fusedStep(drop)`` and it returns ``(step, passThrough)`` (not None; called
        after ``init``). Its contract: ``step(key, value)`` returns the value of the record that
        ``process`` would ``forward`` (one record, same key, timestamp and headers, no child name),
        or ``drop`` when ``process`` forwards nothing; it has every other effect ``process`` has
        (store reads, dropped-record counters and warnings through the context, whose current node
        is the processor's, exceptions) and no other; ``passThrough``: ``process`` forwards its
        input record object itself (a filter) rather than a copy. Every node of a chain but the
        last has exactly one child (the next); the last forwards to its children as usual.

        Conditions under which the fused call computes exactly what the per-node path computes
        (tests/unit/test_fused_chains.py runs both on the same input):
        - the same ``process-total`` counts, current node and record metadata during each
          step, and ``forward`` of the last node's output record with that node current;
        - the same record objects wherever one can be seen: a pass-through node's output is its
          input, a new ``Record`` otherwise (``withValue``'s copy); any other input record (the
          first node's, which ``StreamTask.process`` does not build) is built only when a handler
          needs it, with the same key, value, timestamp and headers: nothing else holds it;
        - exceptions: each node's call catches what its step or anything below it raises and
          hands it to ``_processingFailed`` exactly as the node wrapper does, nested in the same
          order, so handler calls, counters and re-raised errors are the same (the current node
          is not reset for the handler, which sees only its ``ErrorHandlerContext``);
        - other parents of a chain node (a merge) still call its wrapper; only the source's
          ``process`` changes. A processor without ``fusedStep``, or whose ``fusedStep`` returns
          None (its conditions fail, e.g. a versioned or buffered join), ends the chain.
        """
        for source in self._sourceNodes:
            chain, node = [], source
            while len(node.children) == 1:
                child = node.children[0]
                factory = getattr(child.processor, "fusedStep", None)
                made = None if factory is None else factory(_DROP)
                if made is None:
                    break
                chain.append((child, *made))
                node = child
            if not chain:
                continue
            call = None
            for node, step, passThrough in reversed(chain):
                call = self._chainLink(node, step, passThrough, call)
            source.process = self._chainHead(source, call)
            source.fused = call
            self.fusedChains.append([node.name for node, _, _ in chain])

    def _chainHead(self, source: _Node, first):
        context = self.context

        stamps = source.stamps

        def process(record: Record) -> None:  # the source's _forwarder, the first node's input = record
            source.processed += 1
            if stamps is not None:
                stamps.append(record._timestamp)
            try:
                first(record, record._key, record._value, record._timestamp, record._headers)
            finally:
                context.currentNode = source

        return process

    def _chainLink(self, node: _Node, step, passThrough: bool, following):
        """One node of a fused chain: ``call(rec, key, value, timestamp, headers)``, ``rec`` the
        node's input ``Record`` if one was built (the source's, or what a pass-through forwards),
        else None. ``following``: the next node's call, None for the last node."""
        context, failed = self.context, self._processingFailed
        stamps = node.stamps  # a terminal last node: its records' e2e latency

        def call(rec, key, value, timestamp: int, headers: tuple) -> None:
            node.processed += 1
            context.currentNode = node
            try:
                out = step(key, value)
                if stamps is not None:
                    stamps.append(timestamp)
                if out is _DROP:
                    return
                if following is not None:
                    following(rec if passThrough else None, key, out, timestamp, headers)
                elif passThrough:
                    if rec is None:
                        rec = Record(key, value, timestamp, headers)
                    context.forward(rec)
                else:
                    context.forward(Record(key, out, timestamp, headers))
            except Exception as e:
                failed(node, rec if rec is not None else Record(key, value, timestamp, headers), e)

        return call

    # ------------------------------------------------------------------ punctuation
    def schedule(self, node: _Node, interval: int, type: PunctuationType, punctuator) -> Cancellable:
        """Register a punctuator of ``node`` (rule P-2): STREAM_TIME starts at 0, so it fires on the
        first record; WALL_CLOCK_TIME first fires at the current wall-clock time + ``interval``.

        A schedule that a processor registers again after the task was restored from a checkpoint
        (same node, type, interval and order) continues at its checkpointed next fire time.
        """
        base = (node.name, type.value, interval)
        nth = self._registered.get(base, 0)
        self._registered[base] = nth + 1
        key = base + (nth,)
        start = 0 if type is PunctuationType.STREAM_TIME else self.wallClockTime + interval
        start = self._restoredSchedules.get(key, start)
        cancellable = Cancellable()
        self._cancellables[key] = cancellable
        if start is not None:  # None: it had been cancelled before the checkpoint
            self._queues[type].schedule(PunctuationSchedule(node, start, interval, punctuator, cancellable, key))
        else:
            cancellable.cancel()
        return cancellable

    def maybePunctuateStreamTime(self) -> bool:
        """Fire due STREAM_TIME punctuators at the task's stream time; nothing while it is unknown (P-3)."""
        streamTime = self.partitionGroup.streamTime
        if streamTime < 0:
            return False
        return self._queues[PunctuationType.STREAM_TIME].mayPunctuate(streamTime, self._punctuate)

    def maybePunctuateSystemTime(self, wallClockTime: int) -> bool:
        """Fire due WALL_CLOCK_TIME punctuators at ``wallClockTime`` ms (P-3)."""
        self.wallClockTime = wallClockTime
        return self._queues[PunctuationType.WALL_CLOCK_TIME].mayPunctuate(wallClockTime, self._punctuate)

    def _punctuate(self, sched: PunctuationSchedule, now: int) -> None:
        self.metrics.counters[self._punctuateCounter] += 1  # Kafka's task-level punctuate-total
        context = self.context
        context.currentNode = sched.node
        context.metadata = None  # P-7: no record metadata while punctuating
        started = _perfNs()
        try:
            sched.punctuator(now)
        except Exception as e:  # P-8: through the processing exception handler
            if getattr(e, "failedProcessing", False):
                raise
            context_ = self._errorContext(sched.node, None, now)
            if self._handle(self._processingHandler, context_, None, e):
                self.metrics.recordDropped(self.taskId, sched.node.name, f"punctuator error: {type(e).__name__}")
                return
            raise StreamsException(
                f"Exception caught while punctuating processor '{sched.node.name}': {type(e).__name__}: {e}"
            ) from e
        finally:
            context.currentNode = None
            self.punctuateNanos += _perfNs() - started

    def close(self) -> None:
        for node, processor in self._processors:
            self.context.currentNode = node
            processor.close()
        self.context.currentNode = None
        for store in self.stores.values():
            store.close()

    def addRecords(self, topic: str, records: list[RawRecord], lag: int | None = 0) -> None:
        """Append raw records of ``topic`` (this task's partition) in offset order; ``lag`` = records
        known to exist upstream beyond them (0 = caught up, None = unknown)."""
        q = self.queueOf[topic]
        q.addRawRecords(records)
        q.lag = lag

    def addRecordColumns(self, topic: str, columns, lag: int | None = 0) -> None:
        """As ``addRecords``, with the records as ``RawRecordColumns``."""
        q = self.queueOf[topic]
        q.addRawColumns(columns)
        q.lag = lag

    def process(self, wallClockTime: int) -> bool:
        """Process the next record if the task is ready; return whether one was processed."""
        self.wallClockTime = wallClockTime
        if self._fastPath is not None and not self._streamTimeHeap:
            return self._fastPath(1) > 0
        record, queue = self.partitionGroup.nextReadyRecord(wallClockTime)
        if record is None:
            return False
        context = self.context
        context.metadata = _tupleNew(RecordMetadata, record[4:7])  # (topic, partition, offset), no NamedTuple __new__
        context.sourceRecord = record
        timestamp, key, value, headers = record[:4]
        source = queue.sourceNode
        try:
            fused = source.fused
            if fused is not None and timestamp >= 0 and type(headers) is tuple:
                # the source's _chainHead without building the Record it would get: a Record of these
                # arguments (Record() takes them as they are) is built if a handler or a pass-through
                # first node needs it; the current node it leaves is reset below
                source.processed += 1
                if source.stamps is not None:
                    source.stamps.append(timestamp)
                fused(None, key, value, timestamp, headers)
            else:
                source.process(Record(key, value, timestamp, headers))
        finally:
            context.currentNode = None
            context.metadata = context.sourceRecord = None
        return True

    def processAll(self, wallClockTime: int) -> int:
        """Process every processable record, checking stream-time punctuation after each one
        (as TopologyTestDriver does, rule TTD-1); return how many were processed."""
        process, punctuate = self.process, self.maybePunctuateStreamTime
        heap = self._streamTimeHeap
        # The record loop allocates many short-lived acyclic objects and no cycles of its own;
        # the cyclic GC would re-walk every live object (records of the batch, stores) several
        # times per batch. It is paused for the loop (~20 % of the loop's CPU) and runs as usual after it.
        gcWasEnabled = gc.isenabled()
        gc.disable()
        try:
            if self._fastPath is not None and not heap:
                self.wallClockTime = wallClockTime
                return self._fastPath(None)
            return self._processEach(wallClockTime, process, punctuate, heap)
        finally:
            if gcWasEnabled:
                gc.enable()

    def _processEach(self, wallClockTime: int, process, punctuate, heap) -> int:
        n = 0
        partitionGroup = self.partitionGroup
        while process(wallClockTime):
            # cheap pre-check of maybePunctuateStreamTime: nothing scheduled or nothing due yet
            if heap and heap[0][0] <= partitionGroup.streamTime:
                punctuate()
            n += 1
            if not n & 0xFFFF:
                self.handOffProduced()
        return n

    def commit(self) -> None:
        """Flush the DSL record caches downstream (Kafka: on commit). The driver commits after
        every record (TTD-1), the Spark host once per micro-batch."""
        context = self.context
        for node, callback in self.commitCallbacks:
            context.currentNode = node
            try:
                callback()
            except Exception as e:
                # Kafka's ProcessorStateManager.flushCache: a record failing downstream of a flush
                # (its processing handler said FAIL) fails the flush of that store
                # (a StreamsException of Streams' own as it is, a handled failure as its cause)
                store = getattr(getattr(callback, "__self__", None), "store", None)
                failed = getattr(e, "failedProcessing", False)
                if store is None or (isinstance(e, StreamsException) and not failed):
                    raise
                raise ProcessorStateException(f"{self.logPrefix}Failed to flush cache of store {store.name()}") \
                    from (e.__cause__ if failed else e)
            finally:
                context.currentNode = None

    def drainProduced(self) -> list[ProducedRecord]:
        """The records written since the last drain, in order, as ``ProducedRecord`` tuples."""
        out = []
        for r in self.drainProducedChunks():
            if type(r) is ProducedColumns:
                out += r.records()
            else:
                out.append(r)
        return out

    def drainProducedChunks(self) -> list:
        """As ``drainProduced``, with records written as columns kept as ``ProducedColumns``."""
        out = self.produced[:]
        self.produced.clear()
        return out

    def handOffProduced(self) -> None:
        """Give the records produced so far (``drainProducedChunks``) to ``producedListener``, if
        one is set: called while a batch runs (every 65,536 records, and after each vectorised
        run), so a large micro-batch does not hold all its output in memory until it ends."""
        if self.producedListener is not None and self.produced:
            self.producedListener(self.drainProducedChunks())

    # ------------------------------------------------------------------ checkpointable state
    def checkpoint(self) -> dict:
        """Everything a host must keep to resume this task later: stream/partition times,
        records not processed yet, node states, schedules, and the contents of the stores not in
        ``persistentStores`` (all picklable)."""
        for callback in self.checkpointCallbacks:
            callback()
        return {
            "streamTime": self.partitionGroup.streamTime,
            "partitionTimes": {t: q.partitionTime for t, q in self.queueOf.items()},
            "unprocessed": {t: q.unprocessed() for t, q in self.queueOf.items() if q.size()},
            "stores": {name: store.snapshot() for name, store in self.stores.items()
                       if name not in self.persistentStores},
            # what a persistent store keeps outside its entries (its observed stream time...)
            "storeMeta": {name: self.stores[name]._metaSnapshot() for name in self.persistentStores},
            "nodeStates": self.nodeStates,
            # each global partition's [first offset received, position] (RecordQueue.appliedPosition):
            # the range a restore of a persistent global store reads (Kafka's global .checkpoint file)
            "globalPositions": self.globalPositions(),
            "schedules": {
                **{k: None for k, c in self._cancellables.items() if c.cancelled},
                **{s.key: s.timestamp for q in self._queues.values() for s in q.schedules()},
            },
        }

    def globalPositions(self) -> dict[str, list]:
        """Global partition (``globalQueueKey``) -> ``[first offset received or None, position]``
        (``RecordQueue.appliedPosition``): the task's copy of a global store holds the records of
        that range of the partition, as its processor applied them."""
        return {t: [q.receivedFrom, q.appliedPosition()] for t, q in self.queueOf.items() if q.isGlobal}

    def restore(self, state: dict) -> None:
        self.partitionGroup.streamTime = state["streamTime"]
        for topic, t in state["partitionTimes"].items():
            if topic in self.queueOf:
                self.queueOf[topic].partitionTime = t
        # a persistent store found in the checkpoint: written by a kspark that kept every store
        # there; the host imports it into the store (importLegacySnapshots)
        self.legacySnapshots = {}
        for name, data in state["stores"].items():
            if name in self.stores and name not in self.persistentStores:
                self.stores[name].restore(data)
            elif name in self.persistentStores:
                self.legacySnapshots[name] = data
        for name, data in state.get("storeMeta", {}).items():
            if name in self.persistentStores:
                self.stores[name]._metaRestore(data)
        positions = state.get("globalPositions")
        self.globalPositionsKnown = positions is not None  # not in a checkpoint of an older kspark
        for topic, (first, position) in (positions or {}).items():
            if topic in self.queueOf:
                self.queueOf[topic].receivedFrom, self.queueOf[topic].receivedEnd = first, position
        for topic, raws in state["unprocessed"].items():
            self.queueOf[topic].addRawRecords([RawRecord(*r) for r in raws])
        self._restoredSchedules = dict(state.get("schedules", {}))
        self.nodeStates = state.get("nodeStates", {})
