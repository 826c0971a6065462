from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from typing import Any, NamedTuple

from ..errors import StreamsException

__all__ = [
    "ConsumerRecord",
    "ExtractRecordMetadataTimestamp",
    "FailOnInvalidTimestamp",
    "LogAndSkipOnInvalidTimestamp",
    "TimestampExtractor",
    "UsePartitionTimeOnInvalidTimestamp",
    "WallclockTimestampExtractor",
]

log = logging.getLogger("kspark.processor")


class ConsumerRecord(NamedTuple):
    """A deserialized input record as handed to a ``TimestampExtractor`` (Kafka ``ConsumerRecord``).

    ``timestamp`` is the record's metadata timestamp (CreateTime or LogAppendTime) in ms.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Any
    value: Any
    headers: tuple = ()

    def __str__(self) -> str:
        return (
            f"ConsumerRecord(topic = {self.topic}, partition = {self.partition}, offset = {self.offset}, "
            f"timestamp = {self.timestamp}, key = {self.key}, value = {self.value})"
        )


class TimestampExtractor(ABC):
    """Assigns the event time of an input record (Kafka ``TimestampExtractor``, rule T-1).

    ``extract(record, partitionTime)`` returns ms; ``partitionTime`` is the highest timestamp
    already taken from the record's partition (-1 if none). A negative result drops the record
    and counts it in ``dropped-records`` (rule T-8). Must be stateless.
    """

    @abstractmethod
    def extract(self, record: ConsumerRecord, partitionTime: int) -> int:
        ...


class ExtractRecordMetadataTimestamp(TimestampExtractor):
    """Uses the record's metadata timestamp; negative ones go to ``onInvalidTimestamp`` (rule T-3)."""

    def extract(self, record: ConsumerRecord, partitionTime: int) -> int:
        ts = record.timestamp
        if ts < 0:
            return self.onInvalidTimestamp(record, ts, partitionTime)
        return ts

    @abstractmethod
    def onInvalidTimestamp(self, record: ConsumerRecord, recordTimestamp: int, partitionTime: int) -> int:
        ...


class FailOnInvalidTimestamp(ExtractRecordMetadataTimestamp):
    """The default extractor: a negative metadata timestamp raises ``StreamsException`` (rules T-2, T-4)."""

    def onInvalidTimestamp(self, record, recordTimestamp, partitionTime):
        message = (
            f"Input record {record} has invalid (negative) timestamp. Possibly because a pre-0.10 producer "
            "client was used to write this record to Kafka without embedding a timestamp, or because the "
            "input topic was created before upgrading the Kafka cluster to 0.10+. Use a different "
            "TimestampExtractor to process this data."
        )
        log.error(message)
        raise StreamsException(message)


class LogAndSkipOnInvalidTimestamp(ExtractRecordMetadataTimestamp):
    """Returns the negative timestamp unchanged, so the record is dropped and counted (rule T-5)."""

    def onInvalidTimestamp(self, record, recordTimestamp, partitionTime):
        log.warning(
            "Input record %s will be dropped because it has an invalid (negative) timestamp.", record
        )
        return recordTimestamp


class UsePartitionTimeOnInvalidTimestamp(ExtractRecordMetadataTimestamp):
    """Replaces a negative timestamp by the partition time; fails if that is unknown (rule T-6)."""

    def onInvalidTimestamp(self, record, recordTimestamp, partitionTime):
        if partitionTime < 0:
            raise StreamsException(
                f"Could not infer new timestamp for input record {record} because partition time is unknown."
            )
        return partitionTime


class WallclockTimestampExtractor(TimestampExtractor):
    """Processing time: the wall clock in ms, whatever the record says (rule T-7)."""

    def extract(self, record, partitionTime):
        return time.time_ns() // 1_000_000
