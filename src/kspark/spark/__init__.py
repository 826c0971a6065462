"""Host 2: Spark Structured Streaming (the only kspark package that imports pyspark)."""

from ._quiet import silencePandasWarning

silencePandasWarning()  # before any pyspark import of ours (kspark.spark._quiet)

from ._kafka_streams import KafkaStreams  # noqa: E402

__all__ = ["KafkaStreams"]
