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

Global stores have no changelog: their topic is one (Kafka's ``GlobalStateManagerImpl``), read by
:func:`restoreGlobalStores` up to the positions in the task checkpoint
(``kspark.runtime.global_state``).

A store with logging disabled (``withLoggingDisabled``) has no changelog: as in Kafka Streams, it
starts empty on an executor that does not have it (with a WARNING).
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc

from ..runtime.stream_task import decodeHeaders
from ._changelog import ChangelogRecord
from ._persistent import CHANGELOG_HEADER, PersistentTaskState

log = logging.getLogger("kspark.state")

__all__ = ["restoreGlobalStores", "restoreStores"]


def batchOf(headers: bytes | None) -> tuple[str, int] | None:
    """(checkpoint id, batch id) of a changelog record's ``kspark.checkpoint`` header (headers as a
    topic's ``headers`` column holds them); None without one (a record Kafka Streams wrote)."""
    tag = dict(decodeHeaders(headers)).get(CHANGELOG_HEADER)
    if tag is None:
        return None
    checkpoint, _, batch = bytes(tag).decode("utf-8", "replace").rpartition(":")
    return (checkpoint, int(batch)) if batch.lstrip("-").isdigit() else (checkpoint, -1)


def _keepHeader(headers: bytes | None, checkpointId: str, batchId: int, localTopics: bool) -> bool:
    tag = batchOf(headers)
    if tag is None:
        return not localTopics
    ours = tag[0] == checkpointId
    if localTopics:
        return ours and tag[1] < batchId
    return not (ours and tag[1] >= batchId)


def restoreStores(state: PersistentTaskState, topics, partition: int, checkpointId: str, batchId: int, *,
                  localTopics: bool, taskId: str, startOffsets: dict[str, int] | None = None) -> int:
    """Fill ``state``'s (wiped) stores from partition ``partition`` of their changelog topics
    (``topics``, a ``kspark.topics.Topics``) for micro-batch ``batchId`` of checkpoint
    ``checkpointId`` (see the module docstring), from ``startOffsets`` (changelog topic ->
    offset, after a snapshot) or the start of the log; returns the records applied.

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
        start = max(start, (startOffsets or {}).get(topic, start))
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
            state.restoreRecords(name, list(map(ChangelogRecord, table.column("key").to_pylist(),
                                                table.column("value").to_pylist(), table.column("timestamp").to_pylist())))
            n += table.num_rows
        log.info("task [%s] restored store %s from %s-%d: %d records (offsets %d..%d)", taskId, name, topic, partition,
                 n, start, end)
        applied += n
    return applied


def restoreGlobalStores(state: PersistentTaskState, topics, stores: dict[str, list[str]], positions: dict[str, list],
                        taskId: str, *, startOffsets: dict[str, int] | None = None, reprocess=None) -> int:
    """Fill ``state``'s global stores (``stores``: store -> its global topics) from their topics
    (``topics``, a ``kspark.topics.Topics``): each partition's records in the range the task
    checkpoint gives (``positions``: ``"<topic>@<partition>"`` -> ``[first offset, position]``,
    ``StreamTask.globalPositions``), from ``startOffsets`` (same keys, after a snapshot) if later.
    ``reprocess``: store -> a ``GlobalStoreReprocessor`` for the stores whose records run
    through their processor (``addGlobalStore``); the others take the records as they are,
    null keys skipped (a ``GlobalKTable``). Returns the records applied."""
    import pyarrow.compute as pc

    applied = 0
    for name, storeTopics in stores.items():
        replay = (reprocess or {}).get(name)
        for key, (first, end) in sorted(positions.items()):
            topic, _, p = key.rpartition("@")
            if topic not in storeTopics or first is None:
                continue
            partition = int(p)
            begin = topics.beginningOffsets(topic)[partition]
            start = max(first, begin, (startOffsets or {}).get(key, begin))
            if end <= start:
                continue
            n = 0
            for table in topics.readBatches(topic, partition, start, end):
                if replay is not None:
                    n += replay.process(topic, partition, table)
                    state.writeWorkingSet(name)
                    continue
                table = table.filter(pc.is_valid(table.column("key")))
                state.restoreRecords(name, list(map(ChangelogRecord, table.column("key").to_pylist(),
                                                    table.column("value").to_pylist(),
                                                    table.column("timestamp").to_pylist())))
                n += table.num_rows
            log.info("task [%s] restored global store %s from %s-%d: %d records (offsets %d..%d)", taskId, name, topic,
                     partition, n, start, end)
            applied += n
    return applied
