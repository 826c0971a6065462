"""Topics: kspark's embedded default "Kafka" (local, file-backed, partitioned logs) and Kafka
itself, behind one interface (:class:`Topics`); no pyspark here."""

from ._api import READ_SCHEMA, RECORD_SCHEMA, CorruptRecordException, OffsetOutOfRangeException, Topics, openTopics
from ._local import LocalTopics, TopicExistsException, UnknownTopicOrPartitionException

__all__ = ["READ_SCHEMA", "RECORD_SCHEMA", "CorruptRecordException", "LocalTopics", "OffsetOutOfRangeException", "TopicExistsException", "Topics",
           "UnknownTopicOrPartitionException", "openTopics"]


def __getattr__(name: str):
    if name == "KafkaTopics":  # confluent-kafka is imported only when Kafka is used
        from ._kafka import KafkaTopics

        return KafkaTopics
    raise AttributeError(f"module 'kspark.topics' has no attribute {name!r}")
