"""kspark: Kafka Streams' processing model for Python, executed on Apache Spark.

The public names mirror Kafka Streams (``StreamsBuilder``, ``KStream``, ``Topology``,
``KafkaStreams``, ``StreamsConfig``...). ``kspark.testing`` holds the ``TopologyTestDriver``;
``kspark.spark`` the Spark host (imported lazily by ``KafkaStreams``).
"""

from ._auto_offset_reset import AutoOffsetReset
from .config import StreamsConfig
from .dsl import (
    Branched, BranchedKStream, Printed,
    Change, CogroupedKStream, Consumed, EmitStrategy, Suppressed, GlobalKTable, Grouped, Joined, JoinWindows, KGroupedStream, KGroupedTable, KStream, KTable, Materialized, Named, Produced, Repartitioned, StreamJoined, StreamsBuilder,
    SessionWindow, SessionWindowedCogroupedKStream, SessionWindowedKStream, SessionWindows,
    SlidingWindowedCogroupedKStream, SlidingWindowedKStream, SlidingWindows, TimeWindow, TimeWindowedCogroupedKStream,
    TimeWindowedKStream, TimeWindows, Window,
    Windowed, WindowedSerdes, Windows,
)
from .errors import (
    ConfigException,
    DeserializationExceptionHandler,
    InvalidStateStoreException,
    DeserializationHandlerResponse,
    ErrorHandlerContext,
    LogAndContinueExceptionHandler,
    LogAndContinueProcessingExceptionHandler,
    LogAndFailExceptionHandler,
    LogAndFailProcessingExceptionHandler,
    ProcessingExceptionHandler,
    ProcessingHandlerResponse,
    StreamsException,
    MissingSourceTopicException,
    TaskAssignmentException,
    TopologyException,
    UnknownStateStoreException,
)
from .keyvalue import KeyValue
from .processor import (
    Cancellable,
    ConsumerRecord,
    ContextualFixedKeyProcessor,
    ContextualProcessor,
    FailOnInvalidTimestamp,
    FixedKeyProcessor,
    FixedKeyRecord,
    LogAndSkipOnInvalidTimestamp,
    Processor,
    ProcessorContext,
    PunctuationType,
    Record,
    RecordMetadata,
    TimestampExtractor,
    UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
)
from .serialization import Serde, Serdes
from .state import (
    KeyValueStore, QueryableStoreTypes, SessionStore, StoreQueryParameters, Stores, ValueAndTimestamp, WindowStore,
)
from .topology import Topology


def __getattr__(name: str):
    if name == "KafkaStreams":  # keep `import kspark` free of pyspark
        from .spark import KafkaStreams

        return KafkaStreams
    raise AttributeError(f"module 'kspark' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = sorted(
    [
        "AutoOffsetReset", "Branched", "BranchedKStream", "Printed", "Cancellable", "Change", "CogroupedKStream", "ConfigException", "Consumed", "ConsumerRecord", "ContextualFixedKeyProcessor", "ContextualProcessor", "FailOnInvalidTimestamp", "FixedKeyProcessor", "FixedKeyRecord", "GlobalKTable", "Grouped", "Joined", "JoinWindows", "KGroupedStream", "KGroupedTable",
        "DeserializationExceptionHandler", "EmitStrategy", "InvalidStateStoreException", "QueryableStoreTypes",
        "StoreQueryParameters", "UnknownStateStoreException", "DeserializationHandlerResponse", "ErrorHandlerContext",
        "LogAndContinueExceptionHandler", "LogAndContinueProcessingExceptionHandler", "LogAndFailExceptionHandler",
        "LogAndFailProcessingExceptionHandler", "ProcessingExceptionHandler", "ProcessingHandlerResponse",
        "KStream", "KTable", "KafkaStreams", "KeyValue", "KeyValueStore", "LogAndSkipOnInvalidTimestamp",
        "Materialized", "MissingSourceTopicException", "Named", "Processor", "ProcessorContext", "Produced", "PunctuationType", "Record", "RecordMetadata",
        "Repartitioned", "Serde", "Serdes", "SessionWindow", "SessionWindowedCogroupedKStream", "SessionWindowedKStream", "SessionStore", "SessionWindows", "SlidingWindowedCogroupedKStream", "SlidingWindowedKStream", "SlidingWindows", "StreamJoined", "StreamsBuilder", "StreamsConfig", "StreamsException", "Stores", "Suppressed",
        "TaskAssignmentException", "TimeWindow", "TimeWindowedCogroupedKStream", "TimeWindowedKStream", "TimeWindows", "TimestampExtractor", "Topology", "TopologyException",
        "UsePartitionTimeOnInvalidTimestamp", "ValueAndTimestamp", "WallclockTimestampExtractor", "Window", "WindowStore",
        "Windowed", "WindowedSerdes", "Windows",
    ],
    key=str.casefold,
)
