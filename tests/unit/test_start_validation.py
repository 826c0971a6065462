"""KafkaStreams.start() refuses bad setups before any record is processed (issue 8; rules J-6, RP-5).

These checks run before Spark starts, so no SparkSession is needed here; the checks against the
checkpoint in state.dir (read through Spark's filesystem API) are in tests/spark/test_state_dir.py."""

import pytest

from kspark import ConfigException, KafkaStreams, StreamsBuilder, StreamsException
from kspark.topics import LocalTopics


def topology(withFilter=False):
    b = StreamsBuilder()
    s = b.stream("in")
    if withFilter:
        s = s.filter(lambda k, v: True)
    s.to("out")
    return b.build()


def props(tmp_path, **extra):
    return {"application.id": "app", "kspark.topics.dir": str(tmp_path / "topics"),
            "state.dir": str(tmp_path / "state"), **extra}


@pytest.fixture
def topics(tmp_path):
    t = LocalTopics(tmp_path / "topics")
    t.createTopic("in", 2)
    t.createTopic("out", 2)
    return t


def test_missing_application_id_is_a_config_exception():
    with pytest.raises(ConfigException, match='Missing required configuration "application.id"'):
        KafkaStreams(topology(), {})


def test_unknown_source_and_sink_topics(tmp_path):
    with pytest.raises(StreamsException, match=r"^Missing source topics. \[in\]$"):
        KafkaStreams(topology(), props(tmp_path)).start()
    LocalTopics(tmp_path / "topics").createTopic("in", 1)
    with pytest.raises(StreamsException, match=r"Sink topics do not exist: \['out'\]"):
        KafkaStreams(topology(), props(tmp_path)).start()


def test_missing_dead_letter_topic(tmp_path, topics):
    with pytest.raises(StreamsException, match="The dead-letter topic dlq .* does not exist"):
        KafkaStreams(topology(), props(tmp_path, **{"errors.deadletterqueue.topic.name": "dlq"})).start()
