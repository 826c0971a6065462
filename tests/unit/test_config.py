"""StreamsConfig: Kafka 4.3's keys and value forms, checks up front, client configs (issue 19
item 7, issue 22 item 5). Messages are Kafka's ConfigException texts (checked against the
kafka-streams 4.3.1 jar: ``Invalid value <v> for configuration <key>: <reason>``)."""

import logging
import struct
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from kspark import (
    ConfigException, KafkaStreams, LogAndContinueExceptionHandler, LogAndContinueProcessingExceptionHandler,
    LogAndFailExceptionHandler, Serdes, StreamsBuilder, StreamsConfig, WallclockTimestampExtractor,
)
from kspark import _config_keys_kafka as kafkaKeys
from kspark import config as configModule

ROOT = Path(__file__).resolve().parents[2]


def invalid(value, key, reason):
    """pytest.raises for Kafka's ConfigException text."""
    import re

    return pytest.raises(ConfigException, match="^" + re.escape(f"Invalid value {value} for configuration {key}: {reason}"))


def infoLines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "kspark.config" and r.levelno == logging.INFO]


def warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "kspark.config" and r.levelno == logging.WARNING]


# ------------------------------------------------------------------ 1. Kafka's keys and constants
def test_key_lists_are_kafka_4_3s():
    assert kafkaKeys.KAFKA_VERSION == "4.3.1"
    assert len(kafkaKeys.STREAMS) == 74
    assert kafkaKeys.STREAMS["statestore.cache.max.bytes"] == ("LONG", 10485760, ("range", 0, None), False)
    assert kafkaKeys.CONSUMER["max.poll.records"] == ("INT", 500, ("range", 1, None), False)
    assert kafkaKeys.PRODUCER["acks"][:2] == ("STRING", "all")
    assert "sasl.mechanism" in kafkaKeys.ADMIN and "cleanup.policy" in kafkaKeys.TOPIC


def test_generated_key_lists_match_the_jars(tmp_path):
    """jvm/configkeys/generate.py run again against the jars gives the committed modules."""
    subprocess.run([sys.executable, str(ROOT / "jvm/configkeys/generate.py"), "--out", str(tmp_path)], check=True)
    for name in ("_config_keys_kafka.py", "_config_keys_spark.py"):
        assert (tmp_path / name).read_text() == (ROOT / "src/kspark" / name).read_text(), name


def test_streams_constants_are_kafkas():
    for name, value in {**kafkaKeys.STREAMS_CONSTANTS, **kafkaKeys.STREAMS_DEPRECATED_CONSTANTS}.items():
        assert getattr(StreamsConfig, name) == value, name
    assert StreamsConfig.AT_LEAST_ONCE == "at_least_once" and StreamsConfig.EXACTLY_ONCE_V2 == "exactly_once_v2"
    assert StreamsConfig.NUM_STREAM_THREADS_CONFIG == "num.stream.threads"
    assert StreamsConfig.BOOTSTRAP_SERVERS_CONFIG == "bootstrap.servers"
    assert StreamsConfig.AUTO_OFFSET_RESET_CONFIG == "auto.offset.reset"
    assert StreamsConfig.MAIN_CONSUMER_PREFIX == "main.consumer."
    assert StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG == "errors.dead.letter.queue.topic.name"


def test_every_streams_key_is_applied_or_has_a_reason():
    classified = (configModule._APPLIED | configModule._KAFKA_ONLY | set(configModule._IGNORED)
                  | set(configModule._UNSUPPORTED) | set(configModule._ALIASES) | set(configModule._CLIENT_KEYS))
    assert set(kafkaKeys.STREAMS) - classified == set()


def test_every_kafka_key_is_accepted_with_its_default():
    props = {k: d for k, (t, d, v, internal) in kafkaKeys.STREAMS.items() if d not in (None, "<required>")}
    props.update({f"consumer.{k}": d for k, (t, d, v, i) in kafkaKeys.CONSUMER.items()
                  if d not in (None, "<required>") and not i and k not in configModule._NOT_CLIENT_KEYS})
    props.update({f"producer.{k}": d for k, (t, d, v, i) in kafkaKeys.PRODUCER.items()
                  if d not in (None, "<required>") and k not in configModule._NOT_CLIENT_KEYS})
    props.update({f"admin.{k}": d for k, (t, d, v, i) in kafkaKeys.ADMIN.items() if d not in (None, "<required>")})
    props["topic.cleanup.policy"] = "compact"
    config = StreamsConfig(props)
    assert config.get("num.stream.threads") == 1
    assert config.get("consumer.max.poll.records") == 500
    assert config.get("producer.acks") == "all"


# ------------------------------------------------------------------ 2. applied, or accepted and logged
def test_keys_without_effect_are_accepted_and_logged_once_each(caplog):
    caplog.set_level(logging.INFO, "kspark.config")
    config = StreamsConfig({"application.id": "a", "num.stream.threads": 4, "num.standby.replicas": "1",
                            "max.task.idle.ms": 10})
    assert config.get("num.stream.threads") == 4 and config.get("num.standby.replicas") == 1
    lines = infoLines(caplog)
    assert len(lines) == 2
    assert lines[0].startswith("Configuration num.stream.threads=4 has no effect: Spark runs the tasks")
    assert lines[1].startswith("Configuration num.standby.replicas=1 has no effect: kspark has no standby")


def test_kafka_keys_without_bootstrap_servers_are_logged_as_such(caplog):
    caplog.set_level(logging.INFO, "kspark.config")
    StreamsConfig({"processing.guarantee": "exactly_once_v2", "client.id": "c"})  # client.id names the metrics' threads
    assert infoLines(caplog) == [
        "Configuration processing.guarantee=exactly_once_v2 has no effect: bootstrap.servers is not set, so kspark "
        "reads and writes its local topics (kspark.topics.dir), not Kafka."]
    caplog.clear()
    StreamsConfig({"bootstrap.servers": "b:9092", "processing.guarantee": "exactly_once_v2", "client.id": "c"})
    assert infoLines(caplog) == []


def test_cache_max_bytes_buffering_sets_statestore_cache_max_bytes(caplog):
    caplog.set_level(logging.INFO, "kspark.config")
    assert StreamsConfig({"cache.max.bytes.buffering": "0"}).get("statestore.cache.max.bytes") == 0
    assert StreamsConfig({"cache.max.bytes.buffering": 0}).get("cache.max.bytes.buffering") == 0
    deprecated = "Configuration 'cache.max.bytes.buffering' is deprecated. Please use 'statestore.cache.max.bytes' instead."
    assert warnings(caplog) == [deprecated, deprecated] and infoLines(caplog) == []
    caplog.clear()
    both = StreamsConfig({"cache.max.bytes.buffering": 0, "statestore.cache.max.bytes": 100})
    assert both.get("statestore.cache.max.bytes") == 100
    assert warnings(caplog) == ["Both statestore.cache.max.bytes and its deprecated name cache.max.bytes.buffering "
                                "are set; statestore.cache.max.bytes=100 applies.", deprecated]
    with invalid(-1, "cache.max.bytes.buffering", "Value must be at least 0"):
        StreamsConfig({"cache.max.bytes.buffering": -1})


def test_emit_intervals_are_accepted_and_the_windowed_one_applied(caplog):
    """Issue 36 item 4: the emit-final throttle is applied (kspark.dsl._internals.common.shouldEmitFinal),
    so any value is taken silently; its default is TopologyTestDriver's 0."""
    caplog.set_level(logging.INFO, "kspark.config")
    key = "__emit.interval.ms.kstreams.windowed.aggregation__"
    assert StreamsConfig({key: 0}).get(key) == 0 and StreamsConfig({}).get(key) == 0
    assert StreamsConfig({key: "1000"}).get(key) == 1000
    assert infoLines(caplog) == []
    with invalid(-1, key, "Value must be at least 0"):
        StreamsConfig({key: -1})
    outerJoin = "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__"  # KIP-633's, as Kafka's tests set it
    caplog.clear()
    assert StreamsConfig({outerJoin: 0}).get(outerJoin) == 0
    assert infoLines(caplog) == []


def test_dead_letter_queue_key_kafkas_and_kspark_former_spelling():
    assert StreamsConfig({"errors.dead.letter.queue.topic.name": "dlq"}).get(
        StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG) == "dlq"
    assert StreamsConfig({"errors.deadletterqueue.topic.name": "dlq2"}).get(
        "errors.dead.letter.queue.topic.name") == "dlq2"


def test_unsupported_keys_are_refused_unless_default():
    StreamsConfig({"processor.wrapper.class": "org.apache.kafka.streams.processor.internals.NoOpProcessorWrapper",
                   "config.providers": ""})
    with invalid("my.Wrapper", "processor.wrapper.class", "kspark does not wrap processors (KIP-1112)"):
        StreamsConfig({"processor.wrapper.class": "my.Wrapper"})
    with invalid("file", "config.providers", "kspark does not resolve config provider variables"):
        StreamsConfig({"config.providers": "file"})


# ------------------------------------------------------------------ 3. values as Kafka takes them
def test_numbers_and_booleans_as_strings_and_durations_as_timedelta():
    config = StreamsConfig({"max.task.idle.ms": " 100 ", "statestore.cache.max.bytes": "0",
                            "kspark.repartition.before.stateful.process": "TRUE", "kspark.max.records.per.trigger": "5",
                            "commit.interval.ms": timedelta(seconds=2), "bootstrap.servers": "a:1, b:2"})
    assert config.get("max.task.idle.ms") == 100 and config.get("statestore.cache.max.bytes") == 0
    assert config.get("kspark.repartition.before.stateful.process") is True
    assert config.get("kspark.max.records.per.trigger") == 5 and config.get("commit.interval.ms") == 2000
    assert config.get("bootstrap.servers") == ["a:1", "b:2"]
    with invalid("yes", "kspark.repartition.before.stateful.process", "Expected value to be either true or false"):
        StreamsConfig({"kspark.repartition.before.stateful.process": "yes"})
    with invalid("1.5", "max.task.idle.ms", "Not a number of type LONG"):
        StreamsConfig({"max.task.idle.ms": "1.5"})
    with invalid("3000000000", "num.stream.threads", "Not a number of type INT"):
        StreamsConfig({"num.stream.threads": 3_000_000_000})
    with invalid("1.5", "num.stream.threads", "Expected value to be a 32-bit integer, but it was a float"):
        StreamsConfig({"num.stream.threads": 1.5})


@pytest.mark.parametrize("name, expected", [
    ("org.apache.kafka.common.serialization.Serdes$StringSerde", Serdes.String()),
    ("org.apache.kafka.common.serialization.Serdes$LongSerde", Serdes.Long()),
    ("org.apache.kafka.common.serialization.Serdes.IntegerSerde", Serdes.Integer()),
    ("org.apache.kafka.common.serialization.Serdes$DoubleSerde", Serdes.Double()),
    ("org.apache.kafka.common.serialization.Serdes$ByteArraySerde", Serdes.ByteArray()),
    ("Serdes.Long", Serdes.Long()),
    ("Serdes.Long()", Serdes.Long()),
    ("kspark.serialization.Serdes.String", Serdes.String()),
    ("kspark.Serdes.JSON", Serdes.JSON()),
])
def test_serde_names(name, expected):
    config = StreamsConfig({"default.key.serde": name, "default.value.serde": name})
    assert config.defaultKeySerde() == expected and config.defaultValueSerde() == expected


def test_serde_from_kafka_class_name_writes_kafkas_bytes():
    serde = StreamsConfig({"default.value.serde": "org.apache.kafka.common.serialization.Serdes$LongSerde"}).defaultValueSerde()
    assert serde.serialize("t", 5) == struct.pack(">q", 5)


def test_serde_classes_and_factories():
    from kspark.serialization import _LongSerde

    assert StreamsConfig({"default.value.serde": _LongSerde}).defaultValueSerde() == Serdes.Long()
    assert StreamsConfig({"default.value.serde": Serdes.Integer}).defaultValueSerde() == Serdes.Integer()


def test_serde_that_kspark_lacks_or_that_names_nothing():
    with invalid("org.apache.kafka.common.serialization.Serdes$WrapperSerde", "default.value.serde",
                 "kspark has no Serdes.Wrapper() for Kafka's org.apache.kafka.common.serialization.Serdes$WrapperSerde"):
        StreamsConfig({"default.value.serde": "org.apache.kafka.common.serialization.Serdes$WrapperSerde"})
    with invalid("Serdes.Lnog", "default.value.serde", "Class Serdes.Lnog could not be found (kspark.Serdes has no "
                                                        "attribute Lnog)."):
        StreamsConfig({"default.value.serde": "Serdes.Lnog"})
    with invalid("no.such.module.Serde", "default.key.serde", "Class no.such.module.Serde could not be found (no "
                                                              "module no can be imported)."):
        StreamsConfig({"default.key.serde": "no.such.module.Serde"})
    with invalid("LogAndContinueExceptionHandler", "default.key.serde",
                 "it is not a Serde (no serialize()/deserialize() method)"):
        StreamsConfig({"default.key.serde": "LogAndContinueExceptionHandler"})


def test_issue_22_serde_string_fails_at_construction_not_inside_spark(tmp_path):
    with invalid("Serdes.Lnog", "default.value.serde", "Class Serdes.Lnog"):
        KafkaStreams(StreamsBuilder().build(), {"application.id": "a", "kspark.topics.dir": str(tmp_path),
                                                "default.deserialization.exception.handler": LogAndContinueExceptionHandler,
                                                "default.value.serde": "Serdes.Lnog"})


@pytest.mark.parametrize("name", ["org.apache.kafka.streams.processor.WallclockTimestampExtractor",
                                  "kspark.processor.WallclockTimestampExtractor", "WallclockTimestampExtractor"])
def test_timestamp_extractor_names(name):
    assert type(StreamsConfig({"default.timestamp.extractor": name}).defaultTimestampExtractor()) is WallclockTimestampExtractor


def test_timestamp_extractor_kafka_class_kspark_lacks():
    with invalid("org.apache.kafka.streams.processor.MyExtractor", "default.timestamp.extractor",
                 "kspark has no equivalent of Kafka's class org.apache.kafka.streams.processor.MyExtractor"):
        StreamsConfig({"default.timestamp.extractor": "org.apache.kafka.streams.processor.MyExtractor"})


@pytest.mark.parametrize("key", ["deserialization.exception.handler", "default.deserialization.exception.handler"])
def test_deserialization_handler_names_give_a_new_handler_per_call(key):
    config = StreamsConfig({key: "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler"})
    first, second = config.deserializationExceptionHandler(), config.deserializationExceptionHandler()
    assert type(first) is LogAndContinueExceptionHandler and first is not second
    assert type(StreamsConfig().deserializationExceptionHandler()) is LogAndFailExceptionHandler
    handler = LogAndContinueExceptionHandler()
    assert StreamsConfig({key: handler}).deserializationExceptionHandler() is handler


def test_processing_handler_names_and_wrong_kinds():
    config = StreamsConfig({"processing.exception.handler": "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler"})
    assert type(config.processingExceptionHandler()) is LogAndContinueProcessingExceptionHandler
    with invalid("org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler",
                 "deserialization.exception.handler",
                 "LogAndContinueProcessingExceptionHandler is not an instance of DeserializationExceptionHandler"):
        StreamsConfig({"deserialization.exception.handler":
                       "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler"})
    with invalid("kspark.Serdes.Long", "processing.exception.handler", "it is not a ProcessingExceptionHandler (no "
                                                                      "handle() method)"):
        StreamsConfig({"processing.exception.handler": "kspark.Serdes.Long"})


def test_paths_may_be_pathlike(tmp_path):
    config = StreamsConfig({"state.dir": tmp_path / "s", "kspark.topics.dir": tmp_path / "t"})
    assert config.get("state.dir") == str(tmp_path / "s") and config.get("kspark.topics.dir") == str(tmp_path / "t")


# ------------------------------------------------------------------ 4. every value checked up front
@pytest.mark.parametrize("value", [0, -5, "0"])
def test_max_records_per_trigger_at_least_1(value):
    with invalid(value, "kspark.max.records.per.trigger", "Value must be at least 1"):
        StreamsConfig({"kspark.max.records.per.trigger": value})


def test_max_records_per_trigger_unset_is_unlimited():
    assert StreamsConfig().get("kspark.max.records.per.trigger") is None
    assert StreamsConfig({"kspark.max.records.per.trigger": None}).get("kspark.max.records.per.trigger") is None


def test_statestore_cache_max_bytes_at_least_0():
    with invalid(-1, "statestore.cache.max.bytes", "Value must be at least 0"):
        StreamsConfig({"statestore.cache.max.bytes": -1})


def test_max_task_idle_ms_at_least_minus_1():
    assert StreamsConfig({"max.task.idle.ms": -1}).get("max.task.idle.ms") == -1
    with invalid(-2, "max.task.idle.ms", "Value must be at least -1"):
        StreamsConfig({"max.task.idle.ms": -2})


@pytest.mark.parametrize("value, stored", [("availableNow", "availableNow"), ("1 second", "1 second"),
                                           ("500 milliseconds", "500 milliseconds"), ("10 seconds", "10 seconds"),
                                           ("interval 1 minute 30 seconds", "interval 1 minute 30 seconds"),
                                           (timedelta(seconds=2), "2000 milliseconds"), (250, "250 milliseconds")])
def test_trigger_values(value, stored):
    assert StreamsConfig({"kspark.trigger": value}).get("kspark.trigger") == stored


@pytest.mark.parametrize("value, spark", [
    ("1 secnd", "Invalid unit secnd."),
    ("1", "Expect a unit name after 1 but hit EOL."),
    ("1second", "Invalid value 1second."),
    ("1.5 minutes", "minutes cannot have fractional part."),
    ("1 month", "Doesn't support month or year interval: 1 month"),
    ("-1 second", "requirement failed: the interval of trigger should not be negative"),
    ("availableLater", "Unrecognized number availablelater."),
])
def test_trigger_invalid_names_the_key(value, spark):
    # Spark's messages for Trigger.ProcessingTime(value) (checked against pyspark 4.3's jars)
    with invalid(value, "kspark.trigger", 'not "availableNow", "continuous" nor a Spark processing-time interval such as '
                                          f'"1 second" or "500 milliseconds" ({spark})'):
        StreamsConfig({"kspark.trigger": value})


def test_trigger_continuous_is_the_stream_threads_mode():
    """kspark.trigger "continuous" (any case): long-running stream threads (kspark.spark._stream_threads)."""
    assert StreamsConfig({"kspark.trigger": "Continuous"}).get("kspark.trigger") == "continuous"


@pytest.mark.parametrize("value", ["exactly_once", "exactly_once_beta", "EXACTLY_ONCE_V2"])
def test_processing_guarantee_kafka_4_values(value):
    with invalid(value, "processing.guarantee", "String must be one of: at_least_once, exactly_once_v2"):
        StreamsConfig({"processing.guarantee": value})
    assert StreamsConfig({"processing.guarantee": "exactly_once_v2"}).processingGuarantee() == "exactly_once_v2"
    assert StreamsConfig().processingGuarantee() == "at_least_once"


def test_replication_factor():
    assert StreamsConfig().get("replication.factor") == -1
    assert StreamsConfig({"replication.factor": "3"}).get("replication.factor") == 3
    with invalid("x", "replication.factor", "Not a number of type INT"):
        StreamsConfig({"replication.factor": "x"})
    with invalid(0, "replication.factor", "Value must be -1 (the broker's default) or at least 1"):
        StreamsConfig({"replication.factor": 0})


@pytest.mark.parametrize("key", ["auto.offset.reset", "consumer.auto.offset.reset", "main.consumer.auto.offset.reset"])
def test_auto_offset_reset(key):
    for good in ("earliest", "latest", "none", "by_duration:PT1H", "by_duration:P1DT2H30M", "by_duration:PT0.5S"):
        assert StreamsConfig({key: good}).get(key) == good
    for bad in ("bogus", "EARLIEST", "by_duration:-PT1H", "by_duration:1h", "by_duration:PT"):
        with invalid(bad, key, f"Invalid value `{bad}` for configuration {key}. The value must be either 'earliest', "
                               "'latest', 'none' or of the format 'by_duration:<PnDTnHnMn.nS.>'."):
            StreamsConfig({key: bad})


def test_by_duration_reaches_the_spark_reader_in_ms():
    """The reader takes ``by_duration:<ms>`` (Java's Duration.toMillis of the ISO-8601 value)."""
    from kspark.config import resetPolicy

    assert resetPolicy("by_duration:PT1H30M") == "by_duration:5400000"
    assert resetPolicy("by_duration:P1DT0.25S") == "by_duration:86400250"
    assert [resetPolicy(p) for p in ("earliest", "latest", "none")] == ["earliest", "latest", "none"]


def test_other_kafka_validators():
    with invalid("bogus", "security.protocol",
                 "String must be one of (case insensitive): SASL_SSL, PLAINTEXT, SSL, SASL_PLAINTEXT"):
        StreamsConfig({"security.protocol": "bogus"})
    assert StreamsConfig({"security.protocol": "sasl_ssl"}).get("security.protocol") == "sasl_ssl"
    with invalid(0, "consumer.max.poll.records", "Value must be at least 1"):
        StreamsConfig({"consumer.max.poll.records": 0})
    with invalid("READ_COMMITTED", "isolation.level", "String must be one of: read_committed, read_uncommitted"):
        StreamsConfig({"isolation.level": "READ_COMMITTED"})
    with invalid("1.0", "upgrade.from", "String must be one of: null, 2.4"):
        StreamsConfig({"upgrade.from": "1.0"})


def test_bootstrap_servers():
    assert not StreamsConfig().usesKafka() and not StreamsConfig({"bootstrap.servers": ""}).usesKafka()
    assert StreamsConfig({"bootstrap.servers": "SASL_SSL://broker-1:9093,[::1]:9092"}).usesKafka()
    # Kafka checks the addresses when a client is created, not in StreamsConfig (issue 36 item 9;
    # tests/unit/test_port_api_round2.py compares with Kafka)
    with pytest.raises(ConfigException, match="^Invalid url in bootstrap.servers: nohostport$"):
        StreamsConfig({"bootstrap.servers": "nohostport"}).clientConfigs("admin")
    with pytest.raises(ConfigException, match="^Invalid port in bootstrap.servers: h:70000$"):
        StreamsConfig({"bootstrap.servers": "h:70000"}).clientConfigs("producer")
    with pytest.raises(ConfigException, match="^Configuration 'bootstrap.servers' values must not be empty.$"):
        StreamsConfig({"bootstrap.servers": "a:1,,b:2"})


def test_spark_master():
    for good in ("local", "local[2]", "local[*]", "local[4, 2]", "local-cluster[2,1,1024]", "spark://h:7077", "yarn"):
        StreamsConfig({"kspark.spark.master": good})
    with invalid("locl[2]", "kspark.spark.master", "Could not parse Master URL: 'locl[2]'"):
        StreamsConfig({"kspark.spark.master": "locl[2]"})
    with invalid("local[0]", "kspark.spark.master", "Asked to run locally with 0 threads"):
        StreamsConfig({"kspark.spark.master": "local[0]"})


# ------------------------------------------------------------------ 5. unknown keys
@pytest.mark.parametrize("key, message", [
    ("commit.interval.msx", "Unknown configuration 'commit.interval.msx'. Did you mean 'commit.interval.ms'?"),
    ("num.streams.threads", "Unknown configuration 'num.streams.threads'. Did you mean 'num.stream.threads'?"),
    ("kspark.trigers", "Unknown configuration 'kspark.trigers'. Did you mean 'kspark.trigger'?"),
    ("consumer.max.pol.records", "Unknown configuration 'consumer.max.pol.records': 'max.pol.records' is not a "
                                 "consumer config. Did you mean 'max.poll.records'?"),
    ("topic.segment.byte", "Unknown configuration 'topic.segment.byte': 'segment.byte' is not a topic config. "
                           "Did you mean 'segment.bytes'?"),
    ("consumer.key.deserializer", "Unknown configuration 'consumer.key.deserializer': Kafka Streams' clients always "
                                  "use byte-array (de)serializers"),
    ("totally.unknown", "Unknown configuration 'totally.unknown'."),
])
def test_unknown_keys_with_did_you_mean(key, message):
    with pytest.raises(ConfigException) as e:
        StreamsConfig({key: "1"})
    assert str(e.value) == message


def test_unknown_spark_key_is_a_warning_with_did_you_mean(caplog):
    config = StreamsConfig({"spark.sql.shufle.partitions": "4"})
    assert config.sparkConfs() == {"spark.sql.shufle.partitions": "4"}
    assert warnings(caplog) == ["Spark does not know the configuration 'spark.sql.shufle.partitions' (it may belong "
                                "to a library on Spark's class path); Spark ignores keys it does not know. Did you "
                                "mean 'spark.sql.shuffle.partitions'?"]


def test_spark_keys_spark_knows_or_takes_by_prefix_do_not_warn(caplog):
    StreamsConfig({"spark.sql.shuffle.partitions": 4, "spark.master": "local", "spark.app.name": "x",
                   "spark.local.dir": "/tmp", "spark.driver.extraJavaOptions": "-Xss4m",
                   "spark.hadoop.fs.s3a.endpoint": "e", "spark.executorEnv.FOO": "1",
                   "spark.sql.catalog.mycat": "com.Example", "spark.sql.catalog.mycat.uri": "u",
                   "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
                   "spark.executor.resource.gpu.amount": "1", "spark.kubernetes.driver.label.team": "t"})
    assert warnings(caplog) == []


# ------------------------------------------------------------------ 6. a second KafkaStreams in the process
class FakeConf:
    """RuntimeConfig of a running session: ``spark.sql.*`` modifiable, the rest static."""

    def __init__(self, values):
        self.values = dict(values)

    def get(self, key, default=None):
        return self.values.get(key, default)

    def isModifiable(self, key):
        return key.startswith("spark.sql.") and not key.startswith("spark.sql.warehouse")

    def set(self, key, value):
        self.values[key] = value


def fakeSession(master="local[2]", **values):
    return SimpleNamespace(sparkContext=SimpleNamespace(master=master), conf=FakeConf(values))


def test_session_conflict_master_is_an_error():
    from kspark.spark._session import checkSessionConflicts

    with invalid("local[4]", "kspark.spark.master", "this process already runs a SparkSession on master local[2], "
                                                    "which every KafkaStreams of the process shares"):
        checkSessionConflicts(fakeSession(), StreamsConfig({"kspark.spark.master": "local[4]"}))
    checkSessionConflicts(fakeSession(), StreamsConfig({"kspark.spark.master": "local[2]"}))
    checkSessionConflicts(fakeSession(), StreamsConfig())  # the default local[*] was not asked for


def test_session_conflict_sets_runtime_confs_and_warns_for_static_ones(caplog):
    from kspark.spark._session import checkSessionConflicts

    session = fakeSession(**{"spark.sql.shuffle.partitions": "200", "spark.executor.memory": "1g",
                             "spark.ui.enabled": "false"})
    checkSessionConflicts(session, StreamsConfig({"spark.sql.shuffle.partitions": 7, "spark.executor.memory": "2g",
                                                  "spark.ui.enabled": False, "spark.driver.memory": "3g"}))
    assert session.conf.values["spark.sql.shuffle.partitions"] == "7"
    assert session.conf.values["spark.executor.memory"] == "1g"
    assert warnings(caplog) == [
        "This process already runs a SparkSession; these keys cannot change at runtime and keep the running "
        "session's values: spark.executor.memory=2g (running: 1g), spark.driver.memory=3g (running: None). Stop the "
        "session first to apply them."]


# ------------------------------------------------------------------ 7. client configs for the Kafka backend
KAFKA = {"application.id": "app", "bootstrap.servers": "b1:9092,b2:9092", "security.protocol": "SASL_SSL",
         "sasl.mechanism": "PLAIN", "client.id": "cid", "consumer.max.poll.records": "500",
         "main.consumer.max.poll.records": 700, "global.consumer.fetch.min.bytes": 9, "producer.linger.ms": "5",
         "admin.request.timeout.ms": 1000, "max.poll.records": 300, "acks": "1", "num.stream.threads": 2,
         "topic.cleanup.policy": "compact"}
COMMON = {"bootstrap.servers": "b1:9092,b2:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
          "client.id": "cid"}


def test_client_configs_main_consumer():
    assert StreamsConfig(KAFKA).clientConfigs("consumer") == {
        **COMMON, "max.poll.records": "700", "auto.offset.reset": "earliest", "enable.auto.commit": "false",
        "group.protocol": "classic", "isolation.level": "read_committed", "group.id": "app",
        "allow.auto.create.topics": "false"}


def test_client_configs_global_consumer():
    assert StreamsConfig(KAFKA).clientConfigs("global.consumer") == {
        **COMMON, "max.poll.records": "500", "fetch.min.bytes": "9", "auto.offset.reset": "none",
        "enable.auto.commit": "false", "group.protocol": "classic", "isolation.level": "read_committed"}


def test_client_configs_producer_and_admin():
    config = StreamsConfig(KAFKA)
    assert config.clientConfigs("producer") == {**COMMON, "linger.ms": "5", "acks": "1"}
    assert config.clientConfigs("admin") == {**COMMON, "enable.metrics.push": "true", "request.timeout.ms": "1000"}
    assert config.topicConfigs() == {"cleanup.policy": "compact"}
    with pytest.raises(ValueError, match="kind must be one of"):
        config.clientConfigs("restore.consumer")


def test_client_configs_isolation_level_and_offsets_overridable_under_at_least_once():
    config = StreamsConfig({**KAFKA, "consumer.isolation.level": "read_uncommitted", "auto.offset.reset": "latest"})
    consumer = config.clientConfigs("consumer")
    assert consumer["isolation.level"] == "read_uncommitted" and consumer["auto.offset.reset"] == "latest"


def test_client_configs_exactly_once_forces_kafkas_settings(caplog):
    config = StreamsConfig({**KAFKA, "processing.guarantee": "exactly_once_v2",
                            "consumer.isolation.level": "read_uncommitted", "enable.auto.commit": "true",
                            "producer.transactional.id": "mine"})
    consumer = config.clientConfigs("consumer")
    assert consumer["isolation.level"] == "read_committed" and consumer["enable.auto.commit"] == "false"
    producer = config.clientConfigs("producer")
    assert "transactional.id" not in producer
    assert {k: producer[k] for k in ("enable.idempotence", "delivery.timeout.ms", "transaction.timeout.ms")} == {
        "enable.idempotence": "true", "delivery.timeout.ms": "2147483647", "transaction.timeout.ms": "10000"}
    messages = [r.getMessage() for r in caplog.records if r.name == "kspark.config"]
    assert ("Unexpected user-specified consumer config 'enable.auto.commit' found. User setting (true) will be "
            "ignored and the Streams default setting (false) will be used.") in messages
    with invalid(6, "max.in.flight.requests.per.connection", "Can't exceed 5 when exactly-once processing is enabled"):
        StreamsConfig({**KAFKA, "processing.guarantee": "exactly_once_v2",
                       "producer.max.in.flight.requests.per.connection": 6})


def test_client_configs_without_kafka_have_no_bootstrap_servers():
    assert "bootstrap.servers" not in StreamsConfig({"application.id": "a"}).clientConfigs("admin")


# ------------------------------------------------------------------ StreamsConfig travels to executors
def test_config_pickles_with_resolved_objects():
    import pickle

    config = pickle.loads(pickle.dumps(StreamsConfig({
        "default.value.serde": "Serdes.Long", "deserialization.exception.handler": "LogAndContinueExceptionHandler"})))
    assert config.defaultValueSerde() == Serdes.Long()
    assert type(config.deserializationExceptionHandler()) is LogAndContinueExceptionHandler


def test_secret_values_are_hidden_in_errors_and_log_lines(caplog, monkeypatch, capsys):
    """Issue 37 item 4: values of Kafka's PASSWORD-type keys show as [hidden], as Kafka's
    Password.toString() does: an invalid ssl.key.password was echoed in the ConfigException,
    and the INFO line of a key without effect printed sasl.jaas.config whole."""
    import io

    from kspark import _secrets
    from kspark.spark import _quiet

    with pytest.raises(ConfigException) as invalid:
        StreamsConfig({"application.id": "a", "ssl.key.password": 73_311_337})
    assert str(invalid.value) == ("Invalid value [hidden] for configuration ssl.key.password: "
                                  "Expected value to be a string, but it was a int")
    assert "73311337" not in str(invalid.value)
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
            'password="alice-S3cret-pw";')
    with caplog.at_level(logging.DEBUG):
        StreamsConfig({"application.id": "a", "sasl.jaas.config": jaas, "producer.ssl.keystore.password": "ks-S3cret"})
        assert "Configuration sasl.jaas.config=[hidden] has no effect" in caplog.text
        assert "Configuration producer.ssl.keystore.password=[hidden] has no effect" in caplog.text
        # any log line of the process, whoever logs it, and its traceback
        try:
            raise RuntimeError("login failed for password alice-S3cret-pw")
        except RuntimeError:
            logging.getLogger("some.library").exception("with %s", "ks-S3cret")
    assert "with [hidden]" in caplog.text and "login failed for password [hidden]" in caplog.text
    for secret in ("alice-S3cret-pw", "ks-S3cret", "73311337"):
        assert secret not in caplog.text
    # the JVM's stderr and the run's failure text
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    _quiet._pump(io.BytesIO(b"26/11/26 18:00:00 WARN NetworkClient: jaas password=alice-S3cret-pw\n"))
    assert err.getvalue() == "26/11/26 18:00:00 WARN NetworkClient: jaas password=[hidden]\n"
    assert _secrets.redact(f"sasl.jaas.config={jaas}") == "sasl.jaas.config=[hidden]"
    assert _secrets.isSecretKey("main.consumer.ssl.truststore.password") and not _secrets.isSecretKey("client.id")
