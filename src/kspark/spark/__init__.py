"""Host 2: Spark Structured Streaming (the only kspark package that imports pyspark)."""

from ._kafka_streams import KafkaStreams

__all__ = ["KafkaStreams"]
