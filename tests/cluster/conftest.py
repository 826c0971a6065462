"""The Spark standalone cluster of tests/cluster (issue 21)."""

import pytest


@pytest.fixture(scope="session")
def _sparkClusterSession(tmp_path_factory):
    """One master and two workers with 1 core each on 127.0.0.1 (pyspark's sbin/spark-daemon.sh,
    SPARK_HOME = the pyspark package), for the whole session; stopped at its end whatever the
    tests did. Its logs and the executors' stderr stay in the session's temporary directory."""
    from kspark.testing import SparkStandaloneCluster

    cluster = SparkStandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2, coresPerWorker=1)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def sparkCluster(_sparkClusterSession):
    """The session's cluster with every worker running: a worker a previous test killed is started
    again here, when a test needs the cluster, not at the end of the test that killed it (a worker
    JVM's start-up and registration, paid only if another cluster test follows)."""
    for worker in range(1, _sparkClusterSession.workers + 1):
        _sparkClusterSession.startWorker(worker)
    return _sparkClusterSession
