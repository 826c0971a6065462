"""Host 1: the in-process ``TopologyTestDriver`` (Kafka ``kafka-streams-test-utils``)."""

from ._driver import TestInputTopic, TestOutputTopic, TestRecord, TopologyTestDriver

__all__ = ["TestInputTopic", "TestOutputTopic", "TestRecord", "TopologyTestDriver"]
