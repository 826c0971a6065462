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
* a global queue's unprocessed records, its partition time and the store are part of the task
  checkpoint, so a task restored from a checkpoint resumes with the same copy.

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
