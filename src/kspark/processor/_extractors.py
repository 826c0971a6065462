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


_UNSET = object()
NO_TIMESTAMP = -1  # Kafka's RecordBatch.NO_TIMESTAMP


class ConsumerRecord:
    """A deserialized input record as handed to a ``TimestampExtractor`` (Kafka ``ConsumerRecord``).

    Built as ``ConsumerRecord(topic, partition, offset, key, value)`` (Java's 5-argument
    constructor: no timestamp, ``timestamp()`` is -1, Kafka's ``NO_TIMESTAMP``, and no headers;
    keyword ``key=``/``value=`` without ``timestamp`` is the same form), or
    ``ConsumerRecord(topic, partition, offset, timestamp, key, value[, headers])`` (kspark's own,
    with the timestamp in ms, as its record queues build them).

    Accessors as in Kafka: ``topic()``, ``partition()``, ``offset()``, ``timestamp()`` (the
    metadata timestamp, CreateTime or LogAppendTime, in ms), ``key()``, ``value()``, ``headers()``.

    Raises
    ------
    TypeError
        If neither form's arguments are all given.
    """

    __slots__ = ("_topic", "_partition", "_offset", "_timestamp", "_key", "_value", "_headers")

    def __init__(self, topic: str, partition: int, offset: int, timestamp: Any = _UNSET, key: Any = _UNSET,
                 value: Any = _UNSET, headers: tuple = ()) -> None:
        if value is _UNSET or timestamp is _UNSET:  # Kafka's ConsumerRecord(topic, partition, offset, key, value)
            if timestamp is _UNSET and key is not _UNSET and value is not _UNSET:
                timestamp = NO_TIMESTAMP  # keywords key= and value=
            elif value is _UNSET and timestamp is not _UNSET and key is not _UNSET:
                timestamp, key, value = NO_TIMESTAMP, timestamp, key  # five positional arguments
            else:
                raise TypeError("ConsumerRecord() takes (topic, partition, offset, key, value) or "
                                "(topic, partition, offset, timestamp, key, value[, headers])")
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
