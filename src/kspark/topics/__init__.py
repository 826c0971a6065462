"""kspark's embedded default "Kafka": local, file-backed, partitioned topic logs (no pyspark)."""

from ._local import RECORD_SCHEMA, LocalTopics, TopicExistsException, UnknownTopicOrPartitionException

__all__ = ["RECORD_SCHEMA", "LocalTopics", "TopicExistsException", "UnknownTopicOrPartitionException"]
