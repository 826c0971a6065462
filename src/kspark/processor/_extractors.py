from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from typing import Any

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


class ConsumerRecord:
    """A deserialized input record as handed to a ``TimestampExtractor`` (Kafka ``ConsumerRecord``).

    Accessors as in Kafka: ``topic()``, ``partition()``, ``offset()``, ``timestamp()`` (the
    metadata timestamp, CreateTime or LogAppendTime, in ms), ``key()``, ``value()``, ``headers()``.
    """

    __slots__ = ("_topic", "_partition", "_offset", "_timestamp", "_key", "_value", "_headers")

    def __init__(self, topic: str, partition: int, offset: int, timestamp: int, key: Any, value: Any,
                 headers: tuple = ()) -> None:
        self._topic, self._partition, self._offset = topic, partition, offset
        self._timestamp, self._key, self._value, self._headers = timestamp, key, value, headers

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> int:
        return self._timestamp

    def key(self) -> Any:
        return self._key

    def value(self) -> Any:
        return self._value

    def headers(self) -> tuple:
        return self._headers

    def __str__(self) -> str:
        return (
            f"ConsumerRecord(topic = {self._topic}, partition = {self._partition}, offset = {self._offset}, "
            f"timestamp = {self._timestamp}, key = {self._key}, value = {self._value})"
        )

    __repr__ = __str__


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
        ts = record.timestamp()
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
