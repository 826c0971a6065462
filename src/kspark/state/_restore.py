"""Restoring a task's persistent stores from their changelog topics (Kafka Streams'
``StoreChangelogReader``), when its local store does not hold the committed version.

A changelog record carries the header ``kspark.checkpoint`` = ``<checkpoint id>:<batch id>`` of
the micro-batch that wrote it (``kspark.state._persistent.CHANGELOG_HEADER``). Restoring for
micro-batch ``b`` of checkpoint ``c`` applies, in offset order:

- on Kafka: every record, except those of ``c`` with a batch id >= ``b``: those batches reached
  Kafka (their transactions committed) but not Spark's commit log, and are replayed. Records of
  other checkpoints (a ``state.dir`` started anew) and records without the header (written by
  Kafka Streams) are applied: a new checkpoint resumes the consumer group's committed offsets,
  which those records go with, as a Kafka Streams instance restores its stores on a new machine.
- on local topics: only the records of ``c`` with a batch id < ``b``. A new checkpoint on local
  topics reads its input from the start (local topics keep no committed offsets), so the stores
  of an older checkpoint are not its own.

A store with logging disabled (``withLoggingDisabled``) has no changelog: as in Kafka Streams, it
starts empty on an executor that does not have it (with a WARNING).
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc

from ..runtime.stream_task import decodeHeaders
from ._persistent import CHANGELOG_HEADER, PersistentTaskState

log = logging.getLogger("kspark.state")

__all__ = ["restoreStores"]


def _keepHeader(headers: bytes | None, checkpointId: str, batchId: int, localTopics: bool) -> bool:
    tag = dict(decodeHeaders(headers)).get(CHANGELOG_HEADER)
    if tag is None:
        return not localTopics
    checkpoint, _, batch = bytes(tag).decode("utf-8", "replace").rpartition(":")
    ours = checkpoint == checkpointId and batch.lstrip("-").isdigit()
    if localTopics:
        return ours and int(batch) < batchId
    return not (ours and int(batch) >= batchId)


def restoreStores(state: PersistentTaskState, topics, partition: int, checkpointId: str, batchId: int, *,
                  localTopics: bool, taskId: str) -> int:
    """Fill ``state``'s (wiped) stores from partition ``partition`` of their changelog topics
    (``topics``, a ``kspark.topics.Topics``) for micro-batch ``batchId`` of checkpoint
    ``checkpointId`` (see the module docstring); returns the records applied.

    Raises
    ------
    kspark.errors.StreamsException
        If a logged store's changelog topic does not exist (naming the store and the topic).
    """
    from ..errors import StreamsException

    applied = 0
    for name, topic in state.logged.items():
        if topic is None:
            if batchId > 0:
                log.warning("task [%s] store %s has logging disabled and is not in this executor's local store: it "
                            "starts empty, as Kafka Streams' would after losing its state directory", taskId, name)
            continue
        count = topics.partitionsFor(topic)
        if count is None:
            raise StreamsException(f"task [{taskId}] cannot restore store {name}: its changelog topic {topic} does "
                                   "not exist")
        if partition >= count:
            raise StreamsException(f"task [{taskId}] cannot restore store {name}: its changelog topic {topic} has "
                                   f"{count} partitions, not partition {partition}")
        start, end = topics.beginningOffsets(topic)[partition], topics.endOffsets(topic)[partition]
        if end <= start:
            continue
        decided: dict = {}
        n = 0
        for table in topics.readBatches(topic, partition, start, end):
            headers = table.column("headers")
            codes = pc.dictionary_encode(headers).combine_chunks() if isinstance(headers, pa.ChunkedArray) \
                else pc.dictionary_encode(headers)
            distinct = codes.dictionary.to_pylist()
            keep = [decided.setdefault(h, _keepHeader(h, checkpointId, batchId, localTopics)) for h in distinct]
            nullKeep = decided.setdefault(None, _keepHeader(None, checkpointId, batchId, localTopics))
            mask = pc.fill_null(pc.take(pa.array(keep, pa.bool_()), codes.indices), nullKeep)
            if not pc.all(mask).as_py():
                table = table.filter(mask)
            timestamps = (table.column("timestamp").to_pylist()
                          if getattr(state.stores[name], "_restoreWithTimestamps", False) else None)
            state.restoreRecords(name, table.column("key").to_pylist(), table.column("value").to_pylist(), timestamps)
            n += table.num_rows
        log.info("task [%s] restored store %s from %s-%d: %d records (offsets %d..%d)", taskId, name, topic, partition,
                 n, start, end)
        applied += n
    return applied
