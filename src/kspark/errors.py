"""Exception types, named as Kafka Streams names them.

Mirrors ``org.apache.kafka.streams.errors`` and ``org.apache.kafka.common.config.ConfigException``.
"""

from __future__ import annotations

__all__ = [
    "ConfigException",
    "StreamsException",
    "TaskAssignmentException",
    "TopologyException",
]


class StreamsException(Exception):
    """A fatal error in the Streams runtime (Kafka ``StreamsException``)."""


class TopologyException(StreamsException):
    """An invalid topology (Kafka ``TopologyException``).

    The message is prefixed with ``"Invalid topology: "`` exactly as Kafka's constructor does
    (rule RP-5).
    """

    def __init__(self, message: str) -> None:
        super().__init__("Invalid topology: " + message)


class TaskAssignmentException(StreamsException):
    """Partition counts of internal topics cannot be computed (Kafka ``TaskAssignmentException``)."""


class ConfigException(ValueError):
    """An unknown or invalid configuration value (Kafka ``ConfigException``)."""
