"""Serdes for topics in Confluent's schema-registry wire format (Confluent's
``io.confluent.kafka.streams.serdes.avro.GenericAvroSerde``, ``SpecificAvroSerde``,
``io.confluent.kafka.streams.serdes.protobuf.KafkaProtobufSerde`` and
``io.confluent.kafka.streams.serdes.json.KafkaJsonSchemaSerde``).

Each serde wraps ``confluent_kafka.schema_registry``'s serializer and deserializer of its format
(``AvroSerializer``/``AvroDeserializer``, ``ProtobufSerializer``/``ProtobufDeserializer``,
``JSONSerializer``/``JSONDeserializer``): kspark writes no byte of the wire format itself, so a
record it writes is the record a ``confluent-kafka`` producer with the same schema writes.

Configuration is Confluent's (``AbstractKafkaSchemaSerDeConfig``), given as Kafka Streams gives
it: ``default.key.serde``/``default.value.serde`` are configured with the whole streams config
(``configure(originals, isKey)``); a serde passed to ``Consumed``/``Produced``/``Grouped``/
``Materialized``/``Joined``/``StreamJoined`` must be configured by the application, as in Kafka
Streams (``serde.configure({"schema.registry.url": ...}, isKey=False)``). Keys:

- ``schema.registry.url`` (required; one URL or several separated by commas; ``mock://<scope>``
  is an in-process registry shared by every serde of this Python process with the same scope,
  Confluent's ``MockSchemaRegistry``, for ``TopologyTestDriver`` tests);
- ``schema.registry.<key>`` for confluent-kafka's client settings ``max.retries``,
  ``retries.wait.ms``, ``retries.max.wait.ms``, ``timeout`` (seconds), ``cache.capacity``,
  ``cache.latest.ttl.sec``, ``ssl.ca.location``, ``ssl.certificate.location``,
  ``ssl.key.location``, ``ssl.key.password``;
- ``basic.auth.credentials.source`` (``USER_INFO``: ``basic.auth.user.info``, also as
  ``schema.registry.basic.auth.user.info``; ``URL``: the URL's ``user:password@``);
- ``auto.register.schemas`` (default true), ``use.latest.version`` (default false; as in
  Confluent's serializers it applies with ``auto.register.schemas=false``, or when the serde has
  no writer schema of its own), ``normalize.schemas`` (default false);
- ``key.subject.name.strategy``/``value.subject.name.strategy``: ``TopicNameStrategy`` (default,
  ``<topic>-key``/``<topic>-value``), ``RecordNameStrategy`` (the record's full name),
  ``TopicRecordNameStrategy`` (``<topic>-<record full name>``), by short name or Confluent's
  class name ``io.confluent.kafka.serializers.subject.*``;
- ``specific.avro.reader``: accepted; as in Confluent's classes ``GenericAvroSerde`` always reads
  generic records (dicts) and ``SpecificAvroSerde`` always specific ones;
- ``specific.protobuf.key.type``/``specific.protobuf.value.type`` and
  ``json.key.type``/``json.value.type``: a dotted Python path to the class to read.

The serde sees the topic it writes or reads, so internal topics register their own subjects as
in Kafka Streams: ``<application.id>-<store>-changelog-value``,
``<application.id>-<name>-repartition-value``.

One registry client per Python process and configuration (on Spark: per Python worker), whose
schemas are cached by id: a record costs no registry call once its schema id has been seen.

Errors: a record that cannot be read (no magic byte, an unknown schema id, a writer schema the
reader schema cannot resolve, invalid payload) raises ``SerializationException`` naming the topic
and the schema id, which goes to ``deserialization.exception.handler`` (fail: the task's error
names topic, partition and offset; continue: the record is counted as dropped and written with
its original bytes to ``errors.dead.letter.queue.topic.name`` if set). A registry that cannot be
reached after the client's retries, or answers with a server error (5xx) or 401/403, raises
:class:`SchemaRegistryUnavailableException` (a ``StreamsException``, naming the URL), which fails
the task and never drops the record. A
schema the registry refuses on write (incompatible) raises ``SerializationException`` with the
registry's message and the subject.
"""

from __future__ import annotations

import dataclasses
import io
import json
import threading
from typing import Any, Callable, Mapping

from confluent_kafka.schema_registry.error import SchemaRegistryError

from .config import _REGISTRY_CLIENT_KEYS
from .errors import StreamsException
from .serialization import Serde, SerializationException

__all__ = ["GenericAvroSerde", "SpecificAvroSerde", "KafkaProtobufSerde", "KafkaJsonSchemaSerde",
           "SchemaRegistryUnavailableException", "registryClient"]


class SchemaRegistryUnavailableException(StreamsException):
    """The schema registry could not be reached (after the client's retries): the task fails,
    no record is skipped. The message names the registry URL."""


# ------------------------------------------------------------------ registry clients
_clients: dict[tuple, Any] = {}
_clientsLock = threading.Lock()


def _bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    from .errors import ConfigException

    raise ConfigException(f"Invalid value {value} for configuration {key}: Expected value to be either true or false")


def _clientConf(configs: Mapping[str, Any]) -> dict:
    """confluent-kafka's ``SchemaRegistryClient`` conf from Confluent's serde keys."""
    from .errors import ConfigException

    url = configs.get("schema.registry.url")
    if not url:
        raise ConfigException("Missing required configuration \"schema.registry.url\" which has no default value.")
    if isinstance(url, (list, tuple)):
        url = ",".join(url)
    conf = {"url": str(url)}
    source = str(configs.get("basic.auth.credentials.source", "URL")).upper()
    userInfo = configs.get("basic.auth.user.info") or configs.get("schema.registry.basic.auth.user.info")
    if source == "USER_INFO":
        if userInfo:
            conf["basic.auth.user.info"] = str(userInfo)
    elif source != "URL":
        raise ConfigException(f"Invalid value {source} for configuration basic.auth.credentials.source: "
                              "kspark supports URL and USER_INFO")
    for key, value in configs.items():  # schema.registry.<client key>: confluent-kafka's client settings
        rest = key[len("schema.registry."):] if isinstance(key, str) and key.startswith("schema.registry.") else None
        if rest in _CLIENT_KEYS:
            conf[rest] = _CLIENT_KEYS[rest](value)
    return conf


# confluent-kafka SchemaRegistryClient keys that schema.registry.<key> sets (config._REGISTRY_CLIENT_KEYS), with their types
_CLIENT_KEYS = {"max.retries": int, "retries.wait.ms": int, "retries.max.wait.ms": int, "timeout": float,
                "cache.capacity": int, "cache.latest.ttl.sec": int, "ssl.ca.location": str,
                "ssl.certificate.location": str, "ssl.key.location": str, "ssl.key.password": str}
assert set(_CLIENT_KEYS) == set(_REGISTRY_CLIENT_KEYS)


def registryClient(configs: Mapping[str, Any]):
    """The process's ``SchemaRegistryClient`` for the registry ``configs`` name (Confluent's serde
    keys). One per URL and credentials, so that every serde of a Python worker shares its cache of
    schemas by id; ``mock://<scope>`` gives one ``MockSchemaRegistryClient`` per scope (Confluent's
    ``MockSchemaRegistry.getClientForScope``)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    conf = _clientConf(configs)
    key = tuple(sorted(conf.items()))
    with _clientsLock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = SchemaRegistryClient.new_client(conf)
        return client


def dropMockScope(scope: str) -> None:
    """Forget the in-process registry ``mock://<scope>`` (Confluent's
    ``MockSchemaRegistry.dropScope``)."""
    with _clientsLock:
        for key in [k for k in _clients if dict(k)["url"] == f"mock://{scope}"]:
            del _clients[key]


_STRATEGIES = {"TopicNameStrategy": "topic_subject_name_strategy",
               "RecordNameStrategy": "record_subject_name_strategy",
               "TopicRecordNameStrategy": "topic_record_subject_name_strategy"}


def _strategy(value: Any, key: str) -> Callable:
    from confluent_kafka.schema_registry import (record_subject_name_strategy, topic_record_subject_name_strategy,
                                                 topic_subject_name_strategy)
    from .errors import ConfigException

    if callable(value):
        return value
    name = str(value).rsplit(".", 1)[-1]
    functions = {"TopicNameStrategy": topic_subject_name_strategy, "RecordNameStrategy": record_subject_name_strategy,
                 "TopicRecordNameStrategy": topic_record_subject_name_strategy}
    if name not in functions:
        raise ConfigException(f"Invalid value {value} for configuration {key}: one of "
                              f"{', '.join(functions)} (io.confluent.kafka.serializers.subject.*) or a function")
    return functions[name]


def _importClass(path: str, key: str):
    from .config import _importPath
    from .errors import ConfigException

    try:
        return _importPath(str(path))
    except LookupError as e:
        raise ConfigException(f"Invalid value {path} for configuration {key}: Class {path} could not be found ({e}).")


# ------------------------------------------------------------------ the serdes
_SERDE_KEYS = frozenset({"basic.auth.credentials.source", "basic.auth.user.info", "auto.register.schemas",
                         "use.latest.version", "normalize.schemas"})


def _registryFault(e: SchemaRegistryError) -> bool:
    """The registry's own failure or a refusal of this client (5xx, 401, 403), not the record's."""
    status = getattr(e, "http_status_code", None)
    return isinstance(status, int) and (status >= 500 or status in (401, 403))


class _RegistrySerde(Serde):
    """The part the four serdes share: configuration, the lazily built confluent-kafka
    serializer/deserializer (not pickled: a Spark worker builds its own, with its process's
    registry client), errors."""

    name = "RegistrySerde"
    format = "?"
    kafkaClass = ""

    def __init__(self, configs: Mapping[str, Any] | None = None, isKey: bool | None = None) -> None:
        self._configs: dict | None = None
        self._isKey = False
        self._built: dict = {}
        if configs is not None:
            self.configure(configs, bool(isKey))

    # Kafka's Serde.configure(Map, boolean)
    def configure(self, configs: Mapping[str, Any], isKey: bool) -> None:
        """Confluent's ``configure(Map<String, ?> configs, boolean isKey)``: the registry and serde
        keys listed in the module's docstring; other keys are ignored (the streams config passes
        everything). Raises ``ConfigException`` for a missing ``schema.registry.url`` or a bad
        value."""
        # only the keys a serde reads: the streams config also holds handlers, extractors, this serde...
        configs = {k: v for k, v in configs.items() if isinstance(k, str) and (k in _SERDE_KEYS or k.startswith(
            ("schema.registry.", "key.", "value.", "specific.", "json.")))}
        _clientConf(configs)  # checks the registry keys now, not at the first record
        prefix = "key." if isKey else "value."
        serializerConf = {"auto.register.schemas": _bool(configs.get("auto.register.schemas", True), "auto.register.schemas"),
                          "use.latest.version": _bool(configs.get("use.latest.version", False), "use.latest.version"),
                          "normalize.schemas": _bool(configs.get("normalize.schemas", False), "normalize.schemas")}
        # Confluent's Java default, TopicNameStrategy (confluent-kafka's Python default asks the
        # registry for the topic's "associated" subject first: a registry call per new serde)
        strategy = _strategy(configs.get(prefix + "subject.name.strategy") or "TopicNameStrategy",
                             prefix + "subject.name.strategy")
        serializerConf["subject.name.strategy"] = strategy
        self._deserializerConf = {"use.latest.version": serializerConf["use.latest.version"],
                                  "subject.name.strategy": strategy}
        if "specific.avro.reader" in configs:
            _bool(configs["specific.avro.reader"], "specific.avro.reader")
        self._configs, self._isKey, self._serializerConf = configs, bool(isKey), serializerConf
        self._built = {}
        self._configured(configs)

    def _configured(self, configs: dict) -> None:
        """Per-format keys."""

    @property
    def configured(self) -> bool:
        """Whether ``configure`` was called (Kafka Streams configures only the default serdes)."""
        return self._configs is not None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_built"] = {}
        state.pop("_contexts", None)
        return state

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def _client(self):
        if self._configs is None:
            raise StreamsException(
                f"{type(self).__name__} is not configured: call configure({{'schema.registry.url': ...}}, isKey) on a "
                "serde given to Consumed/Produced/Grouped/Materialized/Joined/StreamJoined (Kafka Streams configures "
                "only default.key.serde and default.value.serde from the streams config)")
        return registryClient(self._configs)

    def _url(self) -> str:
        return str((self._configs or {}).get("schema.registry.url"))

    def _context(self, topic):
        contexts = self.__dict__.setdefault("_contexts", {})
        context = contexts.get(topic)
        if context is None:
            from confluent_kafka.serialization import MessageField, SerializationContext

            context = contexts[topic] = SerializationContext(topic, MessageField.KEY if self._isKey else MessageField.VALUE)
        return context

    def _get(self, kind: str, build: Callable[[], Any], extra: Any = None):
        key = (kind, extra)
        got = self._built.get(key)
        if got is None:
            got = self._built[key] = build()
        return got

    def _schemaId(self, data: bytes) -> str:
        from confluent_kafka.schema_registry.common.serde import SchemaId

        try:
            sid = SchemaId(self.format)
            sid.from_bytes(io.BytesIO(bytes(data)))
            return str(sid.id if sid.id is not None else sid.guid)
        except Exception:
            return "none (no magic byte)"

    def _unavailable(self, e: Exception, what: str) -> SchemaRegistryUnavailableException:
        return SchemaRegistryUnavailableException(
            f"{type(self).__name__}: schema registry {self._url()} unreachable or failing while {what}: "
            f"{type(e).__name__}: {e}")

    @staticmethod
    def _isNetwork(e: BaseException) -> bool:
        try:
            import httpx2 as httpx
        except ImportError:  # older confluent-kafka
            import httpx
        return isinstance(e, (httpx.TransportError, OSError))

    def serialize(self, topic, data):
        if data is None:
            return None
        try:
            try:
                return self._serializer(data)(data, self._context(topic))
            except SchemaRegistryError as e:
                if e.http_status_code != 409:
                    raise
                # Apicurio answers 409 to the second of two concurrent first registrations of a
                # subject (two Spark tasks writing a new topic); asked again, it gives the id. An
                # incompatible schema gets its 409 again, raised below.
                return self._serializer(data)(data, self._context(topic))
        except SchemaRegistryError as e:
            if _registryFault(e):
                raise self._unavailable(e, f"registering or looking up the schema of topic {topic}") from e
            subject = self._subject(topic, data)
            raise SerializationException(
                f"{type(self).__name__}: schema registry {self._url()} refused the schema for subject {subject} "
                f"(topic {topic}): {e}") from e
        except (StreamsException, SerializationException):
            raise
        except Exception as e:
            if self._isNetwork(e):
                raise self._unavailable(e, f"registering or looking up the schema of topic {topic}") from e
            raise SerializationException(
                f"{type(self).__name__} cannot serialize {data!r:.80} for topic {topic}: {type(e).__name__}: {e}") from e

    def _writeConf(self, schema, what: str) -> dict:
        """The serializer's conf for a writer schema (None: only the registry has it)."""
        conf = dict(self._serializerConf)
        if schema is None:  # the subject's latest version is the only schema there is
            if not conf["use.latest.version"]:
                raise SerializationException(f"{type(self).__name__} needs a writer schema to serialize: pass "
                                             f"{type(self).__name__}({what}) or set use.latest.version=true")
            conf["auto.register.schemas"] = False
        elif conf["auto.register.schemas"]:
            conf["use.latest.version"] = False  # Confluent: it applies only when auto.register.schemas=false
        return conf

    def _subject(self, topic, data) -> str:
        strategy = self._serializerConf["subject.name.strategy"]
        try:
            return strategy(self._context(topic), self._recordName(data))
        except Exception:
            return "?"

    def _recordName(self, data) -> str | None:
        return None

    def deserialize(self, topic, data):
        if data is None:
            return None
        try:
            return self._read(self._deserializer(), bytes(data), topic)
        except StreamsException:
            raise
        except SchemaRegistryError as e:
            if _registryFault(e):
                raise self._unavailable(e, f"fetching schema id {self._schemaId(data)} for topic {topic}") from e
            raise SerializationException(
                f"{type(self).__name__}: error deserializing {self.format} record for topic {topic}: schema id "
                f"{self._schemaId(data)} from registry {self._url()}: {e}") from e
        except Exception as e:
            if self._isNetwork(e):
                raise self._unavailable(e, f"fetching schema id {self._schemaId(data)} for topic {topic}") from e
            raise SerializationException(
                f"{type(self).__name__}: error deserializing {self.format} record for topic {topic}, schema id "
                f"{self._schemaId(data)}: {type(e).__name__}: {e}") from e

    def _read(self, deserializer, data: bytes, topic):
        return deserializer(data, self._context(topic))

    def _serializer(self, data):
        raise NotImplementedError

    def _deserializer(self):
        raise NotImplementedError


def _schemaText(schema: Any) -> str | None:
    if schema is None or isinstance(schema, str):
        return schema
    if isinstance(schema, Mapping) or isinstance(schema, list):
        return json.dumps(schema)
    return schema  # a confluent_kafka Schema


class GenericAvroSerde(_RegistrySerde):
    """Avro records as ``dict`` values (Confluent ``GenericAvroSerde``; Avro's ``GenericRecord``).

    Parameters
    ----------
    schema : str or dict, optional
        The writer schema (Avro JSON). Without one, serializing uses the subject's latest
        registered schema and needs ``use.latest.version=true`` (a Python dict does not carry its
        schema as a ``GenericRecord`` does). Reading always uses the writer's schema from the
        registry, unless ``readerSchema`` is given (Avro schema resolution: a newer reader reads
        older records, added fields take their defaults).
    readerSchema : str or dict, optional
        The schema records are read into.
    configs, isKey : optional
        Shortcut for ``configure(configs, isKey)``.
    """

    name = "GenericAvroSerde"
    format = "AVRO"
    kafkaClass = "io.confluent.kafka.streams.serdes.avro.GenericAvroSerde"

    def __init__(self, schema: Any = None, readerSchema: Any = None, configs: Mapping[str, Any] | None = None,
                 isKey: bool | None = None) -> None:
        self._schema = _schemaText(schema)
        self._readerSchema = _schemaText(readerSchema)
        super().__init__(configs, isKey)

    def _toDict(self, obj, ctx):
        return obj

    def _fromDict(self, obj, ctx):
        return obj

    def _writerSchema(self, data):
        return self._schema

    def _serializer(self, data):
        schema = self._writerSchema(data)
        got = self._built.get(("ser", schema))  # per record: no import, no closure
        if got is not None:
            return got
        from confluent_kafka.schema_registry.avro import AvroSerializer

        return self._get("ser", lambda: AvroSerializer(self._client(), schema, self._toDict,
                                                       self._writeConf(schema, "schema")), schema)

    def _deserializer(self):
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        return self._get("de", lambda: AvroDeserializer(self._client(), self._readerSchema, self._fromDict,
                                                                conf=dict(self._deserializerConf)))

    def deserialize(self, topic, data):
        fast = self._built.get("fastRead")
        if fast is not None and data is not None:
            value = fast.read(data, topic)
            if value is not _MISS:
                return value
        return super().deserialize(topic, data)

    def _read(self, deserializer, data, topic):
        ctx = self._context(topic)
        value = deserializer(data, ctx)
        fast = self._built.get("fastRead")
        if fast is None:
            fast = self._built["fastRead"] = _AvroFastReader(deserializer, self._context)
        try:
            fast.learn(data, ctx)
        except Exception:  # the record was read: its id just stays on confluent-kafka's path
            pass
        return value

    def _recordName(self, data) -> str | None:
        schema = self._writerSchema(data)
        try:
            parsed = json.loads(schema) if isinstance(schema, str) else None
            if isinstance(parsed, dict) and "name" in parsed:
                ns = parsed.get("namespace")
                return f"{ns}.{parsed['name']}" if ns and "." not in parsed["name"] else parsed["name"]
        except ValueError:
            pass
        return None


# ---------------------------------------------------------------- Avro fast path (issue 35, speed)
# confluent-kafka 2.16's AvroDeserializer redoes per record what depends only on the schema id (the
# subject, the writer schema lookup, the rule hooks, get_inline_tags() walking the whole reader
# schema): about 12 us per record over fastavro's own decode (its AvroSerializer is within 1 us of
# fastavro's encode: no fast path there). _AvroFastReader runs, per record, only the steps of
# confluent-kafka's AvroDeserializer.__deserialize_impl (2.16.1, schema_registry/_sync/avro.py) that
# are not the identity under conditions checked once per schema id, with confluent-kafka's own
# objects: its schema-id framing function (the wire format), the parsed schemas it cached for the id,
# and fastavro's schemaless_reader called with the same arguments. An id is taken fast only after a
# record of it went through confluent-kafka's path, and any record the fast path fails on goes through
# confluent-kafka's path again (so errors are its errors, wrapped as on the general path).
#
# Provably the same result, per schema id, when:
#   - the deserializer reads no "latest" schema (use.latest.version false, no use.latest.with.metadata,
#     no use.schema.id): latest_schema is None, so there are no migrations and the reader schema is
#     the deserializer's reader schema, else the writer's;
#   - neither the writer schema nor the reader schema (the Schema objects confluent-kafka holds)
#     carries a rule set with rules: _execute_rules_with_phase (ENCODING and DOMAIN, READ) then
#     returns its input, and the subject, inline tags and field transformer it gets are unused;
#   - the writer schema is not the plain "bytes" schema (returned undecoded by confluent-kafka).
# Kept per record: set_original_key/clear_original_key (confluent-kafka's DLQ bookkeeping).
_MISS = object()


def _noLatest(serde) -> bool:
    return (not serde._use_latest_version and serde._use_latest_with_metadata is None
            and serde._use_schema_id is None)


def _noRules(schema) -> bool:
    rules = getattr(schema, "rule_set", None)
    return rules is None or not (rules.domain_rules or rules.encoding_rules or rules.migration_rules)


class _AvroFastReader:
    """``read(data, topic)``: what confluent-kafka's ``AvroDeserializer(data, ctx)`` returns, for
    schema ids found eligible by ``learn`` (see the conditions above); else ``_MISS``."""

    __slots__ = ("de", "context", "schemas", "SchemaId", "reader", "setKey", "clearKey", "KEY")

    def __init__(self, deserializer, context: Callable) -> None:
        from confluent_kafka.schema_registry.common.serde import SchemaId
        from confluent_kafka.schema_registry.serde import clear_original_key, set_original_key
        from confluent_kafka.serialization import MessageField
        from fastavro import schemaless_reader

        self.de, self.context, self.schemas = deserializer, context, {}
        self.SchemaId, self.reader, self.setKey, self.clearKey = SchemaId, schemaless_reader, set_original_key, clear_original_key
        self.KEY = MessageField.KEY

    def read(self, data, topic):
        try:
            if len(data) <= 5:
                return _MISS
            de, ctx, sid = self.de, self.context(topic), self.SchemaId("AVRO")
            payload = de._schema_id_deserializer(data, ctx, sid)
            schemas = self.schemas.get(sid.id if sid.id is not None else sid.guid)
            if schemas is None:
                return _MISS
            if isinstance(payload, bytes):
                payload = io.BytesIO(payload)
            value = self.reader(payload, schemas[0], schemas[1], de._return_record_name)
            if de._from_dict is not None:
                value = de._from_dict(value, ctx)
            if ctx.field == self.KEY:
                self.setKey(data)
            else:
                self.clearKey()
            return value
        except Exception:
            return _MISS  # confluent-kafka's path raises its own error for this record

    def learn(self, data: bytes, ctx) -> None:
        """After confluent-kafka's path read ``data``: note its schema id's parsed (writer, reader
        or None when it is the writer) schemas as the deserializer holds them, or None when the
        fast path does not apply to that id."""
        de = self.de
        if len(data) <= 5:
            return
        sid = self.SchemaId("AVRO")
        de._schema_id_deserializer(data, ctx, sid)
        key = sid.id if sid.id is not None else sid.guid
        if key in self.schemas:
            return
        self.schemas[key] = None
        if not _noLatest(de):
            return
        subject = (de._subject_name_func(ctx, None, de._registry, de._subject_name_conf)
                   if de._strategy_accepts_client else de._subject_name_func(ctx, None))
        writerRaw = de._get_writer_schema(sid, subject)  # in the client's cache: the record just read
        writer = de._get_parsed_schema(writerRaw)
        if de._schema is not None and de._reader_schema is not None:
            readerRaw, reader = de._schema, de._reader_schema
        else:
            readerRaw, reader = writerRaw, writer
        if not (_noRules(writerRaw) and _noRules(readerRaw)) or writer == "bytes" or (
                isinstance(writer, dict) and writer.get("type") == "bytes"):
            return
        # fastavro's schemaless_reader drops a reader schema equal to the writer's: None is the same call
        self.schemas[key] = (writer, None if reader is writer else reader)


def _avroSchemaOf(cls) -> str | None:
    schema = getattr(cls, "SCHEMA", None)
    if schema is None:
        schema = getattr(cls, "schema", None)
        if callable(schema):
            schema = schema()
    return _schemaText(schema)


def _recordToDict(obj) -> dict:
    toDict = getattr(obj, "to_dict", None) or getattr(obj, "toDict", None)
    if callable(toDict):
        return toDict()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    return dict(vars(obj))


class SpecificAvroSerde(GenericAvroSerde):
    """Avro records as instances of a Python class declared for a schema (Confluent
    ``SpecificAvroSerde``; Avro's ``SpecificRecord``).

    The class carries its schema as ``SCHEMA`` (Avro JSON, str or dict; a generated class's
    ``SCHEMA$``), is built from the record's fields as keyword arguments (``cls(**fields)``: a
    dataclass does) and gives them back by ``to_dict()`` or as a dataclass or by ``vars()``.

    Parameters
    ----------
    recordClass : type, optional
        The class records are read into and whose ``SCHEMA`` is the reader schema. Without it
        (``default.value.serde=io.confluent.kafka.streams.serdes.avro.SpecificAvroSerde``), a
        record is read into the class named by the writer schema's full name, imported as a
        dotted Python path (``com.example.Price``: module ``com.example``, class ``Price``), as
        Avro's ``SpecificData`` finds a Java class; values are written with their own class's
        ``SCHEMA``.
    """

    name = "SpecificAvroSerde"
    kafkaClass = "io.confluent.kafka.streams.serdes.avro.SpecificAvroSerde"

    def __init__(self, recordClass: type | None = None, configs: Mapping[str, Any] | None = None,
                 isKey: bool | None = None) -> None:
        self._recordClass = recordClass
        schema = None
        if recordClass is not None:
            schema = _avroSchemaOf(recordClass)
            if schema is None:
                raise TypeError(f"SpecificAvroSerde: {recordClass.__qualname__} has no SCHEMA (its Avro schema)")
        super().__init__(schema, schema, configs, isKey)

    def _toDict(self, obj, ctx):
        return obj if isinstance(obj, dict) else _recordToDict(obj)

    def _fromDict(self, obj, ctx):
        cls = self._recordClass
        return obj if cls is None else cls(**obj)

    def _writerSchema(self, data):
        if self._recordClass is not None or isinstance(data, dict):
            return self._schema
        return _avroSchemaOf(type(data))

    def deserialize(self, topic, data):
        if self._recordClass is None:  # the class comes from the writer schema's name: _read below
            return _RegistrySerde.deserialize(self, topic, data)
        return super().deserialize(topic, data)

    def _read(self, deserializer, data, topic):
        value = GenericAvroSerde._read(self, deserializer, data, topic)
        if self._recordClass is not None:
            return value
        # the class named by the writer schema (SpecificData.getClass)
        from confluent_kafka.schema_registry.common.serde import SchemaId

        sid = SchemaId(self.format)
        sid.from_bytes(io.BytesIO(data))
        schema = json.loads(self._client().get_schema(sid.id).schema_str)
        name = schema.get("name", "") if isinstance(schema, dict) else ""
        ns = schema.get("namespace") if isinstance(schema, dict) else None
        full = f"{ns}.{name}" if ns and "." not in name else name
        cls = self._get("class", lambda: _importClass(full, "specific.avro.reader"), full)
        return cls(**value)


class KafkaProtobufSerde(_RegistrySerde):
    """Protobuf messages (Confluent ``KafkaProtobufSerde``), as classes generated by ``protoc``
    (``grpcio-tools``: ``python -m grpc_tools.protoc --python_out=...``).

    Parameters
    ----------
    messageClass : generated message class, optional
        The class written and read. Without it the class is taken from
        ``specific.protobuf.key.type``/``specific.protobuf.value.type`` (a dotted Python path).
    """

    name = "KafkaProtobufSerde"
    format = "PROTOBUF"
    kafkaClass = "io.confluent.kafka.streams.serdes.protobuf.KafkaProtobufSerde"

    def __init__(self, messageClass: type | None = None, configs: Mapping[str, Any] | None = None,
                 isKey: bool | None = None) -> None:
        self._messageClass = messageClass
        super().__init__(configs, isKey)

    def __getstate__(self):
        state = super().__getstate__()
        if state.get("_messageClass") is not None:  # a upb class does not pickle: its .proto does
            state["_messageClass"] = _ProtoClassRef(state["_messageClass"])
        return state

    def __setstate__(self, state):
        if isinstance(state.get("_messageClass"), _ProtoClassRef):
            state["_messageClass"] = state["_messageClass"].resolve()
        self.__dict__.update(state)

    def _configured(self, configs):
        key = f"specific.protobuf.{'key' if self._isKey else 'value'}.type"
        if self._messageClass is None and configs.get(key):
            self._messageClass = _importClass(configs[key], key)

    def _cls(self):
        if self._messageClass is None:
            raise StreamsException("KafkaProtobufSerde needs a message class: KafkaProtobufSerde(MyMessage) or "
                                   "specific.protobuf.key.type / specific.protobuf.value.type")
        return self._messageClass

    def _serializer(self, data):
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

        conf = dict(self._writeConf(True, "messageClass"), **{"use.deprecated.format": False})
        return self._get("ser", lambda: ProtobufSerializer(self._cls(), self._client(), conf))

    def _deserializer(self):
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

        return self._get("de", lambda: ProtobufDeserializer(self._cls(), dict(self._deserializerConf, **{"use.deprecated.format": False}),
                                                            self._client()))

    def _recordName(self, data):
        return type(data).DESCRIPTOR.full_name if hasattr(type(data), "DESCRIPTOR") else None


_PROTO_CLASSES: dict = {}  # (files, full name) -> the class rebuilt from them, once per process
_PROTO_LOCK = threading.Lock()


class _ProtoClassRef:
    """A generated Protobuf message class as it travels to a Spark worker: its module and name,
    and its .proto file with the files it imports (serialized ``FileDescriptorProto``, imports
    first). ``resolve()`` gives the module's class if the worker can import it and it was built
    from the same .proto; else a class built from the files in a descriptor pool of its own
    (``google.protobuf.message_factory.GetMessageClass``): a ``_pb2`` module that exists only on
    the driver (generated at run time, or not installed on the workers) works on the workers."""

    def __init__(self, cls: type) -> None:
        self.module, self.qualname = cls.__module__, cls.__qualname__
        self.fullName = cls.DESCRIPTOR.full_name
        self.files = _protoFiles(cls.DESCRIPTOR.file)

    def resolve(self) -> type:
        import importlib

        try:
            cls = importlib.import_module(self.module)
            for part in self.qualname.split("."):
                cls = getattr(cls, part)
            if cls.DESCRIPTOR.full_name == self.fullName and _protoFiles(cls.DESCRIPTOR.file) == self.files:
                return cls
        except Exception:  # not importable here, or another version of it: build it from the files
            pass
        key = (tuple(self.files), self.fullName)
        with _PROTO_LOCK:
            cls = _PROTO_CLASSES.get(key)
            if cls is None:
                from google.protobuf import descriptor_pool, message_factory

                pool = descriptor_pool.DescriptorPool()
                for data in self.files:
                    pool.AddSerializedFile(data)
                cls = _PROTO_CLASSES[key] = message_factory.GetMessageClass(pool.FindMessageTypeByName(self.fullName))
            return cls


def _protoFiles(file) -> list[bytes]:
    """``file`` (a ``FileDescriptor``) and every file it imports, transitively, as serialized
    ``FileDescriptorProto``, each after the files it imports."""
    from google.protobuf import descriptor_pb2

    out, seen = [], set()

    def add(f):
        if f.name in seen:
            return
        seen.add(f.name)
        for dependency in f.dependencies:
            add(dependency)
        proto = descriptor_pb2.FileDescriptorProto()
        f.CopyToProto(proto)
        out.append(proto.SerializeToString())

    add(file)
    return out


class KafkaJsonSchemaSerde(_RegistrySerde):
    """JSON values validated against a JSON Schema (Confluent ``KafkaJsonSchemaSerde``).

    Parameters
    ----------
    schema : str or dict, optional
        The writer's JSON Schema. Without one, serializing needs ``use.latest.version=true``.
        Records are read with the writer's schema from the registry (validated against it).
    valueClass : type, optional
        Values are read as ``valueClass(**dict)`` and written from ``to_dict()``/a dataclass;
        without it they are dicts, lists, str, numbers (Confluent's ``json.value.type`` /
        ``json.key.type`` name the class too).
    """

    name = "KafkaJsonSchemaSerde"
    format = "JSON"
    kafkaClass = "io.confluent.kafka.streams.serdes.json.KafkaJsonSchemaSerde"

    def __init__(self, schema: Any = None, valueClass: type | None = None, configs: Mapping[str, Any] | None = None,
                 isKey: bool | None = None) -> None:
        self._schema = _schemaText(schema)
        self._valueClass = valueClass
        super().__init__(configs, isKey)

    def _configured(self, configs):
        key = f"json.{'key' if self._isKey else 'value'}.type"
        if self._valueClass is None and configs.get(key):
            self._valueClass = _importClass(configs[key], key)

    def _toDict(self, obj, ctx):
        if self._valueClass is not None and isinstance(obj, self._valueClass):
            return _recordToDict(obj)
        return obj

    def _fromDict(self, obj, ctx):
        return obj if self._valueClass is None else self._valueClass(**obj)

    def _serializer(self, data):
        from confluent_kafka.schema_registry.json_schema import JSONSerializer

        return self._get("ser", lambda: JSONSerializer(self._schema, self._client(), self._toDict,
                                                       self._writeConf(self._schema, "schema")))

    def _deserializer(self):
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        return self._get("de", lambda: JSONDeserializer(None, self._fromDict, self._client(),
                                                                dict(self._deserializerConf)))

    def _recordName(self, data):
        try:
            return json.loads(self._schema).get("title")
        except Exception:
            return None
