"""A real Apache Kafka broker on 127.0.0.1 for tests, the Kafka demo and the benchmarks.

One JVM runs Kafka 4.x in KRaft mode as broker and controller (``process.roles=broker,controller``),
from the jars ``make jvm`` resolves (``jvm/pom.xml``). No Docker, no ZooKeeper.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from ._jvm import javaExecutable, jvmClasspath

__all__ = ["KafkaBroker"]


def _freePort() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _clusterId() -> str:
    """A cluster id as Kafka's ``Uuid.randomUuid().toString()`` makes it (URL-safe base64, 22 chars,
    never starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


class KafkaBroker:
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

    def __init__(self, logDir: str | os.PathLike | None = None, port: int | None = None, heapMb: int = 512,
                 config: dict[str, str] | None = None, clientConfig: dict[str, str] | None = None,
                 scramCredentials: dict[str, str] | None = None) -> None:
        self._ownsDir = logDir is None
        self.logDir = Path(logDir) if logDir is not None else Path(tempfile.mkdtemp(prefix="kspark-kafka-"))
        self.port = port or _freePort()
        self.controllerPort = _freePort()
        self.heapMb = heapMb
        self._extra = dict(config or {})
        self.clientConfig = dict(clientConfig or {})
        self._scram = dict(scramCredentials or {})
        self._process: subprocess.Popen | None = None

    @property
    def bootstrapServers(self) -> str:
        """``127.0.0.1:<port>``: the value of ``bootstrap.servers``."""
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """The broker JVM's process id while it runs."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

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
        with open(log, "ab") as out:
            self._process = subprocess.Popen([*jvm, "kafka.Kafka", str(properties)], stdout=out, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True)
        self._awaitReady(timeout, log)
        return self

    def _awaitReady(self, timeout: float, log: Path) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        admin = AdminClient({**self.clientConfig, "bootstrap.servers": self.bootstrapServers, "log_level": 0})
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"The Kafka broker exited with code {self._process.returncode}:\n{_tail(log)}")
            try:
                if admin.list_topics(timeout=1).brokers:
                    return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"The Kafka broker did not answer within {timeout:.0f} s:\n{_tail(log)}")
            time.sleep(0.2)

    def stop(self, stopTimeout: float = 30.0) -> None:
        """Shut the broker down (SIGTERM; SIGKILL after ``stopTimeout`` seconds). Its logs stay."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(stopTimeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def kill(self) -> None:
        """Kill the broker at once (SIGKILL), as a crash would."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def rssMb(self) -> float | None:
        """The broker JVM's resident memory in MiB (from /proc), while it runs."""
        pid = self.pid
        if pid is None:
            return None
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return None

    def close(self) -> None:
        """Stop the broker and delete its directory if this object created it."""
        self.stop()
        if self._ownsDir:
            import shutil

            shutil.rmtree(self.logDir, ignore_errors=True)

    def __enter__(self) -> "KafkaBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"
