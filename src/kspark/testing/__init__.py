"""Host 1: the in-process ``TopologyTestDriver`` (Kafka ``kafka-streams-test-utils``)."""

from ._driver import TestInputTopic, TestOutputTopic, TestRecord, TopologyTestDriver
from ._jvm import JvmArtifactsMissing
from ._kafka_broker import KafkaBroker
from ._mock_context import CapturedForward, CapturedPunctuator, MockProcessorContext
from ._schema_registry import SchemaRegistry
from ._spark_cluster import SparkStandaloneCluster

__all__ = ["CapturedForward", "CapturedPunctuator", "JvmArtifactsMissing", "KafkaBroker", "MockProcessorContext",
           "SchemaRegistry", "SparkStandaloneCluster", "TestInputTopic", "TestOutputTopic", "TestRecord", "TopologyTestDriver"]
