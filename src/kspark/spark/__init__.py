"""Host 2: Spark Structured Streaming (the only kspark package that imports pyspark)."""

from ._quiet import silencePandasWarning

silencePandasWarning()  # before any pyspark import of ours (kspark.spark._quiet)

__all__ = ["KafkaStreams"]


def __getattr__(name: str):
    # imported on first use: Spark's Python helper processes import kspark.spark._datasource only
    if name == "KafkaStreams":
        from ._kafka_streams import KafkaStreams

        return KafkaStreams
    raise AttributeError(f"module 'kspark.spark' has no attribute {name!r}")
