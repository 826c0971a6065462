"""Streams configuration (Kafka ``StreamsConfig``), with kspark's host keys.

Keys keep Kafka's names. Every key of Kafka 4.3's ``StreamsConfig`` and of the clients it
configures (``ConsumerConfig``, ``ProducerConfig``, ``AdminClientConfig``, unprefixed or under
``consumer.``, ``main.consumer.``, ``restore.consumer.``, ``global.consumer.``, ``producer.``,
``admin.``; ``TopicConfig`` names under ``topic.``) is known, from lists generated from the Kafka
jars (``kspark._config_keys_kafka``, ``jvm/configkeys/generate.py``). kspark adds ``kspark.*``
keys for the Spark host; keys that start with ``spark.`` go to the SparkSession.

Every value is parsed and checked when the ``StreamsConfig`` is built, as Kafka's ``ConfigDef``
does (numbers and booleans may be strings; serdes, timestamp extractors and exception handlers
may be classes or class names), and a bad one raises ``ConfigException`` with Kafka's text
``Invalid value <value> for configuration <key>: <reason>``. A key that has no effect on Spark
is accepted and logged once (logger ``kspark.config``) with the reason.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import os
import re
from datetime import timedelta
from typing import Any, Mapping

from . import _config_keys_kafka as _kafka
from . import _secrets
from .errors import ConfigException

__all__ = ["StreamsConfig"]

_log = logging.getLogger("kspark.config")

_REQUIRED = "<required>"  # _config_keys_kafka's mark of a key without default
EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION = "__emit.interval.ms.kstreams.windowed.aggregation__"
# Kafka's internal interval between the outer-join store's emits of non-joined records (KIP-633)
EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX = "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__"

# Kafka's client prefixes -> the client whose keys may follow (StreamsConfig.*_PREFIX)
_CLIENT_PREFIXES = {
    "main.consumer.": _kafka.CONSUMER, "restore.consumer.": _kafka.CONSUMER, "global.consumer.": _kafka.CONSUMER,
    "consumer.": _kafka.CONSUMER, "producer.": _kafka.PRODUCER, "admin.": _kafka.ADMIN,
}
_CLIENT_KEYS = {**_kafka.ADMIN, **_kafka.PRODUCER, **_kafka.CONSUMER}  # unprefixed client keys
_TOPIC_KEYS = frozenset(_kafka.TOPIC)

# Deprecated or former names -> the key they set (the current key wins when both are given).
_ALIASES = {
    "cache.max.bytes.buffering": "statestore.cache.max.bytes",  # Kafka, deprecated (KIP-770)
    "default.deserialization.exception.handler": "deserialization.exception.handler",  # Kafka, deprecated (KIP-1056)
    "default.production.exception.handler": "production.exception.handler",  # Kafka, deprecated (KIP-1056)
    "errors.deadletterqueue.topic.name": "errors.dead.letter.queue.topic.name",  # kspark's spelling before Kafka 4.3's
}

_KSPARK_DEFS: dict[str, tuple] = {  # key -> (type, default, validator), as in _config_keys_kafka
    "kspark.topics.dir": ("STRING", "/tmp/kspark-topics", None),
    "kspark.spark.master": ("STRING", "local[*]", None),
    "kspark.trigger": ("STRING", "availableNow", None),
    "kspark.max.records.per.trigger": ("LONG", None, ("range", 1, None)),
    "kspark.repartition.before.stateful.process": ("BOOLEAN", False, None),
    # the Spark host's local stores (RocksDB per task, Kafka Streams' task directories): where, and
    # how much memory RocksDB may use per Python worker (block cache + memtables), and how many
    # entries a store keeps loaded in Python between micro-batches
    "kspark.store.dir": ("STRING", None, None),
    "kspark.store.memory.bytes": ("LONG", 384 * 1024 * 1024, ("range", 1024 * 1024, None)),
    "kspark.store.cache.max.entries": ("LONG", 100_000, ("range", 0, None)),
    # off until an A/B shows a gain (bench/README.md rounds 18b and 22: none beyond the noise at 100K, 1M
    # and 10M keys; in process a MultiGet costs what the point reads it replaces cost)
    "kspark.store.prefill": ("BOOLEAN", False, None),
    # taking over an application's state (kspark.spark._takeover): a missing changelog starts empty
    "kspark.allow.missing.changelogs": ("BOOLEAN", False, None),
    # the terminal view while KafkaStreams runs (auto: rich on a terminal, else a line per batch)
    "kspark.progress": ("STRING", None, ("in", ("auto", "rich", "plain", "none"))),
    # details back: Spark's INFO logs and everything its JVM prints
    "kspark.verbose": ("BOOLEAN", False, None),
    # KafkaStreams.metrics() for Prometheus: the port of the HTTP endpoint (unset: none)
    "kspark.metrics.prometheus.port": ("INT", None, ("range", 0, 65535)),
    EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION: ("LONG", 0, ("range", 0, None)),
    EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX: ("LONG", 0, ("range", 0, None)),
}
# Confluent's schema-registry serde keys (AbstractKafkaSchemaSerDeConfig and the format configs),
# passed with the whole config to default.key.serde / default.value.serde's configure()
# (kspark.schema_registry)
_SERDE_KEYS: dict[str, tuple] = {
    "schema.registry.url": ("STRING", None, None),
    "basic.auth.credentials.source": ("STRING", "URL", ("in", ("URL", "USER_INFO"))),
    "basic.auth.user.info": ("PASSWORD", None, None),
    "schema.registry.basic.auth.user.info": ("PASSWORD", None, None),
    "auto.register.schemas": ("BOOLEAN", True, None),
    "use.latest.version": ("BOOLEAN", False, None),
    "normalize.schemas": ("BOOLEAN", False, None),
    "key.subject.name.strategy": ("STRING", "io.confluent.kafka.serializers.subject.TopicNameStrategy", None),
    "value.subject.name.strategy": ("STRING", "io.confluent.kafka.serializers.subject.TopicNameStrategy", None),
    "specific.avro.reader": ("BOOLEAN", False, None),
    "specific.protobuf.key.type": ("STRING", None, None),
    "specific.protobuf.value.type": ("STRING", None, None),
    "json.key.type": ("STRING", None, None),
    "json.value.type": ("STRING", None, None),
}
# schema.registry.<key>: confluent-kafka's SchemaRegistryClient settings (kspark.schema_registry)
_REGISTRY_CLIENT_KEYS = ("max.retries", "retries.wait.ms", "retries.max.wait.ms", "timeout", "cache.capacity",
                         "cache.latest.ttl.sec", "ssl.ca.location", "ssl.certificate.location", "ssl.key.location",
                         "ssl.key.password")
_SERDE_KEYS.update({f"schema.registry.{k}": ("STRING", None, None) for k in _REGISTRY_CLIENT_KEYS})
# kspark's own defaults and checks for Kafka keys
_STREAMS_OVERRIDES: dict[str, tuple] = {
    "state.dir": ("STRING", "/tmp/kspark-streams", None),
    "max.task.idle.ms": ("LONG", 0, ("range", -1, None)),  # -1 = MAX_TASK_IDLE_MS_DISABLED
    "bootstrap.servers": ("LIST", [], None),  # optional here: without it kspark uses its local topics
}

# Streams keys kspark applies on every host, and those the Kafka backend applies (with
# bootstrap.servers); the other Streams keys are accepted with the reason they change nothing.
_APPLIED = frozenset({
    "application.id", "state.dir", "default.key.serde", "default.value.serde", "default.timestamp.extractor",
    "deserialization.exception.handler", "processing.exception.handler", "errors.dead.letter.queue.topic.name",
    "max.task.idle.ms", "statestore.cache.max.bytes", "bootstrap.servers",
    # the emit-final aggregations' wall-clock throttle; 0 when not set (TopologyTestDriver's value) on every host
    EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION,
    "metrics.sample.window.ms", "metrics.num.samples", "client.id",
    *(k for k in _KSPARK_DEFS if k.startswith("kspark.")), *_SERDE_KEYS,
})
_KAFKA_ONLY = frozenset({"processing.guarantee", "replication.factor", "windowstore.changelog.additional.retention.ms"})
_NO_STANDBYS = "kspark has no standby or warm-up tasks: a task on a new executor restores its stores from their changelogs"
_NO_ASSIGNOR = "kspark assigns tasks itself (one per input partition) and never rebalances"
_IGNORED = {
    "acceptable.recovery.lag": _NO_STANDBYS,
    "allow.os.group.write.access": "state.dir holds Spark's checkpoint, written with Spark's permissions",
    "application.server": "kspark has no interactive queries across instances (KafkaStreams.checkpointedStore reads a store)",
    "buffered.records.per.partition": "kspark.max.records.per.trigger bounds what a micro-batch reads",
    "built.in.metrics.version": "kspark has one metrics version (KafkaStreams.metrics())",
    "commit.interval.ms": "on Spark a commit is a micro-batch; kspark.trigger sets how often one runs "
                          "(under kspark.trigger=continuous it is the stream threads' commit interval)",
    "default.dsl.store": "every store is kspark's: in memory in TopologyTestDriver, a RocksDB per task on Spark; "
                         "rocksDB and in_memory behave alike",
    "default.list.key.serde.inner": "kspark has no ListSerde configured from properties; pass serdes explicitly",
    "default.list.key.serde.type": "kspark has no ListSerde configured from properties; pass serdes explicitly",
    "default.list.value.serde.inner": "kspark has no ListSerde configured from properties; pass serdes explicitly",
    "default.list.value.serde.type": "kspark has no ListSerde configured from properties; pass serdes explicitly",
    "dsl.store.format": "every store is kspark's, with Kafka's default format (no headers in stores)",
    "dsl.store.suppliers.class": "every store is kspark's: in memory in TopologyTestDriver, a RocksDB per task on Spark",
    "ensure.explicit.internal.resource.naming": "kspark names internal topics and stores as Kafka does but does not "
                                                "enforce explicit names",
    "group.protocol": _NO_ASSIGNOR,
    "log.summary.interval.ms": "kspark's progress view (kspark.progress) shows every micro-batch",
    "max.warmup.replicas": _NO_STANDBYS,
    "num.standby.replicas": _NO_STANDBYS,
    "num.stream.threads": "Spark runs the tasks: parallelism is the Spark master's cores (kspark.spark.master, spark.*)",
    "poll.ms": "Spark plans the micro-batches (kspark.trigger)",
    "probing.rebalance.interval.ms": _NO_ASSIGNOR,
    "processing.exception.handler.global.enabled": "kspark runs global processors inside the tasks, where "
                                                   "processing.exception.handler applies as to any processor",
    "production.exception.handler": "a failed write fails the task, as Kafka's DefaultProductionExceptionHandler does",
    "rack.aware.assignment.non_overlap_cost": _NO_ASSIGNOR,
    "rack.aware.assignment.strategy": _NO_ASSIGNOR,
    "rack.aware.assignment.tags": _NO_ASSIGNOR,
    "rack.aware.assignment.traffic_cost": _NO_ASSIGNOR,
    "repartition.purge.interval.ms": "kspark does not purge repartition topics",
    "rocksdb.config.setter": "a Java class cannot configure kspark's local stores; kspark.store.memory.bytes bounds them",
    "state.cleanup.delay.ms": "kspark does not clean up the local stores of tasks that moved to another executor",
    "state.cleanup.dir.max.age.ms": "kspark does not clean up the local stores of tasks that moved to another executor",
    "task.assignor.class": _NO_ASSIGNOR,
    "task.timeout.ms": "a failing task fails its Spark query (Spark retries tasks: spark.task.maxFailures)",
    "topology.optimization": "kspark builds the topology unoptimized (Kafka's default 'none')",
    "upgrade.from": "kspark runs one instance per application; there is no rolling upgrade protocol",
    "window.size.ms": "read only by Kafka's windowed deserializers configured from properties; use WindowedSerdes",
    "windowed.inner.class.serde": "read only by Kafka's windowed deserializers configured from properties; use "
                                  "WindowedSerdes",
    EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX: "kspark emits the outer-join store's non-joined "
                                                               "records after every record on both hosts (interval 0, "
                                                               "TopologyTestDriver's value)",
}
# Keys whose effect kspark cannot give: any value but Kafka's default is refused.
_UNSUPPORTED = {
    "config.providers": "kspark does not resolve config provider variables",
    "default.client.supplier": "kspark creates its Kafka clients itself",
    "processor.wrapper.class": "kspark does not wrap processors (KIP-1112)",
}
_NOT_CLIENT_KEYS = {  # Kafka Streams' clients always move bytes (KafkaClientSupplier)
    "key.deserializer", "value.deserializer", "key.serializer", "value.serializer",
}
_KAFKA_CLASSES = {  # Kafka class-name packages -> kspark modules with the same class names
    "org.apache.kafka.streams.processor.": "kspark.processor",
    "org.apache.kafka.streams.errors.": "kspark.errors",
    "io.confluent.kafka.streams.serdes.avro.": "kspark.schema_registry",  # GenericAvroSerde, SpecificAvroSerde
    "io.confluent.kafka.streams.serdes.protobuf.": "kspark.schema_registry",  # KafkaProtobufSerde
    "io.confluent.kafka.streams.serdes.json.": "kspark.schema_registry",  # KafkaJsonSchemaSerde
}
_KAFKA_SERDE = re.compile(r"org\.apache\.kafka\.common\.serialization\.Serdes[$.](\w+)Serde")


def _show(value: Any) -> str:
    """A value as Kafka prints it in a ConfigException (Java's toString)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return "null" if value is None else str(value)


def _invalid(key: str, value: Any, reason: str) -> ConfigException:
    """Kafka's ``ConfigException`` text; a secret's value shows as ``[hidden]`` (``Password``)."""
    return ConfigException(f"Invalid value {_secrets.show(key, _show(value))} for configuration {key}: {reason}")


def _closest(key: str, candidates) -> str:
    match = difflib.get_close_matches(key, candidates, n=1, cutoff=0.75)
    return f" Did you mean '{match[0]}'?" if match else ""


# ------------------------------------------------------------------ Kafka's ConfigDef.parseType
_BITS = {"SHORT": 16, "INT": 32, "LONG": 64}


def _parse(key: str, value: Any, kind: str) -> Any:
    """``ConfigDef.parseType``: the value as its type, accepting Kafka's string forms."""
    if value is None:
        return None
    text = value.strip() if isinstance(value, str) else None
    if kind == "BOOLEAN":
        if isinstance(value, bool):
            return value
        if text is not None and text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise _invalid(key, value, "Expected value to be either true or false")
    if kind in ("STRING", "PASSWORD"):
        if text is not None:
            return text
        raise _invalid(key, value, f"Expected value to be a string, but it was a {type(value).__name__}")
    if kind in _BITS:
        if isinstance(value, timedelta) and key.endswith(".ms"):  # kspark: durations may be timedelta
            value = value // timedelta(milliseconds=1)
        if text is not None:
            if not re.fullmatch(r"[+-]?[0-9]+", text):
                raise _invalid(key, value, f"Not a number of type {kind}")
            number = int(text)
        elif isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            size = {"SHORT": "16-bit integer (short)", "INT": "32-bit integer", "LONG": "64-bit integer (long)"}[kind]
            raise _invalid(key, value, f"Expected value to be a {size}, but it was a {type(value).__name__}")
        bound = 1 << (_BITS[kind] - 1)
        if not -bound <= number < bound:
            raise _invalid(key, value, f"Not a number of type {kind}")
        return number
    if kind == "DOUBLE":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        try:
            return float(text)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            if text is None:
                raise _invalid(key, value, f"Expected value to be a double, but it was a {type(value).__name__}")
            raise _invalid(key, value, "Not a number of type DOUBLE") from None
    if kind == "LIST":
        if isinstance(value, (list, tuple)):
            return [v.strip() if isinstance(v, str) else v for v in value]
        if text is not None:
            return [] if not text else re.split(r"\s*,\s*", text)
        raise _invalid(key, value, "Expected a comma separated list.")
    return value  # CLASS: resolved per key (_resolve) or kept as given


def _validate(key: str, value: Any, validator: tuple | None) -> None:
    """Kafka's ``ConfigDef`` validators (``Range``, ``ValidString``, ``CaseInsensitiveValidString``, ``ValidList``)."""
    if validator is None or value is None:
        return
    kind = validator[0]
    if kind == "range":
        low, high = validator[1], validator[2]
        if low is not None and value < low:
            raise _invalid(key, value, f"Value must be at least {low}")
        if high is not None and value > high:
            raise _invalid(key, value, f"Value must be no more than {high}")
    elif kind == "in" and value not in validator[1]:
        raise _invalid(key, value, "String must be one of: " + ", ".join(_show(v) for v in validator[1]))
    elif kind == "in-ci" and str(value).upper() not in validator[1]:
        raise _invalid(key, value, "String must be one of (case insensitive): " + ", ".join(validator[1]))
    elif kind == "non-empty" and not value:
        raise _invalid(key, value, "String must be non-empty")
    elif kind == "list-in":
        allowed, emptyAllowed = validator[1], validator[2]
        if not value and not emptyAllowed:
            raise ConfigException(f"Configuration '{key}' must not be empty. Valid values include: "
                                  + (", ".join(allowed) if allowed else "any non-empty value"))
        if any(v == "" for v in value):
            raise ConfigException(f"Configuration '{key}' values must not be empty.")
        for v in value:
            if allowed and v not in allowed:
                raise _invalid(key, v, "String must be one of: " + ", ".join(allowed))


# ------------------------------------------------------------------ keys and their definitions
def _definition(key: str) -> tuple | None:
    """(type, default, validator) of a known key, or None."""
    if key in _KSPARK_DEFS:
        return _KSPARK_DEFS[key]
    if key in _STREAMS_OVERRIDES:
        return _STREAMS_OVERRIDES[key]
    if key in _SERDE_KEYS:
        return _SERDE_KEYS[key]
    if key in _kafka.STREAMS:
        return _kafka.STREAMS[key][:3]
    if key in _CLIENT_KEYS:
        return _CLIENT_KEYS[key][:3]
    for prefix, keys in _CLIENT_PREFIXES.items():
        if key.startswith(prefix):
            rest = key[len(prefix):]
            return keys[rest][:3] if rest in keys and rest not in _NOT_CLIENT_KEYS else None
    if key.startswith("topic.") and key[len("topic."):] in _TOPIC_KEYS:
        return ("STRING", None, None)
    if key.startswith("client.tag."):  # rack-aware assignment tags
        return ("STRING", None, None)
    return None


def _unknownKey(key: str) -> ConfigException:
    for prefix, keys in _CLIENT_PREFIXES.items():
        if key.startswith(prefix):
            rest = key[len(prefix):]
            why = ("Kafka Streams' clients always use byte-array (de)serializers" if rest in _NOT_CLIENT_KEYS
                   else f"'{rest}' is not a {prefix.rstrip('.')} config." + _closest(rest, keys))
            return ConfigException(f"Unknown configuration '{key}': {why}")
    if key.startswith("topic."):
        rest = key[len("topic."):]
        return ConfigException(f"Unknown configuration '{key}': '{rest}' is not a topic config." + _closest(rest, _TOPIC_KEYS))
    known = [*_kafka.STREAMS, *_CLIENT_KEYS, *_KSPARK_DEFS, *_ALIASES, *_SERDE_KEYS]
    return ConfigException(f"Unknown configuration '{key}'." + _closest(key, known))


# ------------------------------------------------------------------ serdes, extractors, handlers
def _importPath(path: str) -> Any:
    """The object a dotted Python path names (``pkg.module.Class.attr``), or raise LookupError."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for i in range(cut, len(parts)):
            if not hasattr(obj, parts[i]):
                raise LookupError(f"{'.'.join(parts[:i])} has no attribute {parts[i]}")
            obj = getattr(obj, parts[i])
        return obj
    raise LookupError(f"no module {parts[0]} can be imported")


def _named(key: str, name: str) -> Any:
    """The kspark object a Kafka class name or a Python name stands for."""
    text = name.strip()
    if text.endswith("()"):
        text = text[:-2]
    serde = _KAFKA_SERDE.fullmatch(text)
    if serde is not None:
        from .serialization import Serdes

        if not hasattr(Serdes, serde.group(1)):
            raise _invalid(key, name, f"kspark has no Serdes.{serde.group(1)}() for Kafka's {text}")
        return getattr(Serdes, serde.group(1))
    for package, module in _KAFKA_CLASSES.items():
        if text.startswith(package):
            found = getattr(importlib.import_module(module), text[len(package):], None)
            if found is None:
                raise _invalid(key, name, f"kspark has no equivalent of Kafka's class {text}")
            return found
    if text.startswith("org.apache.kafka."):
        raise _invalid(key, name, f"kspark has no equivalent of Kafka's class {text}")
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", text):
        raise _invalid(key, name, f"Class {name} could not be found.")
    import kspark

    # kspark's names first ("Serdes.Long", "LogAndContinueExceptionHandler"), then a Python path
    paths = ["kspark." + text, text] if hasattr(kspark, text.split(".")[0]) else [text]
    errors = []
    for path in paths:
        try:
            return _importPath(path)
        except LookupError as e:
            errors.append(str(e))
        except Exception as e:  # importing the user's module failed
            raise _invalid(key, name, f"importing it failed: {type(e).__name__}: {e}") from e
    raise _invalid(key, name, f"Class {name} could not be found ({errors[0]}).")


_ROLES = {  # key -> (what it must be, the methods that makes it one)
    "default.key.serde": ("a Serde", ("serialize", "deserialize")),
    "default.value.serde": ("a Serde", ("serialize", "deserialize")),
    "default.timestamp.extractor": ("a TimestampExtractor", ("extract",)),
    "deserialization.exception.handler": ("a DeserializationExceptionHandler", ("handle",)),
    "processing.exception.handler": ("a ProcessingExceptionHandler", ("handle",)),
    "production.exception.handler": ("a ProductionExceptionHandler", ("handle",)),
}


def _resolve(key: str, value: Any) -> Any:
    """A serde, extractor or handler from an instance, a class (instantiated, as Kafka does), a
    factory such as ``Serdes.Long``, or the name of one; returns an instance, or for handlers the
    class or factory (a new handler per task, as Kafka's ``getConfiguredInstance``)."""
    from . import errors

    if key == "production.exception.handler" and value == "org.apache.kafka.streams.errors.DefaultProductionExceptionHandler":
        return value  # Kafka's default: a failed write fails the task
    what, methods = _ROLES[key]
    source = _named(key, value) if isinstance(value, str) else value

    def fits(obj) -> bool:
        if key in ("deserialization.exception.handler", "processing.exception.handler") and callable(
                getattr(obj, "handleError", None)):
            return True  # Kafka 4's handleError(context, record, exception) -> Response
        return all(callable(getattr(obj, m, None)) for m in methods)

    instance = source
    if isinstance(source, type) or (callable(source) and not fits(source)):  # a class or a factory
        try:
            instance = source()
        except Exception as e:
            raise _invalid(key, value, f"creating it failed: {type(e).__name__}: {e}") from e
    if not fits(instance):
        raise _invalid(key, value, f"it is not {what} (no {'/'.join(m + '()' for m in methods)} method)")
    wrong = {"deserialization.exception.handler": errors.ProcessingExceptionHandler,
             "processing.exception.handler": errors.DeserializationExceptionHandler}.get(key)
    if wrong is not None and isinstance(instance, wrong):
        raise _invalid(key, value, f"{type(instance).__qualname__} is not an instance of {what.split()[-1]}")
    return source if key.endswith("exception.handler") else instance


# ------------------------------------------------------------------ kspark.trigger, kspark.spark.master
_MICROS = {"year": None, "month": None, "week": 7 * 86_400_000_000, "day": 86_400_000_000,
           "hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000, "millisecond": 1_000,
           "microsecond": 1}


def _intervalMicros(interval: str) -> int:
    """Spark's ``SparkIntervalUtils.stringToInterval`` followed by ``Triggers.convert`` (the grammar
    of ``trigger(processingTime=...)``): ``[interval] [+|-]<number> <unit>[s] ...``, units year to
    microsecond, a fraction only on seconds; months and years refused. Returns microseconds;
    raises ValueError with Spark's message (error class ``INVALID_INTERVAL_FORMAT``)."""
    s = re.sub(r"^[\s\x00-\x1f\x7f]+|[\s\x00-\x1f\x7f]+$", "", interval).lower()  # UTF8String.trimAll
    words = s.split()
    if not words or s == "interval":
        raise ValueError("Interval string cannot be empty.")
    if s.startswith("interval"):
        if words[0] != "interval":
            raise ValueError(f"Invalid interval prefix {words[0]}.")
        words = words[1:]
    months = micros = 0
    i = 0
    while i < len(words):
        word = words[i]
        if word[0] not in "+-.0123456789":
            raise ValueError(f"Unrecognized number {word}.")
        negative = word[0] == "-"
        number = word[1:] if word[0] in "+-" else word
        if not number:  # "- 1 second": blanks may follow the sign
            i += 1
            if i == len(words):
                raise ValueError(f"Expect a number after {word} but hit EOL.")
            number = word = words[i]
        m = re.fullmatch(r"([0-9]*)(?:\.([0-9]*))?", number)
        if m is None or (number == "." and word.startswith(".")):  # "+. second" is 0 s in Spark
            raise ValueError(f"Invalid value {word}.")
        whole, fraction = m.group(1), m.group(2)
        if fraction is not None and len(fraction) > 9:
            raise ValueError(f"Interval can only support nanosecond precision, {word} is out of range.")
        i += 1
        if i == len(words):
            raise ValueError(f"Expect a unit name after {word} but hit EOL.")
        unit = words[i]
        name = unit[:-1] if unit.endswith("s") and unit[:-1] in _MICROS else unit
        if fraction is not None and not unit.startswith("s"):
            raise ValueError(f"{unit} cannot have fractional part.")
        if name not in _MICROS:
            raise ValueError(f"Invalid unit {unit}.")
        value = int(whole or "0") * (-1 if negative else 1)
        if _MICROS[name] is None:
            months += value * (12 if name == "year" else 1)
        else:
            micros += value * _MICROS[name]
            if fraction:
                micros += int(fraction.ljust(9, "0")) // 1000 * (-1 if negative else 1)
        if not -(2**63) <= micros < 2**63:
            raise ValueError(f"Uncaught arithmetic exception while parsing '{interval}'.")
        i += 1
    if months:
        raise ValueError(f"Doesn't support month or year interval: {interval}")
    if micros < 0:
        raise ValueError("requirement failed: the interval of trigger should not be negative")
    return micros


def _trigger(key: str, value: Any) -> str:
    """``kspark.trigger``: "availableNow", "continuous", a Spark processing-time interval, a timedelta or int ms."""
    if isinstance(value, timedelta) or (isinstance(value, int) and not isinstance(value, bool)):
        ms = value // timedelta(milliseconds=1) if isinstance(value, timedelta) else value
        if ms < 0:
            raise _invalid(key, value, "the interval of trigger should not be negative")
        return f"{ms} milliseconds"
    if not isinstance(value, str):
        raise _invalid(key, value, f"Expected value to be a string, but it was a {type(value).__name__}")
    text = value.strip()
    if text.lower() == "availablenow":
        return "availableNow"
    if text.lower() == "continuous":  # long-running stream threads (kspark.spark._stream_threads)
        return "continuous"
    try:
        _intervalMicros(text)
    except ValueError as e:
        raise _invalid(key, value, f"not \"availableNow\", \"continuous\" nor a Spark processing-time interval such as "
                                   f"\"1 second\" or \"500 milliseconds\" ({e})") from None
    return text


_MASTER = re.compile(r"local(\[([0-9]+|\*)(\s*,\s*[0-9]+)?\])?|local-cluster\[\s*[0-9]+\s*,\s*[0-9]+\s*,\s*[0-9]+\s*]"
                     r"|spark://.+|yarn|k8s://.+")


def _master(key: str, value: str) -> str:
    """``kspark.spark.master``: the master URLs ``SparkContext.createTaskScheduler`` accepts."""
    if not _MASTER.fullmatch(value):
        raise _invalid(key, value, f"Could not parse Master URL: '{value}' (Spark accepts local, local[N], local[*], "
                                   "local[N,F], local-cluster[N,C,M], spark://host:port, yarn, k8s://...)")
    threads = re.fullmatch(r"local\[([0-9]+)(\s*,\s*[0-9]+)?\]", value)
    if threads is not None and int(threads.group(1)) <= 0:
        raise _invalid(key, value, f"Asked to run locally with {threads.group(1)} threads")
    return value


# ------------------------------------------------------------------ other Kafka checks
_HOST_PORT = re.compile(r"(?:[0-9a-zA-Z\-%._]*://)?\[?([0-9a-zA-Z\-%._:]*)]?:([0-9]+)")  # Kafka's Utils.HOST_PORT_PATTERN
_ISO_DURATION = re.compile(r"[-+]?P(?:([-+]?[0-9]+)D)?(?:T(?=[-+0-9])(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
                           r"(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?", re.IGNORECASE)  # java.time.Duration.parse


def _bootstrapServers(key: str, servers: list) -> list:
    """What Kafka's ``StreamsConfig`` checks of ``bootstrap.servers``: no empty entry. The
    addresses themselves are checked when a client is created (``_validAddresses``)."""
    for url in servers:
        if not url:
            raise ConfigException(f"Configuration '{key}' values must not be empty.")
    return servers


def _validAddresses(servers: list) -> list:
    """``ClientUtils.parseAndValidateAddresses`` without the DNS lookup: what Kafka's clients
    check when they are created, not ``StreamsConfig`` (a TopologyTestDriver test's
    ``"dummy config"`` is accepted, as in Kafka)."""
    for url in servers:
        m = _HOST_PORT.fullmatch(url)
        if m is None:
            raise ConfigException(f"Invalid url in bootstrap.servers: {url}")
        if not 0 <= int(m.group(2)) <= 65535:
            raise ConfigException(f"Invalid port in bootstrap.servers: {url}")
    return servers


def _autoOffsetReset(key: str, value: str) -> str:
    """Kafka 4's ``AutoOffsetResetStrategy``: earliest, latest, none or by_duration:<ISO-8601 duration >= 0>."""
    ok = value in ("earliest", "latest", "none")
    if value.startswith("by_duration:"):
        m = _ISO_DURATION.fullmatch(value[len("by_duration:"):])
        ok = m is not None and any(m.groups()[:4]) and not _isoNegative(value[len("by_duration:"):])
    if not ok:
        raise _invalid(key, value, f"Invalid value `{value}` for configuration {key}. The value must be either "
                                   "'earliest', 'latest', 'none' or of the format 'by_duration:<PnDTnHnMn.nS.>'.")
    return value


def resetPolicy(value: str) -> str:
    """An ``auto.offset.reset`` value as the Spark host's reader takes it: ``by_duration:<ISO-8601>``
    becomes ``by_duration:<ms>`` (``Duration.toMillis``); the others are unchanged."""
    if not value.startswith("by_duration:"):
        return value
    m = _ISO_DURATION.fullmatch(value[len("by_duration:"):])
    days, hours, minutes, seconds, nanos = (int(m.group(i) or 0) if i < 5 else m.group(5) for i in range(1, 6))
    ms = ((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + int(((nanos or "") + "000")[:3])
    return f"by_duration:{ms}"


def _isoNegative(text: str) -> bool:
    m = _ISO_DURATION.fullmatch(text)
    days, hours, minutes, seconds, nanos = (m.group(i) for i in range(1, 6))
    total = sum(int(v or 0) * f for v, f in ((days, 86400), (hours, 3600), (minutes, 60), (seconds, 1)))
    total_ns = total * 10**9 + (int((nanos or "").ljust(9, "0")) * (-1 if (seconds or "").startswith("-") else 1))
    return (-total_ns if text.startswith("-") else total_ns) < 0


_OPTIMIZATIONS = ("reuse.ktable.source.topics", "merge.repartition.topics", "single.store.self.join")


def _topologyOptimization(key: str, value: str) -> str:
    """``StreamsConfig.verifyTopologyOptimizationConfigs``."""
    parts = re.split(r"\s*,\s*", value)
    if (("none" in parts or "all" in parts) and len(parts) > 1) or not all(p in ("none", "all", *_OPTIMIZATIONS) for p in parts):
        raise ConfigException("Unrecognized config. Acceptable values are: none, all, or a comma separated list of "
                              f"specific optimizations: ({', '.join(_OPTIMIZATIONS)}). Given: {value}")
    return value


# ------------------------------------------------------------------ spark.* keys
def _checkSparkKey(key: str) -> None:
    """WARNING with a did-you-mean for a ``spark.*`` key Spark does not know (Spark itself ignores it)."""
    from ._config_keys_spark import SPARK_DYNAMIC_PREFIXES, SPARK_KEYS

    if key in SPARK_KEYS or key.startswith(SPARK_DYNAMIC_PREFIXES):
        return
    _log.warning("Spark does not know the configuration '%s' (it may belong to a library on Spark's class path); "
                 "Spark ignores keys it does not know.%s", key, _closest(key, SPARK_KEYS))


def _clientValue(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(_clientValue(v) for v in value)
    if isinstance(value, type):
        return _show(value)
    return str(value)


class StreamsConfig:
    """Validated configuration (Kafka ``StreamsConfig``).

    Parameters
    ----------
    props : mapping of str to value, optional
        Kafka Streams keys (every key of Kafka 4.3's ``StreamsConfig``, the client keys it passes
        on, unprefixed or under ``consumer.`` / ``main.consumer.`` / ``restore.consumer.`` /
        ``global.consumer.`` / ``producer.`` / ``admin.``, and ``topic.*``), ``kspark.*`` keys and
        any ``spark.*`` key for the SparkSession. Values as Kafka takes them: numbers and
        booleans or their strings (``"100"``, ``"true"``); ``*.ms`` durations also as
        ``timedelta``; serdes, timestamp extractors and exception handlers as instances,
        classes, factories (``Serdes.Long``) or names of any of these (Kafka's
        ``org.apache.kafka.common.serialization.Serdes$LongSerde``,
        ``org.apache.kafka.streams.errors.LogAndContinueExceptionHandler``,
        ``org.apache.kafka.streams.processor.WallclockTimestampExtractor``, kspark's
        ``"Serdes.Long"`` or a dotted Python path to a class).

    Keys kspark applies: ``application.id``, ``state.dir``, ``default.key.serde`` (default
    ``Serdes.String()``), ``default.value.serde`` (default ``Serdes.JSON()``),
    ``default.timestamp.extractor``, ``deserialization.exception.handler`` (and its deprecated
    name ``default.deserialization.exception.handler``), ``processing.exception.handler``,
    ``errors.dead.letter.queue.topic.name`` (also as ``errors.deadletterqueue.topic.name``),
    ``max.task.idle.ms`` (>= -1), ``statestore.cache.max.bytes`` (>= 0; deprecated name
    ``cache.max.bytes.buffering``), and ``kspark.topics.dir``, ``kspark.spark.master``,
    ``kspark.trigger`` ("availableNow", a Spark processing-time interval such as
    ``"1 second"``, or ``"continuous"``: long-running stream threads on Kafka, committing every
    ``commit.interval.ms``, 100 by default), ``kspark.max.records.per.trigger`` (>= 1; unset = unlimited),
    ``kspark.repartition.before.stateful.process``, ``kspark.metrics.prometheus.port``;
    ``metrics.sample.window.ms`` and ``metrics.num.samples`` (the windows of the metrics' rates
    and averages) and ``client.id`` (the metrics' ``thread-id``). With ``bootstrap.servers`` the Kafka backend
    also applies ``processing.guarantee``, ``replication.factor``, the client keys
    (:meth:`clientConfigs`) and ``topic.*`` (:meth:`topicConfigs`); without it they have no
    effect and are logged as such. The addresses in ``bootstrap.servers`` are checked when a
    client is created (``KafkaStreams(...)``), as Kafka's clients check them: a
    ``TopologyTestDriver`` takes ``"dummy config"``. Confluent's schema-registry serde keys (``schema.registry.url``,
    ``basic.auth.*``, ``auto.register.schemas``, ``use.latest.version``,
    ``key.subject.name.strategy``/``value.subject.name.strategy``, ``specific.avro.reader``,
    ``schema.registry.<client key>`` ...) are accepted and passed, with every other key, to
    ``default.key.serde``/``default.value.serde``'s ``configure(originals, isKey)``, as Kafka
    Streams does (``kspark.schema_registry``). Every other Kafka key is accepted and logged once (logger
    ``kspark.config``) with the reason it changes nothing on Spark. An unknown ``spark.*`` key is
    a WARNING with a did-you-mean (Spark ignores unknown keys).

    Raises
    ------
    ConfigException
        For an unknown key (with a did-you-mean), or a value of the wrong type or out of range,
        with Kafka's text ``Invalid value <value> for configuration <key>: <reason>``.
    """

    # kspark's keys
    TOPICS_DIR_CONFIG = "kspark.topics.dir"
    SPARK_MASTER_CONFIG = "kspark.spark.master"
    TRIGGER_CONFIG = "kspark.trigger"
    MAX_RECORDS_PER_TRIGGER_CONFIG = "kspark.max.records.per.trigger"
    STORE_DIR_CONFIG = "kspark.store.dir"
    """Where the Spark host keeps each task's local store (a RocksDB per task, Kafka Streams'
    task directories under its ``state.dir``): a local path on every executor. Default: with a
    ``local`` master and a local ``state.dir``, ``<state.dir>/<application.id>/stores``, so a
    restart finds its stores; otherwise ``<temp dir>/kspark-stores`` on each executor (a task
    that finds no store there restores it from its changelog topics)."""
    STORE_MEMORY_BYTES_CONFIG = "kspark.store.memory.bytes"
    """The bound of RocksDB's memory in each Python worker (block cache and memtables, shared by
    the task stores it opens), in bytes; default 384 MiB, at least 1 MiB (Kafka Streams' default
    RocksDB config gives each store a 50 MB block cache and three 16 MB memtables; at 10M keys
    384 MiB ran P5 on Kafka 5-10 % faster than 128 MiB, bench/README.md round 33). Index and
    filter blocks are held outside it, as in Kafka Streams' default RocksDB config (about 1.5
    bytes per key).
    Kafka Streams bounds it with a ``rocksdb.config.setter``."""
    STORE_CACHE_MAX_ENTRIES_CONFIG = "kspark.store.cache.max.entries"
    """How many entries a persistent store keeps decoded in Python between micro-batches (the
    ones loaded most recently are kept); default 100,000 per store and task. A micro-batch's own
    changes are held until it ends, whatever this bound."""
    STORE_PREFILL_CONFIG = "kspark.store.prefill"
    """``true``: before a micro-batch is processed, an aggregation's persistent store
    (``groupByKey`` or after a repartition topic: count, reduce, aggregate) reads the entries of
    the batch's record keys in one RocksDB ``MultiGet`` rather than one read per key at its first
    access. A cache fill: the results are the same either way (``StreamTask.prefillStores``).
    Default ``false`` until a measurement shows a gain (bench/README.md, round 18b)."""
    ALLOW_MISSING_CHANGELOGS_CONFIG = "kspark.allow.missing.changelogs"
    """``true``: a store whose changelog topic does not exist starts empty when kspark takes over an
    application that ran before (a new ``state.dir`` checkpoint while the consumer group
    ``application.id`` has committed offsets: a Kafka Streams application moving to kspark).
    Default ``false``: the start is refused, naming the store and the topic, since the store had
    state that its changelog would have restored (``kspark.spark._takeover``)."""
    METRICS_PROMETHEUS_PORT_CONFIG = "kspark.metrics.prometheus.port"
    """The port on which a running ``KafkaStreams`` serves its ``metrics()`` for Prometheus
    (HTTP ``/metrics``, the text format, on every interface); ``0`` picks a free port; unset
    (default): no endpoint. Names follow the Prometheus JMX exporter's usual rules for Kafka:
    ``kafka_streams_<group>_<name>`` for Streams' groups (``stream-thread-metrics``...),
    ``kafka_consumer_<group>_<name>`` for the consumer's, ``kspark_<group without "kspark-">_<name>``
    for kspark's own, every ``-`` as ``_``, the tags as labels (``thread_id``, ``task_id``,
    ``processor_node_id``, ``client_id``, ``topic``, ``partition``...); ``-total`` metrics are
    counters, the others gauges (``kspark.spark._metrics``)."""
    REPARTITION_BEFORE_STATEFUL_PROCESS_CONFIG = "kspark.repartition.before.stateful.process"
    """kspark's addition: ``true`` makes ``StreamsBuilder.build()`` insert a repartition topic in
    front of a ``process``/``processValues`` with state stores whose input key was changed
    upstream; ``false`` (default, Kafka's behaviour) only logs a WARNING. Read by
    ``StreamsBuilder(config)`` and ``StreamsBuilder.build(config)`` (it shapes the topology, like
    Kafka's ``TopologyConfig``); in the ``KafkaStreams`` config it has no effect."""

    # Kafka's names used by kspark's code (every other StreamsConfig constant of Kafka 4.3 is set
    # below the class from _config_keys_kafka: *_CONFIG, *_PREFIX, AT_LEAST_ONCE, EXACTLY_ONCE_V2...)
    APPLICATION_ID_CONFIG = "application.id"
    BOOTSTRAP_SERVERS_CONFIG = "bootstrap.servers"
    PROCESSING_GUARANTEE_CONFIG = "processing.guarantee"
    REPLICATION_FACTOR_CONFIG = "replication.factor"
    COMMIT_INTERVAL_MS_CONFIG = "commit.interval.ms"
    AUTO_OFFSET_RESET_CONFIG = "auto.offset.reset"
    """Kafka's ``ConsumerConfig.AUTO_OFFSET_RESET_CONFIG``, here for convenience."""
    ISOLATION_LEVEL_CONFIG = "isolation.level"
    """Kafka's ``ConsumerConfig.ISOLATION_LEVEL_CONFIG``."""
    DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG = "default.timestamp.extractor"
    DEFAULT_KEY_SERDE_CLASS_CONFIG = "default.key.serde"
    DEFAULT_VALUE_SERDE_CLASS_CONFIG = "default.value.serde"
    MAX_TASK_IDLE_MS_CONFIG = "max.task.idle.ms"
    DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG = "deserialization.exception.handler"
    DEFAULT_DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG = "default.deserialization.exception.handler"
    PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG = "processing.exception.handler"
    ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG = "errors.dead.letter.queue.topic.name"
    STATE_DIR_CONFIG = "state.dir"
    STATESTORE_CACHE_MAX_BYTES_CONFIG = "statestore.cache.max.bytes"
    AT_LEAST_ONCE = "at_least_once"
    EXACTLY_ONCE_V2 = "exactly_once_v2"
    EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION = EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION
    EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX = EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX
    """Kafka's internal ``StreamsConfig.InternalConfig`` key; accepted, kspark always uses 0."""

    CLIENT_KINDS = ("consumer", "global.consumer", "producer", "admin")
    """The ``kind`` values of :meth:`clientConfigs`."""

    def __init__(self, props: Mapping[str, Any] | None = None) -> None:
        self._originals = dict(props or {})
        self._values: dict[str, Any] = {}
        self._spark: dict[str, Any] = {}
        aliased: dict[str, tuple[str, Any]] = {}
        for key, value in self._originals.items():
            if not isinstance(key, str):
                raise ConfigException(f"Invalid configuration key {key!r}: keys are strings")
            _secrets.register(key, value)  # never printed from now on
            if key.startswith("spark."):
                _checkSparkKey(key)
                self._spark[key] = value
                continue
            target = _ALIASES.get(key, key)
            definition = _definition(target)
            if definition is None:
                raise _unknownKey(key)
            if value is None:  # as if not given: the default applies
                continue
            parsed = self._check(key, target, value, definition)
            if target != key:
                aliased[target] = (key, parsed)
            else:
                self._values[key] = parsed
        for target, (alias, parsed) in aliased.items():
            if target not in self._values:
                self._values[target] = parsed
            elif self._values[target] != parsed:
                _log.warning("Both %s and its deprecated name %s are set; %s=%s applies.", target, alias, target,
                             _secrets.show(target, _show(self._values[target])))
        if self.processingGuarantee() == self.EXACTLY_ONCE_V2:  # Kafka's verifyMaxInFlightRequestPerConnection
            for key in ("max.in.flight.requests.per.connection", "producer.max.in.flight.requests.per.connection"):
                if self._values.get(key, 0) > 5:
                    raise _invalid("max.in.flight.requests.per.connection", self._values[key],
                                   "Can't exceed 5 when exactly-once processing is enabled")
        # Kafka's StreamsConfig.defaultKeySerde()/defaultValueSerde(): serde.configure(originals(), isKey)
        # (a serde instance given here that its application configured already is left as it is)
        for key, isKey in ((self.DEFAULT_KEY_SERDE_CLASS_CONFIG, True), (self.DEFAULT_VALUE_SERDE_CLASS_CONFIG, False)):
            serde = self._values.get(key)
            configure = getattr(serde, "configure", None)
            if callable(configure) and not getattr(serde, "configured", False):
                try:
                    configure(dict(self._originals), isKey)
                except ConfigException:
                    raise
                except Exception as e:
                    raise _invalid(key, self._originals.get(key), f"configure() failed: {type(e).__name__}: {e}") from e
        self._logWithoutEffect()

    # ------------------------------------------------------------------ checks
    def _check(self, key: str, target: str, value: Any, definition: tuple) -> Any:
        kind, _default, validator = definition
        if target in _ROLES:
            return _resolve(target, value)
        if target in ("state.dir", "kspark.topics.dir") and isinstance(value, os.PathLike):
            value = os.fspath(value)
        if target == "kspark.trigger":
            return _trigger(key, value)
        parsed = _parse(key, value, kind)
        _validate(key, parsed, validator)
        if target == "kspark.spark.master":
            return _master(key, parsed)
        if target == "bootstrap.servers":
            return _bootstrapServers(key, parsed)
        if target == "auto.offset.reset" or target.endswith("consumer.auto.offset.reset"):
            return _autoOffsetReset(key, parsed)
        if target == "topology.optimization":
            return _topologyOptimization(key, parsed)
        if target == "replication.factor" and parsed != -1 and parsed < 1:
            raise _invalid(key, value, "Value must be -1 (the broker's default) or at least 1")
        if target in _UNSUPPORTED and parsed != _kafka.STREAMS[target][1] and parsed not in ([], None):
            raise _invalid(key, value, _UNSUPPORTED[target])
        return parsed

    def _logWithoutEffect(self) -> None:
        """One INFO line per given key that changes nothing here, with the reason."""
        kafka = self.usesKafka()
        for key in self._originals:
            target = _ALIASES.get(key, key)
            if key in _ALIASES:
                _log.warning("Configuration '%s' is deprecated. Please use '%s' instead.", key, target)
            if key.startswith("spark.") or target in _APPLIED or self._originals[key] is None or target in (
                    "auto.offset.reset", "consumer.auto.offset.reset", "main.consumer.auto.offset.reset"):  # local topics too
                continue
            value = self._values.get(target)
            if target == EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX and value == 0:
                continue
            if target == "topology.optimization" and value == "none":
                continue
            if target == "commit.interval.ms" and self._values.get("kspark.trigger") == "continuous":
                continue  # the stream threads' commit interval
            if target == "production.exception.handler" and isinstance(value, str):
                continue  # Kafka's DefaultProductionExceptionHandler: what kspark does
            reason = _IGNORED.get(target)
            if reason is None:
                if kafka:
                    if target.startswith("restore.consumer."):
                        reason = "kspark has no restore consumer: state is restored from Spark's checkpoint"
                    elif target.startswith("client.tag."):
                        reason = _NO_ASSIGNOR
                    else:
                        continue  # the Kafka backend applies it
                else:
                    reason = ("bootstrap.servers is not set, so kspark reads and writes its local topics "
                              "(kspark.topics.dir), not Kafka")
            _log.info("Configuration %s=%s has no effect: %s.", key, _secrets.show(key, _show(self._originals[key])), reason)

    # ------------------------------------------------------------------ access
    def get(self, key: str) -> Any:
        """The value of a key: as given (parsed, serdes and extractors as instances), else its default.

        Raises
        ------
        ConfigException
            For a key that is not known.
        """
        target = _ALIASES.get(key, key)
        if target in self._values:
            return self._values[target]
        if key.startswith("spark."):
            return self._spark.get(key)
        definition = _definition(target)
        if definition is None:
            raise _unknownKey(key)
        default = definition[1]
        if default == _REQUIRED:
            return None
        if target in _ROLES:
            return None  # the accessors below give kspark's default
        return list(default) if isinstance(default, tuple) else default

    def originals(self) -> dict[str, Any]:
        """The keys and values as given (Kafka ``AbstractConfig.originals()``)."""
        return dict(self._originals)

    def sparkConfs(self) -> dict[str, Any]:
        """The ``spark.*`` keys, for the SparkSession."""
        return dict(self._spark)

    def usesKafka(self) -> bool:
        """Whether ``bootstrap.servers`` is set and not empty: topics are Kafka's, not kspark's local ones."""
        return bool(self._values.get(self.BOOTSTRAP_SERVERS_CONFIG))

    def processingGuarantee(self) -> str:
        """``processing.guarantee``: ``"at_least_once"`` (Kafka's default) or ``"exactly_once_v2"``."""
        return self.get(self.PROCESSING_GUARANTEE_CONFIG)

    def clientConfigs(self, kind: str) -> dict[str, str]:
        """Configs of one Kafka client, as Kafka's ``StreamsConfig.getMainConsumerConfigs`` /
        ``getGlobalConsumerConfigs`` / ``getProducerConfigs`` / ``getAdminConfigs`` build them.

        Parameters
        ----------
        kind : {"consumer", "global.consumer", "producer", "admin"}
            "consumer" is Kafka Streams' main consumer.

        Returns
        -------
        dict of str to str
            Java client key names (not translated for librdkafka), values as strings: Kafka
            Streams' defaults for that client (consumer: ``auto.offset.reset=earliest``,
            ``enable.auto.commit=false``, ``max.poll.records=1000``, ``group.protocol=classic``,
            and kspark's ``isolation.level=read_committed``; producer: ``linger.ms=100``, with
            exactly_once_v2 also ``enable.idempotence=true``, ``delivery.timeout.ms=2147483647``,
            ``transaction.timeout.ms=10000``; admin: ``enable.metrics.push=true``), then the
            unprefixed keys that client knows (``client.id``, ``security.protocol``, ``sasl.*``,
            ``ssl.*``...), then ``consumer.*`` / ``producer.*`` / ``admin.*`` keys with the prefix
            stripped, then ``main.consumer.*`` (consumer) or ``global.consumer.*`` (global
            consumer); the more specific one wins. Then, as Kafka forces them:
            ``bootstrap.servers`` (always the unprefixed one), ``enable.auto.commit=false`` and
            ``group.protocol=classic`` for consumers (another value is logged and dropped),
            ``isolation.level=read_committed`` with exactly_once_v2, the main consumer's
            ``group.id`` = ``application.id`` and ``allow.auto.create.topics=false``, and the
            global consumer's ``auto.offset.reset=none`` without ``group.id`` (Kafka's global
            consumer seeks itself).

        Raises
        ------
        ValueError
            For another ``kind``.
        ConfigException
            If an address in ``bootstrap.servers`` is not ``host:port`` with a port up to 65535
            (``"Invalid url in bootstrap.servers: dummy config"``): Kafka checks them when a
            client is created (``new KafkaStreams(...)``), not in ``StreamsConfig``.
        """
        if kind not in self.CLIENT_KINDS:
            raise ValueError(f"kind must be one of {self.CLIENT_KINDS}, not {kind!r}")
        eos = self.processingGuarantee() == self.EXACTLY_ONCE_V2
        consumer = kind in ("consumer", "global.consumer")
        names = {"producer": _kafka.PRODUCER, "admin": _kafka.ADMIN}.get(kind, _kafka.CONSUMER)
        if consumer:
            props: dict[str, Any] = {"max.poll.records": "1000", "auto.offset.reset": "earliest",
                                     "enable.auto.commit": "false", "group.protocol": "classic",
                                     "isolation.level": "read_committed"}
        elif kind == "producer":
            props = {"linger.ms": "100"}
            if eos:
                props.update({"delivery.timeout.ms": str(2**31 - 1), "enable.idempotence": "true",
                              "transaction.timeout.ms": "10000"})
        else:
            props = {"enable.metrics.push": "true"}
        prefixes = {"consumer": ("consumer.", "main.consumer."), "global.consumer": ("consumer.", "global.consumer."),
                    "producer": ("producer.",), "admin": ("admin.",)}[kind]
        for key, value in self._values.items():  # group.protocol unprefixed is Streams' (classic/streams)
            if key in names and key not in _NOT_CLIENT_KEYS and key not in ("bootstrap.servers", "group.protocol"):
                props[key] = value
        for prefix in prefixes:
            for key, value in self._values.items():
                if key.startswith(prefix):
                    props[key[len(prefix):]] = value
        props = {k: _clientValue(v) for k, v in props.items()}
        if consumer:
            for key, forced in (("enable.auto.commit", "false"), ("group.protocol", "classic")):
                if props[key].lower() != forced:
                    _log.error("Unexpected user-specified consumer config '%s' found. User setting (%s) will be ignored "
                               "and the Streams default setting (%s) will be used.", key, props[key], forced)
                    props[key] = forced
            if eos and props["isolation.level"] != "read_committed":
                _log.warning("Unexpected user-specified consumer config '%s' found. 'processing.guarantee' is set to "
                             "\"exactly_once_v2\". Hence, user setting (%s) will be ignored and the Streams default "
                             "setting (read_committed) will be used.", "isolation.level", props["isolation.level"])
                props["isolation.level"] = "read_committed"
        elif kind == "producer" and eos:
            for key, forced in (("enable.idempotence", "true"), ("transactional.id", None)):
                if key in props and props[key] != forced:
                    _log.warning("Unexpected user-specified producer config '%s' found. 'processing.guarantee' is set "
                                 "to \"exactly_once_v2\". Hence, user setting (%s) will be ignored.", key, props[key])
                    if forced is None:
                        del props[key]
                    else:
                        props[key] = forced
        if self.usesKafka():  # checked here, as Kafka's clients check it when they are created
            props["bootstrap.servers"] = ",".join(_validAddresses(self._values["bootstrap.servers"]))
        if kind == "consumer" and self.get(self.APPLICATION_ID_CONFIG):
            props["group.id"] = self.get(self.APPLICATION_ID_CONFIG)
            props["allow.auto.create.topics"] = "false"
        elif kind == "global.consumer":
            props.pop("group.id", None)
            props.pop("group.instance.id", None)
            props["auto.offset.reset"] = "none"
        return props

    def topicConfigs(self) -> dict[str, str]:
        """The ``topic.*`` keys with the prefix stripped, for the internal topics kspark creates on
        Kafka (Kafka's ``originalsWithPrefix(TOPIC_PREFIX)``)."""
        return {k[len("topic."):]: _clientValue(v) for k, v in self._values.items() if k.startswith("topic.")}

    def defaultKeySerde(self):
        """``default.key.serde``, ``Serdes.String()`` if unset."""
        from .serialization import Serdes

        return self._values.get(self.DEFAULT_KEY_SERDE_CLASS_CONFIG) or Serdes.String()

    def defaultValueSerde(self):
        """``default.value.serde``, ``Serdes.JSON()`` if unset."""
        from .serialization import Serdes

        return self._values.get(self.DEFAULT_VALUE_SERDE_CLASS_CONFIG) or Serdes.JSON()

    def deserializationExceptionHandler(self):
        """A handler from ``deserialization.exception.handler`` (``LogAndFailExceptionHandler`` if unset);
        a new one per call when a class or name was configured."""
        from .errors import LogAndFailExceptionHandler

        return self._handler(self.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG, LogAndFailExceptionHandler)

    def processingExceptionHandler(self):
        """A handler from ``processing.exception.handler`` (``LogAndFailProcessingExceptionHandler`` if unset)."""
        from .errors import LogAndFailProcessingExceptionHandler

        return self._handler(self.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, LogAndFailProcessingExceptionHandler)

    def _handler(self, key: str, default: type):
        """The handler ``key`` names (``default`` if unset), configured with this config as
        Kafka's ``getConfiguredInstance`` does (``configure(configs)``: the built-in handlers read
        ``errors.dead.letter.queue.topic.name`` there)."""
        value = self._values.get(key)
        if value is None:
            handler = default()
        elif isinstance(value, type) or not (callable(getattr(value, "handleError", None))
                                             or callable(getattr(value, "handle", None))):
            handler = value()
        else:
            handler = value
        configure = getattr(handler, "configure", None)
        if callable(configure):
            configure(dict(self._values))
        return handler

    def defaultTimestampExtractor(self):
        """``default.timestamp.extractor``, ``FailOnInvalidTimestamp()`` if unset."""
        from .processor import FailOnInvalidTimestamp

        return self._values.get(self.DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG) or FailOnInvalidTimestamp()


for _name, _value in {**_kafka.STREAMS_DEPRECATED_CONSTANTS, **_kafka.STREAMS_CONSTANTS}.items():
    if not hasattr(StreamsConfig, _name):
        setattr(StreamsConfig, _name, _value)
del _name, _value
