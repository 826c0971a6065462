"""A second KafkaStreams config in a process that already runs a SparkSession (issue 22 item 5):
another master is an error, runtime SQL confs are set, static ones named in a WARNING."""

import logging

import pytest

from kspark import ConfigException, StreamsConfig


def test_second_config_against_the_running_session(spark, caplog):
    from kspark.spark._session import getOrCreateSession

    with pytest.raises(ConfigException, match=r"^Invalid value local\[3\] for configuration kspark.spark.master: "
                                              r"this process already runs a SparkSession on master local\[2\]"):
        getOrCreateSession(StreamsConfig({"kspark.spark.master": "local[3]"}))
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        session = getOrCreateSession(StreamsConfig({"kspark.spark.master": "local[2]",
                                                    "spark.sql.shuffle.partitions": 7, "spark.executor.memory": "3g"}))
        assert session is spark
        assert spark.conf.get("spark.sql.shuffle.partitions") == "7"
        assert [r.getMessage() for r in caplog.records if r.name == "kspark.config" and r.levelno == logging.WARNING] == [
            "This process already runs a SparkSession; these keys cannot change at runtime and keep the running "
            "session's values: spark.executor.memory=3g (running: None). Stop the session first to apply them."]
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
