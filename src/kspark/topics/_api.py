"""The one topic interface kspark's hosts are written against, with two backends: the embedded
:class:`~kspark.topics.LocalTopics` and a Kafka cluster (:class:`~kspark.topics.KafkaTopics`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Mapping

import pyarrow as pa

__all__ = ["RECORD_SCHEMA", "READ_SCHEMA", "CorruptRecordException", "OffsetOutOfRangeException", "Topics", "openTopics"]

RECORD_SCHEMA = pa.schema(
    [
        pa.field("timestamp", pa.int64(), nullable=False),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("headers", pa.binary()),
    ]
)
"""Schema of a record in a topic: timestamp (ms since the epoch) and serialized bytes; ``headers``
as ``kspark.runtime.stream_task.encodeHeaders`` writes them (null when there are none)."""

READ_SCHEMA = pa.schema([pa.field("offset", pa.int64(), nullable=False), *RECORD_SCHEMA])
"""Schema of records read back: their offset, then the ``RECORD_SCHEMA`` columns."""


class OffsetOutOfRangeException(Exception):
    """A position is outside a partition's log and the reset policy is ``none`` (Kafka
    ``OffsetOutOfRangeException`` / ``NoOffsetForPartitionException``)."""


class CorruptRecordException(Exception):
    """Stored records fail their checksum, are truncated or cannot be parsed (Kafka
    ``CorruptRecordException``); the message names the topic-partition, the offset range and the
    file."""


class Topics(ABC):
    """The topics an application reads and writes, by name and partition.

    Offsets are per partition, ascending, and may have gaps (Kafka: transaction markers, aborted
    records, compaction); a range ``[start, end)`` holds the records whose offsets lie in it.
    End offsets are the offset the next appended record gets (Kafka: the last stable offset
    for ``read_committed`` readers). Writing from Spark tasks is each backend's own sink
    (``kspark.spark._datasource``); :meth:`produce` is for loading inputs and tests.
    """

    @abstractmethod
    def partitionsFor(self, name: str) -> int | None:
        """Number of partitions of topic ``name``, or None if it does not exist."""

    @abstractmethod
    def createTopic(self, name: str, numPartitions: int, *, ifNotExists: bool = False,
                    config: Mapping[str, str] | None = None, replicationFactor: int = -1) -> None:
        """Create topic ``name`` with ``numPartitions`` partitions (``replicationFactor`` -1: the
        backend's default); ``ifNotExists`` makes an existing topic with that count a no-op.

        Raises ``TopicExistsException`` if it exists otherwise."""

    @abstractmethod
    def endOffsets(self, name: str) -> dict[int, int]:
        """Partition -> end offset of every partition of ``name``.

        Raises ``UnknownTopicOrPartitionException`` if the topic does not exist."""

    @abstractmethod
    def beginningOffsets(self, name: str) -> dict[int, int]:
        """Partition -> first offset still in the log (records before it were deleted)."""

    @abstractmethod
    def topicId(self, name: str) -> str | None:
        """An id that changes when the topic is deleted and created again (Kafka's topic id);
        None if the backend has none for it."""

    @abstractmethod
    def readBatches(self, name: str, partition: int, start: int, end: int, maxRows: int = 65536) -> Iterator[pa.Table]:
        """The records of ``name``-``partition`` with offsets in ``[start, end)`` in offset order,
        as ``READ_SCHEMA`` tables of at most ``maxRows`` rows (``end`` clamped to the end offset).

        Raises ``UnknownTopicOrPartitionException`` if the partition does not exist and
        ``OffsetOutOfRangeException`` if ``start`` is before the log's first offset."""

    def logChains(self, name: str, partition: int, positions: Iterable[int]) -> dict[int, int | None]:
        """Position -> a fingerprint of the log below it that changes when the log is rewritten
        there (:meth:`LocalTopics.logChains`); None where the backend has none (Kafka: its
        brokers keep leader epochs)."""
        return dict.fromkeys(positions)

    def offsetsForTimes(self, name: str, timestampMs: int) -> dict[int, int]:
        """Partition -> offset of the first record whose timestamp is at least ``timestampMs``, or
        the end offset if there is none (Kafka ``Consumer.offsetsForTimes``, as
        ``AutoOffsetReset.byDuration`` uses it). This scan of the timestamps is the local log's
        way; a backend with a time index overrides it."""
        import pyarrow.compute as pc

        out = {}
        beginnings, ends = self.beginningOffsets(name), self.endOffsets(name)
        for partition, end in ends.items():
            out[partition] = end
            for batch in self.readBatches(name, partition, beginnings[partition], end):
                hits = pc.indices_nonzero(pc.greater_equal(batch.column("timestamp"), timestampMs))
                if len(hits):
                    out[partition] = batch.column("offset")[hits[0].as_py()].as_py()
                    break
        return out

    def read(self, name: str, partition: int, start: int, end: int) -> pa.Table:
        """:meth:`readBatches` as one table."""
        tables = list(self.readBatches(name, partition, start, end))
        return pa.concat_tables(tables) if tables else READ_SCHEMA.empty_table()

    def endOffset(self, name: str, partition: int) -> int:
        """End offset of one partition."""
        return self.endOffsets(name)[partition]

    @abstractmethod
    def produce(self, name: str, records: Iterable[tuple], *,
                partitioner: Callable[[bytes | None, int], int]) -> dict[int, int]:
        """Append ``(key, value, timestamp_ms[, headers])`` records (serialized bytes), partitioned
        by ``partitioner(keyBytes, numPartitions)``; returns partition -> records appended."""

    def close(self) -> None:
        """Release clients and connections."""

    def __enter__(self) -> "Topics":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _clientKeysGiven(config) -> set[str]:
    """The client keys the user set, with any client prefix removed."""
    keys = set()
    for key in config.originals():
        for prefix in ("main.consumer.", "global.consumer.", "restore.consumer.", "consumer.", "producer.", "admin."):
            if key.startswith(prefix):
                key = key[len(prefix):]
                break
        keys.add(key)
    return keys


def openTopics(config: Any) -> Topics:
    """The topics of a ``StreamsConfig`` (or a mapping of its keys): a Kafka cluster when
    ``bootstrap.servers`` is set, else the local topics under ``kspark.topics.dir``."""
    from ..config import StreamsConfig

    if not isinstance(config, StreamsConfig):
        config = StreamsConfig(config)
    if config.usesKafka():
        from ._kafka import KafkaTopics

        producer = config.clientConfigs("producer")
        given = _clientKeysGiven(config)
        if "transaction.timeout.ms" in producer and "transaction.timeout.ms" not in given:
            # one transaction holds a task's whole micro-batch, not Kafka Streams' 100 ms of records
            producer["transaction.timeout.ms"] = "60000"
        return KafkaTopics(config.clientConfigs("admin"), config.clientConfigs("consumer"), producer,
                           userKeys=given)
    from ._local import LocalTopics

    return LocalTopics(config.get(StreamsConfig.TOPICS_DIR_CONFIG))
