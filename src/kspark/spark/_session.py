"""The SparkSession kspark runs on: made once, configured for the task-per-group host."""

from __future__ import annotations

import os
import sys

from ..config import StreamsConfig


def getOrCreateSession(config: StreamsConfig):
    """Return the active SparkSession or create one with ``kspark.spark.master`` and ``spark.*`` keys.

    Python workers use this interpreter (``PYSPARK_PYTHON`` unless set), so they see the same
    packages; state uses the RocksDB provider with changelog checkpointing.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = (
        SparkSession.builder.master(config.get(StreamsConfig.SPARK_MASTER_CONFIG))
        .appName(config.get(StreamsConfig.APPLICATION_ID_CONFIG) or "kspark")
        .config("spark.sql.streaming.stateStore.providerClass",
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.enabled", "false")
    )
    for key, value in config.sparkConfs().items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
