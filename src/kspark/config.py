"""Streams configuration (Kafka ``StreamsConfig``), with kspark's host keys.

Keys keep Kafka's names. kspark adds ``kspark.*`` keys for the Spark host; keys that start
with ``spark.`` are handed to the SparkSession unchanged.
"""

from __future__ import annotations

from typing import Any, Mapping

from .errors import ConfigException

__all__ = ["StreamsConfig"]


class StreamsConfig:
    """Validated configuration (Kafka ``StreamsConfig``).

    Parameters
    ----------
    props : mapping of str to value, optional
        Configuration; unknown keys (other than ``spark.*``) raise ``ConfigException``.

    Raises
    ------
    ConfigException
        For an unknown key or a value of the wrong type, naming the key.
    """

    APPLICATION_ID_CONFIG = "application.id"
    DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG = "default.timestamp.extractor"
    DEFAULT_KEY_SERDE_CLASS_CONFIG = "default.key.serde"
    DEFAULT_VALUE_SERDE_CLASS_CONFIG = "default.value.serde"
    MAX_TASK_IDLE_MS_CONFIG = "max.task.idle.ms"
    DEFAULT_DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG = "default.deserialization.exception.handler"
    PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG = "processing.exception.handler"
    ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG = "errors.deadletterqueue.topic.name"
    STATE_DIR_CONFIG = "state.dir"
    STATESTORE_CACHE_MAX_BYTES_CONFIG = "statestore.cache.max.bytes"
    TOPICS_DIR_CONFIG = "kspark.topics.dir"
    SPARK_MASTER_CONFIG = "kspark.spark.master"
    TRIGGER_CONFIG = "kspark.trigger"
    MAX_RECORDS_PER_TRIGGER_CONFIG = "kspark.max.records.per.trigger"
    REPARTITION_BEFORE_STATEFUL_PROCESS_CONFIG = "kspark.repartition.before.stateful.process"
    """kspark's addition: ``true`` makes ``StreamsBuilder.build()`` insert a repartition topic in
    front of a ``process``/``processValues`` with state stores whose input key was changed
    upstream; ``false`` (default, Kafka's behaviour) only logs a WARNING. Read by
    ``StreamsBuilder(config)`` and ``StreamsBuilder.build(config)`` (it shapes the topology, like
    Kafka's ``TopologyConfig``); in the ``KafkaStreams`` config it has no effect."""

    _DEFAULTS: dict[str, Any] = {
        APPLICATION_ID_CONFIG: None,
        DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG: None,  # FailOnInvalidTimestamp (rule T-2)
        DEFAULT_KEY_SERDE_CLASS_CONFIG: None,  # Serdes.String()
        DEFAULT_VALUE_SERDE_CLASS_CONFIG: None,  # Serdes.JSON()
        MAX_TASK_IDLE_MS_CONFIG: 0,
        DEFAULT_DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG: None,  # LogAndFailExceptionHandler
        PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG: None,  # LogAndFailProcessingExceptionHandler
        ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG: None,
        STATE_DIR_CONFIG: "/tmp/kspark-streams",
        STATESTORE_CACHE_MAX_BYTES_CONFIG: 10 * 1024 * 1024,  # Kafka's default; 0 disables the record cache
        TOPICS_DIR_CONFIG: "/tmp/kspark-topics",
        SPARK_MASTER_CONFIG: "local[*]",
        TRIGGER_CONFIG: "availableNow",
        MAX_RECORDS_PER_TRIGGER_CONFIG: None,
        REPARTITION_BEFORE_STATEFUL_PROCESS_CONFIG: False,
    }
    _BOOL_KEYS = {REPARTITION_BEFORE_STATEFUL_PROCESS_CONFIG}
    _INT_KEYS = {MAX_TASK_IDLE_MS_CONFIG, MAX_RECORDS_PER_TRIGGER_CONFIG, STATESTORE_CACHE_MAX_BYTES_CONFIG}

    def __init__(self, props: Mapping[str, Any] | None = None) -> None:
        self._values = dict(self._DEFAULTS)
        for key, value in (props or {}).items():
            if key.startswith("spark."):
                self._values[key] = value
                continue
            if key not in self._DEFAULTS:
                raise ConfigException(f"Unknown configuration '{key}'. Known keys: {sorted(self._DEFAULTS)}")
            if key in self._INT_KEYS and value is not None:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ConfigException(f"Invalid value {value!r} for configuration {key}: Expected value to be a 64-bit integer.")
            if key in self._BOOL_KEYS:
                value = self._toBool(key, value)
            self._values[key] = value

    @staticmethod
    def _toBool(key: str, value: Any) -> bool:
        # Kafka's ConfigDef.Type.BOOLEAN: a boolean or the strings "true"/"false" (any case)
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ConfigException(f"Invalid value {value!r} for configuration {key}: Expected value to be either true or false")

    def get(self, key: str) -> Any:
        return self._values[key]

    def sparkConfs(self) -> dict[str, Any]:
        return {k: v for k, v in self._values.items() if k.startswith("spark.")}

    def defaultKeySerde(self):
        from .serialization import Serdes

        return self._values[self.DEFAULT_KEY_SERDE_CLASS_CONFIG] or Serdes.String()

    def defaultValueSerde(self):
        from .serialization import Serdes

        return self._values[self.DEFAULT_VALUE_SERDE_CLASS_CONFIG] or Serdes.JSON()

    def deserializationExceptionHandler(self):
        from .errors import LogAndFailExceptionHandler

        return self._handler(self.DEFAULT_DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG, LogAndFailExceptionHandler)

    def processingExceptionHandler(self):
        from .errors import LogAndFailProcessingExceptionHandler

        return self._handler(self.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, LogAndFailProcessingExceptionHandler)

    def _handler(self, key: str, default: type):
        value = self._values[key]
        if value is None:
            return default()
        handler = value() if isinstance(value, type) else value
        if not callable(getattr(handler, "handle", None)):
            raise ConfigException(f"Invalid value {value!r} for configuration {key}: it has no handle() method.")
        return handler

    def defaultTimestampExtractor(self):
        from .processor import FailOnInvalidTimestamp

        return self._values[self.DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG] or FailOnInvalidTimestamp()
