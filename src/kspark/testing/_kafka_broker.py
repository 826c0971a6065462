"""A real Apache Kafka broker on 127.0.0.1 for tests, the Kafka demo and the benchmarks.

One JVM runs Kafka 4.x in KRaft mode as broker and controller (``process.roles=broker,controller``),
from the jars ``make jvm`` resolves (``jvm/pom.xml``). No Docker, no ZooKeeper.
"""

from __future__ import annotations

import base64
import os
import subprocess
import uuid
from pathlib import Path

from ._jvm import javaExecutable, jvmClasspath
from ._jvm_server import JvmServer, freePort

__all__ = ["KafkaBroker"]


def _clusterId() -> str:
    """A cluster id as Kafka's ``Uuid.randomUuid().toString()`` makes it (URL-safe base64, 22 chars,
    never starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


class KafkaBroker(JvmServer):
    """A single-node Kafka broker (KRaft, combined broker and controller) on 127.0.0.1.

    ``start()`` formats the log directory on first use and waits until the broker answers a
    metadata request; ``stop()`` shuts it down (SIGTERM, then SIGKILL after ``stopTimeout``);
    ``start()`` again brings it back on the same port with the same logs (a broker outage).
    Also a context manager (start on enter, stop on exit).

    Topics are not created automatically (``auto.create.topics.enable=false``, as a Kafka
    Streams deployment expects), records are never deleted by age (``log.retention.ms=-1``:
    test data carries old timestamps); the internal topics (``__consumer_offsets``,
    ``__transaction_state``) have one replica and few partitions, so transactions and
    consumer-group offsets work on one broker.

    Parameters
    ----------
    logDir : str or os.PathLike, optional
        Where the broker keeps its logs and ``broker.log``; a new temporary directory if None.
    port : int, optional
        The client port; a free one if None (the controller gets another free port).
    heapMb : int, default 512
        The JVM's maximum heap (``-Xmx``), in MiB.
    config : dict, optional
        More broker settings (``server.properties`` keys), overriding the defaults: e.g.
        ``listeners``, ``advertised.listeners`` and ``listener.security.protocol.map`` for a
        secured broker whose ``port`` listener is ``SASL_PLAINTEXT`` or ``SSL`` (the
        ``CONTROLLER`` listener, ``PLAINTEXT`` on ``controllerPort``, is added to them).
    clientConfig : dict, optional
        The client settings (librdkafka keys: ``security.protocol``, ``sasl.*``, ``ssl.*``) that
        the listener on ``port`` requires; ``start()`` checks the broker with them.
    scramCredentials : dict of str to str, optional
        SCRAM-SHA-512 users (name -> password) written into the metadata when the log directory
        is formatted (``kafka-storage format --add-scram``, KIP-900): the users a secured broker
        needs before it runs, such as its own inter-broker user.

    Raises
    ------
    kspark.testing.JvmArtifactsMissing
        From ``start()``, if ``make jvm`` has not resolved the Kafka jars, or there is no java.
    RuntimeError
        From ``start()``, if the broker exits or does not answer within ``timeout`` seconds
        (with the end of its log).
    """

    title = "The Kafka broker"

    def __init__(self, logDir: str | os.PathLike | None = None, port: int | None = None, heapMb: int = 512,
                 config: dict[str, str] | None = None, clientConfig: dict[str, str] | None = None,
                 scramCredentials: dict[str, str] | None = None) -> None:
        super().__init__(logDir, port, heapMb, "kspark-kafka-")
        self.controllerPort = freePort()
        self._extra = dict(config or {})
        self.clientConfig = dict(clientConfig or {})
        self._scram = dict(scramCredentials or {})

    @property
    def bootstrapServers(self) -> str:
        """``127.0.0.1:<port>``: the value of ``bootstrap.servers``."""
        return f"127.0.0.1:{self.port}"

    def _properties(self) -> Path:
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controllerPort}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controllerPort}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.logDir / "data"),
            "auto.create.topics.enable": "false",
            # keep every record: test and demo data carry event times months or years old, which
            # the default 7-day retention (by record timestamp) would delete
            "log.retention.ms": "-1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "5",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "5",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **self._extra,
        }
        if "CONTROLLER://" not in settings["listeners"]:  # listeners given in config: the controller's is added
            settings["listeners"] += f",CONTROLLER://127.0.0.1:{self.controllerPort}"
        if "CONTROLLER:" not in settings["listener.security.protocol.map"]:
            settings["listener.security.protocol.map"] += ",CONTROLLER:PLAINTEXT"
        path = self.logDir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return path

    def start(self, timeout: float = 60.0) -> "KafkaBroker":
        """Start the broker (formatting its log directory the first time) and wait until it serves
        metadata. Returns self."""
        if self.pid is not None:
            return self
        classpath, java = jvmClasspath(), javaExecutable()
        self.logDir.mkdir(parents=True, exist_ok=True)
        properties = self._properties()
        log = self.logDir / "broker.log"
        jvm = [java, f"-Xmx{self.heapMb}m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath]
        if not (self.logDir / "data" / "meta.properties").exists():
            scram = [a for name, password in self._scram.items()
                     for a in ("--add-scram", f"SCRAM-SHA-512=[name={name},password={password}]")]
            formatted = subprocess.run(
                [*jvm, "kafka.tools.StorageTool", "format", "-t", _clusterId(), "-c", str(properties), *scram],
                capture_output=True, text=True, timeout=timeout,
            )
            if formatted.returncode != 0:
                raise RuntimeError(f"Formatting the Kafka log directory failed:\n{formatted.stdout}{formatted.stderr}")
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({**self.clientConfig, "bootstrap.servers": self.bootstrapServers, "log_level": 0})
        self._launch([*jvm, "kafka.Kafka", str(properties)], log, lambda: bool(admin.list_topics(timeout=1).brokers),
                     timeout)
        return self
