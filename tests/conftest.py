"""Fixtures shared by every tier."""

import pytest


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for all Spark tests (starting one costs ~6 s)."""
    from kspark.config import StreamsConfig
    from kspark.spark._session import getOrCreateSession

    session = getOrCreateSession(StreamsConfig({"kspark.spark.master": "local[2]", "application.id": "kspark-tests"}))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafkaBroker(tmp_path_factory):
    """A real Kafka 4.x broker (KRaft) on 127.0.0.1, for the whole session (``make jvm`` resolves
    its jars; a missing jar fails the test, it is never skipped)."""
    from kspark.testing import KafkaBroker

    # the log cleaner looks for work every 0.5 s, not 15 s (the compacted-topic test); a killed
    # run's group member may time out after 1.5 s, not Kafka's minimum 6 s (the crash tests)
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka"), config={"log.cleaner.backoff.ms": "500",
                                                                   "group.min.session.timeout.ms": "1000"})
    broker.start()
    yield broker
    broker.close()


@pytest.fixture(scope="session")
def schemaRegistry(tmp_path_factory):
    """A real schema registry (Apicurio Registry, in-memory storage, Confluent's API) on 127.0.0.1
    for the whole session (``make jvm`` builds it; missing, the test fails, it is never skipped).
    Its schemas live as long as the session: tests use their own topic names (subjects)."""
    from kspark.testing import SchemaRegistry

    registry = SchemaRegistry(tmp_path_factory.mktemp("registry"))
    registry.start()
    yield registry
    registry.close()


def pytest_collection_modifyitems(items):
    for item in items:
        if any(tier in str(item.fspath) for tier in ("tests/spark/", "tests/kafka/", "tests/cluster/")):
            item.add_marker(pytest.mark.spark)
