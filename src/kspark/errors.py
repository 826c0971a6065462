"""Exception types, named as Kafka Streams names them.

Mirrors ``org.apache.kafka.streams.errors`` and ``org.apache.kafka.common.config.ConfigException``.
"""

from __future__ import annotations

__all__ = [
    "ConfigException",
    "InvalidStateStoreException",
    "ProcessorStateException",
    "StreamsException",
    "TaskAssignmentException",
    "TopologyException",
    "UnknownStateStoreException",
]


class StreamsException(Exception):
    """A fatal error in the Streams runtime (Kafka ``StreamsException``)."""


class ProcessorStateException(StreamsException):
    """A state store operation failed, e.g. flushing a record cache whose records failed
    downstream (Kafka ``ProcessorStateException``)."""


class TopologyException(StreamsException):
    """An invalid topology (Kafka ``TopologyException``).

    The message is prefixed with ``"Invalid topology: "`` exactly as Kafka's constructor does
    (rule RP-5).
    """

    def __init__(self, message: str) -> None:
        super().__init__("Invalid topology: " + message)


class MissingSourceTopicException(StreamsException):
    """Source topics of the topology do not exist (Kafka ``MissingSourceTopicException``), with
    Kafka's text: ``"Missing source topics. [a, b]"``."""

    def __init__(self, topics) -> None:
        super().__init__(f"Missing source topics. [{', '.join(sorted(topics))}]")
        self.topics = sorted(topics)


class TaskAssignmentException(StreamsException):
    """Partition counts of internal topics cannot be computed (Kafka ``TaskAssignmentException``)."""


class InvalidStateStoreException(StreamsException):
    """A store cannot be queried: not running, or not of the queried type (Kafka ``InvalidStateStoreException``)."""


class UnknownStateStoreException(InvalidStateStoreException):
    """No store of that name in the topology (Kafka ``UnknownStateStoreException``)."""


class ConfigException(ValueError):
    """An unknown or invalid configuration value (Kafka ``ConfigException``)."""


# ---------------------------------------------------------------------------------------------
# Exception handlers (Kafka ``DeserializationExceptionHandler``, KIP-1033 ``ProcessingExceptionHandler``)
# ---------------------------------------------------------------------------------------------
import logging as _logging
from enum import Enum as _Enum
from typing import Any as _Any, NamedTuple as _NamedTuple

_log = _logging.getLogger("kspark.errors")


class DeserializationHandlerResponse(_Enum):
    CONTINUE = "CONTINUE"
    FAIL = "FAIL"


ProcessingHandlerResponse = DeserializationHandlerResponse


class ErrorHandlerContext(_NamedTuple):
    """Where an error happened (Kafka ``ErrorHandlerContext``): the input record's topic,
    partition, offset, timestamp (ms) and raw bytes, the processor node and the task.
    ``topic`` is None (and offsets -1) for an error in a punctuator."""

    topic: str | None
    partition: int
    offset: int
    timestamp: int
    headers: tuple
    processorNodeId: str | None
    taskId: str
    sourceRawKey: bytes | None = None
    sourceRawValue: bytes | None = None


class DeserializationExceptionHandler:
    """Decides what happens to a record whose key or value cannot be deserialized.

    ``handle(context, record, exception)`` returns ``DeserializationHandlerResponse``;
    configured with ``default.deserialization.exception.handler``.
    """

    def handle(self, context: ErrorHandlerContext, record: _Any, exception: Exception) -> DeserializationHandlerResponse:
        raise NotImplementedError


class LogAndFailExceptionHandler(DeserializationExceptionHandler):
    """The default: log and fail the task with a ``StreamsException``."""

    def handle(self, context, record, exception):
        _log.error("Exception caught during Deserialization, taskId: %s, topic: %s, partition: %d, offset: %d",
                   context.taskId, context.topic, context.partition, context.offset, exc_info=exception)
        return DeserializationHandlerResponse.FAIL


class LogAndContinueExceptionHandler(DeserializationExceptionHandler):
    """Log, skip the record (counted in ``dropped-records``) and go on."""

    def handle(self, context, record, exception):
        _log.warning("Exception caught during Deserialization, taskId: %s, topic: %s, partition: %d, offset: %d",
                     context.taskId, context.topic, context.partition, context.offset, exc_info=exception)
        return DeserializationHandlerResponse.CONTINUE


class ProcessingExceptionHandler:
    """Decides what happens when user code in a processor or punctuator raises (KIP-1033).

    ``handle(context, record, exception)`` returns ``ProcessingHandlerResponse``; configured
    with ``processing.exception.handler``. ``record`` is the ``Record`` being processed (None in
    a punctuator).
    """

    def handle(self, context: ErrorHandlerContext, record: _Any, exception: Exception) -> ProcessingHandlerResponse:
        raise NotImplementedError


def _logProcessingError(level: int, context: ErrorHandlerContext, exception: Exception) -> None:
    _log.log(level, "Exception caught during message processing, processor node: %s, taskId: %s, source topic: %s, "
             "source partition: %d, source offset: %d", context.processorNodeId, context.taskId,
             context.topic, context.partition, context.offset, exc_info=exception)


class LogAndFailProcessingExceptionHandler(ProcessingExceptionHandler):
    """The default: log and fail the task with a ``StreamsException``."""

    def handle(self, context, record, exception):
        _logProcessingError(_logging.ERROR, context, exception)
        return ProcessingHandlerResponse.FAIL


class LogAndContinueProcessingExceptionHandler(ProcessingExceptionHandler):
    """Log, drop the record at the failing node (counted in ``dropped-records``) and go on."""

    def handle(self, context, record, exception):
        _logProcessingError(_logging.WARNING, context, exception)
        return ProcessingHandlerResponse.CONTINUE


__all__ += [
    "DeserializationExceptionHandler",
    "DeserializationHandlerResponse",
    "ErrorHandlerContext",
    "LogAndContinueExceptionHandler",
    "LogAndContinueProcessingExceptionHandler",
    "LogAndFailExceptionHandler",
    "LogAndFailProcessingExceptionHandler",
    "ProcessingExceptionHandler",
    "ProcessingHandlerResponse",
]
