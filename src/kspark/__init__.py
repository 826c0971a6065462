"""kspark: Kafka Streams' processing model for Python, executed on Apache Spark.

The public names mirror Kafka Streams (``StreamsBuilder``, ``KStream``, ``Topology``,
``KafkaStreams``, ``StreamsConfig``...). ``kspark.testing`` holds the ``TopologyTestDriver``;
``kspark.spark`` the Spark host (imported lazily by ``KafkaStreams``).
"""

import importlib
from typing import TYPE_CHECKING

# Public name -> the module defining it, imported on first use (PEP 562). Spark's Python helper
# processes (the data source's planner, reader, writer and commit runners, one process each per
# query) import ``kspark.spark._datasource`` and so this package: importing every module of the
# DSL in each of them cost ~0.1 s of a query's start-up per process.
_EXPORTS = {
    "._auto_offset_reset": ("AutoOffsetReset",),
    ".config": ("StreamsConfig",),
    ".dsl": (
        "Branched", "BranchedKStream", "Printed", "Change", "CogroupedKStream", "Consumed", "EmitStrategy",
        "Suppressed", "GlobalKTable", "Grouped", "Joined", "JoinWindows", "KGroupedStream",
        "KGroupedTable", "KStream", "KTable", "Materialized", "Named", "Produced", "Repartitioned",
        "StreamJoined", "StreamsBuilder", "TableJoined", "SessionWindow",
        "SessionWindowedCogroupedKStream", "SessionWindowedKStream", "SessionWindows",
        "SlidingWindowedCogroupedKStream", "SlidingWindowedKStream", "SlidingWindows", "TimeWindow",
        "TimeWindowedCogroupedKStream", "TimeWindowedKStream", "TimeWindows", "Window", "Windowed",
        "WindowedSerdes", "Windows",
    ),
    ".errors": (
        "ConfigException", "DeserializationExceptionHandler", "InvalidStateStoreException",
        "DeserializationHandlerResponse", "ErrorHandlerContext", "LogAndContinueExceptionHandler",
        "LogAndContinueProcessingExceptionHandler", "LogAndFailExceptionHandler",
        "LogAndFailProcessingExceptionHandler", "ProcessingExceptionHandler",
        "ProcessingHandlerResponse", "StreamsException", "MissingSourceTopicException",
        "TaskAssignmentException", "TopologyException", "UnknownStateStoreException",
    ),
    ".keyvalue": ("KeyValue",),
    ".processor": (
        "Cancellable", "ConsumerRecord", "ContextualFixedKeyProcessor", "ContextualProcessor",
        "FailOnInvalidTimestamp", "FixedKeyProcessor", "FixedKeyRecord",
        "LogAndSkipOnInvalidTimestamp", "Processor", "ProcessorContext", "PunctuationType",
        "Record", "RecordMetadata", "TimestampExtractor", "UsePartitionTimeOnInvalidTimestamp",
        "WallclockTimestampExtractor",
    ),
    ".serialization": ("Deserializer", "Serde", "Serdes", "Serializer"),
    ".schema_registry": ("GenericAvroSerde", "SpecificAvroSerde", "KafkaProtobufSerde", "KafkaJsonSchemaSerde"),
    ".state": (
        "KeyValueStore", "QueryableStoreTypes", "SessionStore", "StoreQueryParameters", "Stores",
        "ValueAndTimestamp", "VersionedKeyValueStore", "VersionedRecord", "WindowStore",
    ),
    ".topology": ("Topology",),
    ".spark": ("KafkaStreams",),  # keep `import kspark` free of pyspark
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value
    try:  # a subpackage (``kspark.state``...), as after an eager import of the package
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module 'kspark' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULE_OF})


if TYPE_CHECKING:  # the same names, for type checkers and IDEs (test_public_api checks they agree)
    from ._auto_offset_reset import AutoOffsetReset
    from .config import StreamsConfig
    from .dsl import (
        Branched, BranchedKStream, Printed,
        Change, CogroupedKStream, Consumed, EmitStrategy, Suppressed, GlobalKTable, Grouped, Joined, JoinWindows, KGroupedStream, KGroupedTable, KStream, KTable, Materialized, Named, Produced, Repartitioned, StreamJoined, StreamsBuilder, TableJoined,
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
    from .serialization import Deserializer, Serde, Serdes, Serializer
    from .schema_registry import GenericAvroSerde, KafkaJsonSchemaSerde, KafkaProtobufSerde, SpecificAvroSerde
    from .state import (
        KeyValueStore, QueryableStoreTypes, SessionStore, StoreQueryParameters, Stores, ValueAndTimestamp,
        VersionedKeyValueStore, VersionedRecord, WindowStore,
    )
    from .topology import Topology
    from .spark import KafkaStreams

__version__ = "0.1.0"

__all__ = sorted(_MODULE_OF, key=str.casefold)
