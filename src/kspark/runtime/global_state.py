"""Global stores inside a task (kspark's replacement for Kafka's global stream thread).

Kafka Streams keeps one copy of each global store per application instance, restores it to the
log end before processing starts, then updates it on a separate global thread, asynchronously
with the stream threads: a stream record may be joined before or after a global update that is
older than it, depending on thread timing (seed 004: a price processed 0.06 s after a valuation
update missed it).

kspark makes the order deterministic on both hosts. Every task that runs a global store's
nodes holds its own copy of the store (in its state, so in its checkpoint) and reads every
partition of the global topic through one ``RecordQueue`` per partition, flagged ``isGlobal``,
placed *first* in its ``PartitionGroup``:

* record choice (rule T-12) interleaves global and stream records by timestamp, so a stream
  record is processed only after every global record with a smaller timestamp that the task
  has, and after those with an equal timestamp too (global queues win ties);
* ``max.task.idle.ms`` (T-14) treats a global partition like any input partition: an empty one
  with known lag makes the task wait, so a stream record does not overtake a global update
  that exists in the log but was not fetched yet;
* global records do not advance the task's stream time (they are not the task's input) and are
  not counted by stream-time punctuation;
* a global queue's unprocessed records and its partition time are part of the task
  checkpoint, so a task restored from a checkpoint resumes with the same copy.

Where the copy lives is the host's choice. TopologyTestDriver keeps it in memory. The Spark host
keeps it in the task's local RocksDB with the task's own stores (``kspark.state._persistent``,
the same pending/commit versions), without a changelog: as in Kafka Streams, the global topic
is the store's changelog (``GlobalStateManagerImpl``). The task checkpoint keeps each global
partition's position (``RecordQueue.appliedPosition``: every record below it applied, none at or
above it; Kafka's global ``.checkpoint`` file), and a task that has no local copy of the
committed version restores it from the global topic up to those positions
(``kspark.state._restore.restoreGlobalStores``), as Kafka 4.3 restores a global store:

* a ``GlobalKTable``'s store (Kafka ``TableSourceNode``: ``reprocessOnRestore=false``) takes the
  records as they are, through the store's record converter (a timestamped store: the record's
  timestamp before the value bytes); a null value deletes the key, a null key is skipped. As in
  Kafka, the records are neither deserialized nor timestamped by the source's extractor, so a
  record the processing path skipped (a deserialization error under a CONTINUE handler, a
  negative extracted timestamp) is in the restored store, and an entry's timestamp is the
  record's own (they differ from the processing path's only with a custom extractor);
* a store of ``addGlobalStore`` (``reprocessOnRestore=true``, KIP-813) gets the records run
  through a new instance of its processor (:class:`GlobalStoreReprocessor`): null keys skipped,
  key and value deserialized (a failure goes to the deserialization handler), the record's own
  timestamp.

The Spark host reads global topics to their end in every micro-batch (outside
``kspark.max.records.per.trigger``), so a global partition has no lag when a batch is planned
and stream records never wait for a global backlog. A global record appended after a batch was
planned reaches the tasks in a later batch: stream records of the earlier batch are processed
without it, whatever its timestamp (the same holds for any input partition).

TopologyTestDriver applies a global record synchronously when it is piped (Kafka TTD, TTD-4):
``applyGlobalRecords``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..topology._topology import ProcessorNodeSpec, SourceNodeSpec
from .record_queue import RecordQueue

if TYPE_CHECKING:
    from ..topology import Subtopology
    from .stream_task import StreamTask

__all__ = ["ReadOnlyStore", "applyGlobalRecords", "globalQueueKey", "globalRecordQueues", "globalStoreTopicsOf"]


def globalQueueKey(topic: str, partition: int) -> str:
    """Key of a global topic-partition's queue in ``StreamTask.queueOf`` and in the checkpoint:
    ``"<topic>@<partition>"`` ('@' is not legal in topic names, so it never clashes)."""
    return f"{topic}@{partition}"


def globalRecordQueues(task: "StreamTask", spec: SourceNodeSpec, node, topicName: Callable[[str], str],
                       numPartitions: Callable[[str], int], config) -> list[RecordQueue]:
    """One flagged queue per partition of each topic of global source ``spec``, registered in
    ``task.queueOf`` under ``globalQueueKey``."""
    keySerde = spec.keySerde or config.defaultKeySerde()
    valueSerde = spec.valueSerde or config.defaultValueSerde()
    extractor = spec.timestampExtractor or config.defaultTimestampExtractor()
    queues = []
    for topic in spec.topics:
        physical = topicName(topic)
        for p in range(numPartitions(physical)):
            q = RecordQueue(physical, p, keySerde, valueSerde, extractor, task.metrics, task.taskId, spec.name)
            q.isGlobal = True
            q.sourceNode = node
            q.onDeserializationError = task._onDeserializationError
            task.queueOf[globalQueueKey(physical, p)] = q
            queues.append(q)
    return queues


def globalStoreTopicsOf(subtopology: "Subtopology") -> dict[str, str]:
    """Each store of the processors fed by a global source among ``subtopology``'s nodes, with
    that source's (logical) topic: the store's changelog in Kafka Streams
    (``GlobalStateManagerImpl.changelogFor``), the topic its serdes are called with."""
    byName = {n.name: n for n in subtopology.nodes}
    fed = {n.name: n.topics[0] for n in subtopology.nodes if isinstance(n, SourceNodeSpec) and n.isGlobal}
    changed = True
    while changed:
        changed = False
        for n in byName.values():
            if isinstance(n, ProcessorNodeSpec) and n.name not in fed:
                topic = next((fed[p] for p in n.parents if p in fed), None)
                if topic is not None:
                    fed[n.name] = topic
                    changed = True
    return {store: topic for name, topic in fed.items() for store in getattr(byName[name], "stores", ())}


def globalStoreSources(subtopology: "Subtopology") -> dict[str, tuple[SourceNodeSpec, ProcessorNodeSpec]]:
    """Global store name -> (its global source, the processor that updates it) among
    ``subtopology``'s nodes."""
    sources = {n.name: n for n in subtopology.nodes if isinstance(n, SourceNodeSpec) and n.isGlobal}
    out: dict[str, tuple[SourceNodeSpec, ProcessorNodeSpec]] = {}
    for n in subtopology.nodes:
        if isinstance(n, ProcessorNodeSpec):
            source = next((sources[p] for p in n.parents if p in sources), None)
            if source is not None:
                for store in n.stores:
                    out[store] = (source, n)
    return out


class GlobalStoreReprocessor:
    """Restores a global store of ``addGlobalStore`` by running its topic's records through a new
    instance of its processor (Kafka 4.3 ``GlobalStateManagerImpl.reprocessState``, KIP-813's
    ``reprocessOnRestore``), in ``task`` (whose store it writes): records with a null key are
    skipped; key and value are deserialized with the source's serdes, a failure going to the
    deserialization handler (RESUME: skipped and counted as dropped; FAIL: raises); the
    processor gets the record's own timestamp and headers, its exceptions going to the
    processing handler likewise. Dead-letter records the handlers return are not sent again:
    they were sent when the records were first processed.

    Raises (from :meth:`process`)
    ------
    kspark.errors.StreamsException
        If a handler says FAIL, naming the store, topic, partition and offset.
    """

    def __init__(self, task: "StreamTask", storeName: str, source: SourceNodeSpec, processor: ProcessorNodeSpec) -> None:
        from ..errors import StreamsException

        self.task, self.storeName, self.sourceName = task, storeName, source.name
        self.node = next(node for node, _ in task._processors if node.name == processor.name)
        self.processor = processor.supplier()
        context = task.context
        context.currentNode = self.node
        try:
            init = getattr(self.processor, "init", None)
            if init is not None:
                init(context)
        except Exception as e:
            raise StreamsException(f"failed to initialize processor {processor.name} to restore global store "
                                   f"{storeName}") from e
        finally:
            context.currentNode = None

    def process(self, topic: str, partition: int, table) -> int:
        """Run the records of ``table`` (a ``READ_SCHEMA`` table of ``topic``-``partition``, in
        offset order) through the processor; returns how many it processed."""
        from ..processor import Record, RecordMetadata
        from .record_queue import RawRecord
        from .stream_task import decodeHeaders

        task, context = self.task, self.task.context
        queue = task.queueOf[globalQueueKey(topic, partition)]
        keySerde, valueSerde = queue._keySerde, queue._valueSerde
        n = 0
        for offset, timestamp, rawKey, rawValue, rawHeaders in zip(
                *(table.column(c).to_pylist() for c in ("offset", "timestamp", "key", "value", "headers"))):
            if rawKey is None:
                continue
            headers = decodeHeaders(rawHeaders)
            raw = RawRecord(offset, timestamp, rawKey, rawValue, headers)
            try:
                key = keySerde.deserialize(topic, rawKey)
                value = None if rawValue is None else valueSerde.deserialize(topic, rawValue)
            except Exception as e:
                if self._resumes(task._deserializationHandler, raw, raw, topic, partition, self.sourceName, e,
                                 "deserialization error"):
                    continue
                raise self._failed(topic, partition, offset, e) from e
            record = Record(key, value, timestamp, headers)
            context.currentNode = self.node
            context.metadata = RecordMetadata(topic, partition, offset)
            try:
                self.processor.process(record)
            except Exception as e:
                if not self._resumes(task._processingHandler, record, raw, topic, partition, self.node.name, e,
                                     f"processing error: {type(e).__name__}"):
                    raise self._failed(topic, partition, offset, e) from e
            finally:
                context.currentNode = None
                context.metadata = None
            n += 1
        return n

    def _resumes(self, handler, record, raw, topic: str, partition: int, nodeName: str, e: Exception,
                 reason: str) -> bool:
        from ..errors import ErrorHandlerContext, StreamsException, handleError

        if isinstance(e, StreamsException):  # not the record's fault (an unreachable schema registry)
            raise e
        context = ErrorHandlerContext(topic, partition, raw.offset, raw.timestamp, raw.headers, nodeName,
                                      self.task.taskId, raw.key, raw.value)
        if handleError(handler, context, record, e).result().name != "RESUME":
            return False
        self.task.metrics.recordDropped(self.task.taskId, nodeName, reason)
        return True

    def _failed(self, topic: str, partition: int, offset: int, e: Exception):
        from ..errors import StreamsException

        return StreamsException(f"task [{self.task.taskId}] failed to restore global store {self.storeName} from "
                                f"topic={topic}, partition={partition}, offset={offset}: {type(e).__name__}: {e}")


def applyGlobalRecords(task: "StreamTask") -> int:
    """Process every record waiting in the task's global queues now, in timestamp order across
    them, without touching stream time (TopologyTestDriver's synchronous global update, TTD-4).
    Returns how many records were applied."""
    from ..processor import Record, RecordMetadata

    queues = [q for q in task.partitionGroup.queues if q.isGlobal]
    context = task.context
    n = 0
    while True:
        best = None
        for q in queues:
            if q.head is not None and (best is None or q.head.timestamp < best.head.timestamp):
                best = q
        if best is None:
            return n
        record = best.poll()
        context.metadata = RecordMetadata(record.topic, record.partition, record.offset)
        try:
            best.sourceNode.process(Record(record.key, record.value, record.timestamp, record.headers))
        finally:
            context.currentNode = None
            context.metadata = None
        n += 1


class ReadOnlyStore:
    """A global store as other processors see it (Kafka ``ReadOnlyKeyValueStoreFacade`` /
    ``AbstractReadOnlyDecorator``, rule E-1): reads pass through, writes raise
    ``NotImplementedError("Global store is read only")`` (Kafka: ``UnsupportedOperationException``)."""

    _WRITES = ("put", "putIfAbsent", "putAll", "delete", "remove", "init", "flush", "close")

    def __init__(self, store) -> None:
        self._store = store
        self.get = store.get  # the join's hot path: no __getattr__ indirection

    def __getattr__(self, name: str):
        if name in ReadOnlyStore._WRITES:
            def refuse(*args, **kwargs):
                raise NotImplementedError("Global store is read only")

            return refuse
        return getattr(self._store, name)
