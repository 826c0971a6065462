"""One SparkSession for all Spark tests (starting one costs ~6 s)."""

import pytest


@pytest.fixture(scope="session")
def spark():
    from kspark.config import StreamsConfig
    from kspark.spark._session import getOrCreateSession

    session = getOrCreateSession(StreamsConfig({"kspark.spark.master": "local[2]", "application.id": "kspark-tests"}))
    yield session
    session.stop()


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/spark/" in str(item.fspath):
            item.add_marker(pytest.mark.spark)
