"""Fixtures shared by every tier."""

import pytest


@pytest.fixture(scope="session")
def kafkaBroker(tmp_path_factory):
    """A real Kafka 4.x broker (KRaft) on 127.0.0.1, for the whole session (``make jvm`` resolves
    its jars; a missing jar fails the test, it is never skipped)."""
    from kspark.testing import KafkaBroker

    # the log cleaner looks for work every 0.5 s, not 15 s (the compacted-topic test)
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka"), config={"log.cleaner.backoff.ms": "500"})
    broker.start()
    yield broker
    broker.close()
