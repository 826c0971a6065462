"""Host 1: the in-process ``TopologyTestDriver`` (Kafka ``kafka-streams-test-utils``)."""

from ._driver import TestInputTopic, TestOutputTopic, TestRecord, TopologyTestDriver
from ._jvm import JvmArtifactsMissing
from ._kafka_broker import KafkaBroker
from ._mock_context import CapturedForward, CapturedPunctuator, MockProcessorContext

__all__ = ["CapturedForward", "CapturedPunctuator", "JvmArtifactsMissing", "KafkaBroker", "MockProcessorContext",
           "TestInputTopic", "TestOutputTopic", "TestRecord", "TopologyTestDriver"]
