"""Host 1: the in-process ``TopologyTestDriver`` (Kafka ``kafka-streams-test-utils``)."""

from ._driver import TestInputTopic, TestOutputTopic, TestRecord, TopologyTestDriver
from ._jvm import JvmArtifactsMissing
from ._kafka_broker import KafkaBroker

__all__ = ["JvmArtifactsMissing", "KafkaBroker", "TestInputTopic", "TestOutputTopic", "TestRecord", "TopologyTestDriver"]
