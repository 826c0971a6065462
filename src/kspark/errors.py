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


class ProducerRecord(_NamedTuple):
    """A record for a producer to send (Kafka ``ProducerRecord<byte[], byte[]>``), as exception
    handlers return dead-letter-queue records: ``topic``, ``partition`` (None: the producer's
    partitioner picks one), ``timestamp`` (ms), serialized ``key`` and ``value`` (bytes or None),
    ``headers`` (``(name, bytes | None)`` pairs)."""

    topic: str
    partition: int | None
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()


# KIP-1034's header names (Kafka ``ExceptionHandlerUtils``)
HEADER_ERRORS_EXCEPTION_NAME = "__streams.errors.exception"
HEADER_ERRORS_STACKTRACE_NAME = "__streams.errors.stacktrace"
HEADER_ERRORS_EXCEPTION_MESSAGE_NAME = "__streams.errors.message"
HEADER_ERRORS_TOPIC_NAME = "__streams.errors.topic"
HEADER_ERRORS_PARTITION_NAME = "__streams.errors.partition"
HEADER_ERRORS_OFFSET_NAME = "__streams.errors.offset"
DEAD_LETTER_QUEUE_TOPIC_CONFIG = "errors.dead.letter.queue.topic.name"


def _utf8(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def exceptionClassName(exception: BaseException) -> str:
    """The ``__streams.errors.exception`` header's text: the exception's class with its module
    (``kspark.serialization.SerializationException``), a builtin's bare (``ValueError``), as
    Java's ``getClass().getName()`` names a class."""
    cls = type(exception)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def buildDeadLetterQueueRecord(deadLetterQueueTopicName: str, key: bytes | None, value: bytes | None,
                               context: "ErrorHandlerContext", exception: BaseException) -> ProducerRecord:
    """Kafka ``ExceptionHandlerUtils.buildDeadLetterQueueRecord`` (KIP-1034): a record for
    ``deadLetterQueueTopicName`` with ``key``/``value`` (the failed input's bytes), the context's
    timestamp, no partition, the context's headers and then ``__streams.errors.exception``
    (``exceptionClassName``), ``.message`` (``str(exception)``), ``.stacktrace`` (the Python
    traceback), ``.topic`` (null in a punctuator), ``.partition`` and ``.offset``, UTF-8.

    Raises
    ------
    ConfigException
        If ``deadLetterQueueTopicName`` is None (Kafka: ``InvalidConfigurationException``).
    """
    import traceback

    if deadLetterQueueTopicName is None:
        raise ConfigException(f"{DEAD_LETTER_QUEUE_TOPIC_CONFIG} cannot be null while building dead letter queue record")
    stacktrace = "".join(traceback.format_exception(type(exception), exception, exception.__traceback__))
    headers = tuple(context.headers or ()) + (
        (HEADER_ERRORS_EXCEPTION_NAME, _utf8(exceptionClassName(exception))),
        (HEADER_ERRORS_EXCEPTION_MESSAGE_NAME, _utf8(str(exception))),
        (HEADER_ERRORS_STACKTRACE_NAME, _utf8(stacktrace)),
        (HEADER_ERRORS_TOPIC_NAME, _utf8(context.topic)),
        (HEADER_ERRORS_PARTITION_NAME, _utf8(str(context.partition))),
        (HEADER_ERRORS_OFFSET_NAME, _utf8(str(context.offset))),
    )
    return ProducerRecord(deadLetterQueueTopicName, None, context.timestamp, key, value, headers)


def maybeBuildDeadLetterQueueRecords(deadLetterQueueTopicName: str | None, key: bytes | None, value: bytes | None,
                                     context: "ErrorHandlerContext", exception: BaseException) -> list[ProducerRecord]:
    """Kafka ``ExceptionHandlerUtils.maybeBuildDeadLetterQueueRecords``: ``[buildDeadLetterQueueRecord(...)]``
    when ``deadLetterQueueTopicName`` is set, else ``[]``."""
    if deadLetterQueueTopicName is None:
        return []
    return [buildDeadLetterQueueRecord(deadLetterQueueTopicName, key, value, context, exception)]


class _Result(_Enum):
    RESUME = "RESUME"
    FAIL = "FAIL"


class _Response:
    """What a handler's ``handleError`` returns (Kafka ``*ExceptionHandler.Response``): whether
    to resume or fail, and dead-letter-queue records to send first (in both cases)."""

    Result = _Result

    def __init__(self, result: _Result, deadLetterQueueRecords=()) -> None:
        self._result, self._records = result, list(deadLetterQueueRecords or ())

    @classmethod
    def resume(cls, deadLetterQueueRecords=()) -> "_Response":
        """Drop the record (counted) and go on, after sending ``deadLetterQueueRecords``."""
        return cls(_Result.RESUME, deadLetterQueueRecords)

    @classmethod
    def fail(cls, deadLetterQueueRecords=()) -> "_Response":
        """Fail the task, after sending ``deadLetterQueueRecords``."""
        return cls(_Result.FAIL, deadLetterQueueRecords)

    def result(self) -> _Result:
        return self._result

    def deadLetterQueueRecords(self) -> list[ProducerRecord]:
        return self._records

    def __repr__(self) -> str:
        return f"Response({self._result.name}, {len(self._records)} dead-letter records)"


class _ConfiguredDeadLetterQueue:
    """Kafka's built-in handlers read ``errors.dead.letter.queue.topic.name`` in ``configure``."""

    deadLetterQueueTopic: str | None = None

    def configure(self, configs) -> None:
        value = configs.get(DEAD_LETTER_QUEUE_TOPIC_CONFIG) if configs is not None else None
        self.deadLetterQueueTopic = None if value is None else str(value)

    def _deadLetters(self, context: "ErrorHandlerContext", exception: BaseException) -> list[ProducerRecord]:
        return maybeBuildDeadLetterQueueRecords(self.deadLetterQueueTopic, context.sourceRawKey,
                                                context.sourceRawValue, context, exception)


def _fromLegacy(response, responseClass, handler) -> _Response:
    if response is DeserializationHandlerResponse.CONTINUE:
        return responseClass.resume()
    if response is DeserializationHandlerResponse.FAIL:
        return responseClass.fail()
    raise StreamsException(f"{type(handler).__name__}.handle() returned {response!r}, not CONTINUE or FAIL")


class DeserializationExceptionHandler:
    """Decides what happens to a record whose key or value cannot be deserialized (Kafka
    ``DeserializationExceptionHandler``, configured with ``deserialization.exception.handler``).

    Kafka 4's form: ``handleError(context, record, exception)`` returns
    ``DeserializationExceptionHandler.Response.resume(records)`` or ``.fail(records)``, with
    dead-letter-queue records (``ProducerRecord``) the task sends first. The older form,
    ``handle(...)`` returning ``DeserializationHandlerResponse``, still works (the default
    ``handleError`` calls it). ``configure(configs)`` gets the application's config.
    """

    class Response(_Response):
        pass

    def configure(self, configs) -> None:
        pass

    def handleError(self, context: ErrorHandlerContext, record: _Any, exception: Exception) -> _Response:
        return _fromLegacy(self.handle(context, record, exception), DeserializationExceptionHandler.Response, self)

    def handle(self, context: ErrorHandlerContext, record: _Any, exception: Exception) -> DeserializationHandlerResponse:
        raise NotImplementedError


class LogAndFailExceptionHandler(_ConfiguredDeadLetterQueue, DeserializationExceptionHandler):
    """The default: log and fail the task with a ``StreamsException``; with
    ``errors.dead.letter.queue.topic.name`` set, the record goes to the dead-letter queue first."""

    def handleError(self, context, record, exception):
        self.handle(context, record, exception)
        return DeserializationExceptionHandler.Response.fail(self._deadLetters(context, exception))

    def handle(self, context, record, exception):
        _log.error("Exception caught during Deserialization, taskId: %s, topic: %s, partition: %d, offset: %d",
                   context.taskId, context.topic, context.partition, context.offset, exc_info=exception)
        return DeserializationHandlerResponse.FAIL


class LogAndContinueExceptionHandler(_ConfiguredDeadLetterQueue, DeserializationExceptionHandler):
    """Log, skip the record (counted in ``dropped-records``) and go on; with
    ``errors.dead.letter.queue.topic.name`` set, the record goes to the dead-letter queue."""

    def handleError(self, context, record, exception):
        self.handle(context, record, exception)
        return DeserializationExceptionHandler.Response.resume(self._deadLetters(context, exception))

    def handle(self, context, record, exception):
        _log.warning("Exception caught during Deserialization, taskId: %s, topic: %s, partition: %d, offset: %d",
                     context.taskId, context.topic, context.partition, context.offset, exc_info=exception)
        return DeserializationHandlerResponse.CONTINUE


class ProcessingExceptionHandler:
    """Decides what happens when user code in a processor or punctuator raises (KIP-1033, Kafka
    ``ProcessingExceptionHandler``, configured with ``processing.exception.handler``).

    Kafka 4's form: ``handleError(context, record, exception)`` returns
    ``ProcessingExceptionHandler.Response.resume(records)`` or ``.fail(records)``, with
    dead-letter-queue records (``ProducerRecord``, e.g. ``maybeBuildDeadLetterQueueRecords(...)``)
    the task sends first. The older form, ``handle(...)`` returning ``ProcessingHandlerResponse``,
    still works. ``record`` is the ``Record`` being processed (None in a punctuator).
    """

    class Response(_Response):
        pass

    def configure(self, configs) -> None:
        pass

    def handleError(self, context: ErrorHandlerContext, record: _Any, exception: Exception) -> _Response:
        return _fromLegacy(self.handle(context, record, exception), ProcessingExceptionHandler.Response, self)

    def handle(self, context: ErrorHandlerContext, record: _Any, exception: Exception) -> ProcessingHandlerResponse:
        raise NotImplementedError


def _logProcessingError(level: int, context: ErrorHandlerContext, exception: Exception) -> None:
    _log.log(level, "Exception caught during message processing, processor node: %s, taskId: %s, source topic: %s, "
             "source partition: %d, source offset: %d", context.processorNodeId, context.taskId,
             context.topic, context.partition, context.offset, exc_info=exception)


class LogAndFailProcessingExceptionHandler(_ConfiguredDeadLetterQueue, ProcessingExceptionHandler):
    """The default: log and fail the task with a ``StreamsException``; with
    ``errors.dead.letter.queue.topic.name`` set, the input record's original bytes go to the
    dead-letter queue first (KIP-1034)."""

    def handleError(self, context, record, exception):
        _logProcessingError(_logging.ERROR, context, exception)
        return ProcessingExceptionHandler.Response.fail(self._deadLetters(context, exception))

    def handle(self, context, record, exception):
        _logProcessingError(_logging.ERROR, context, exception)
        return ProcessingHandlerResponse.FAIL


class LogAndContinueProcessingExceptionHandler(_ConfiguredDeadLetterQueue, ProcessingExceptionHandler):
    """Log, drop the record at the failing node (counted in ``dropped-records``) and go on; with
    ``errors.dead.letter.queue.topic.name`` set, the input record's original bytes go to the
    dead-letter queue (KIP-1034)."""

    def handleError(self, context, record, exception):
        _logProcessingError(_logging.WARNING, context, exception)
        return ProcessingExceptionHandler.Response.resume(self._deadLetters(context, exception))

    def handle(self, context, record, exception):
        _logProcessingError(_logging.WARNING, context, exception)
        return ProcessingHandlerResponse.CONTINUE


def handleError(handler, context: ErrorHandlerContext, record, exception: Exception) -> _Response:
    """``handler.handleError(...)``, or for a handler with only Kafka 3's ``handle(...)``, its
    answer as a ``Response`` (kspark internal).

    Raises
    ------
    StreamsException
        If the handler raises ("Fatal user code error in exception handler ..."), or answers
        something else than a ``Response`` or CONTINUE/FAIL.
    """
    try:
        method = getattr(handler, "handleError", None)
        if method is None:
            return _fromLegacy(handler.handle(context, record, exception), _Response, handler)
        response = method(context, record, exception)
    except StreamsException:
        raise
    except Exception as handlerError:
        raise StreamsException(f"Fatal user code error in exception handler {type(handler).__name__}") from handlerError
    if not isinstance(response, _Response):
        raise StreamsException(f"{type(handler).__name__}.handleError() returned {response!r}, not a Response")
    return response


__all__ += [
    "DeserializationExceptionHandler",
    "ProducerRecord",
    "buildDeadLetterQueueRecord",
    "maybeBuildDeadLetterQueueRecords",
    "DeserializationHandlerResponse",
    "ErrorHandlerContext",
    "LogAndContinueExceptionHandler",
    "LogAndContinueProcessingExceptionHandler",
    "LogAndFailExceptionHandler",
    "LogAndFailProcessingExceptionHandler",
    "ProcessingExceptionHandler",
    "ProcessingHandlerResponse",
]
