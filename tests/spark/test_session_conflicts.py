"""A second KafkaStreams config in a process that already runs a SparkSession (issue 22 item 5):
another master is an error, runtime SQL confs are set, static ones named in a WARNING. A master
Spark cannot start with names the key and Spark's reason."""

import logging
import os
import subprocess
import sys

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


def test_master_spark_cannot_start_with_names_the_key_and_spark_reason(tmp_path):
    """Issue 22: a bad kspark.spark.master gave JAVA_GATEWAY_EXITED, the reason only on stderr."""
    script = ("from kspark import KafkaStreams, StreamsBuilder\n"
              "b = StreamsBuilder(); b.stream('in').to('out')\n"
              "from kspark.topics import LocalTopics\n"
              f"t = LocalTopics({str(tmp_path / 'topics')!r}); t.createTopic('in', 1); t.createTopic('out', 1)\n"
              f"KafkaStreams(b.build(), {{'application.id': 'm', 'kspark.topics.dir': {str(tmp_path / 'topics')!r}, "
              f"'state.dir': {str(tmp_path / 'state')!r}, 'kspark.spark.master': 'yarn'}}).start()\n")
    env = {k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()
    error = last[last.index(next(line for line in last if line.startswith("kspark.errors.ConfigException"))):]
    assert error[0].startswith("kspark.errors.ConfigException: Invalid value yarn for configuration kspark.spark.master: "
                               "Spark did not start (PySparkRuntimeError: [JAVA_GATEWAY_EXITED]")
    assert error[1:] == ["Exception in thread \"main\" org.apache.spark.SparkException: When running with master 'yarn' "
                         "either HADOOP_CONF_DIR or YARN_CONF_DIR must be set in the environment."]
