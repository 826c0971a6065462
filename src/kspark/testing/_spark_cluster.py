"""A Spark standalone cluster on 127.0.0.1 for tests and ``make cluster``: one master and
workers started with pyspark's own ``sbin/spark-daemon.sh`` (``SPARK_HOME`` = the installed
pyspark package, which ships no ``start-master.sh``/``start-worker.sh``).

``make cluster`` starts one (:func:`main` ``start DIR``) and prints its master URL; ``make
cluster-stop`` (``stop DIR``) stops the one whose files are in ``DIR``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from ._jvm_server import freePort

__all__ = ["SparkStandaloneCluster"]

_MASTER = "org.apache.spark.deploy.master.Master"
_WORKER = "org.apache.spark.deploy.worker.Worker"


def _sparkHome() -> Path:
    """The installed pyspark package's directory (found without importing pyspark, which only
    kspark.spark does)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pyspark is not installed: the Spark cluster runs from its package")
    return Path(spec.submodule_search_locations[0]).resolve()


class SparkStandaloneCluster:
    """A Spark standalone cluster on 127.0.0.1: one master and ``workers`` workers.

    Every daemon and executor binds to 127.0.0.1 (``SPARK_LOCAL_IP``), the web UIs included,
    on free ports. Pid files, logs (``logs/``), the workers' directories (``work/``: executors'
    stdout/stderr) and the master's address (``cluster.json``) are kept in ``clusterDir``,
    so clusters of different users or test sessions never share a pid file.

    Parameters
    ----------
    clusterDir : str or os.PathLike, optional
        The cluster's files; a new temporary directory if None (deleted by ``close()``).
    workers : int, default 2
    coresPerWorker : int, default 1
    workerMemoryMb : int, default 2048
        What each worker offers to executors, in MiB. Spark's default executor (1 GiB heap)
        fits; the daemons themselves run with ``daemonMemoryMb`` heaps.
    daemonMemoryMb : int, default 512
        Heap of the master and worker JVMs (``SPARK_DAEMON_MEMORY``), in MiB.

    Raises
    ------
    RuntimeError
        From ``start()``, if a daemon exits or the workers do not register within ``timeout``
        seconds (with the end of the daemons' logs).
    """

    def __init__(self, clusterDir: str | os.PathLike | None = None, workers: int = 2, coresPerWorker: int = 1,
                 workerMemoryMb: int = 2048, daemonMemoryMb: int = 512) -> None:
        self._ownsDir = clusterDir is None
        self.clusterDir = Path(clusterDir or tempfile.mkdtemp(prefix="kspark-spark-cluster-")).resolve()
        self.workers = workers
        self.coresPerWorker = coresPerWorker
        self.workerMemoryMb = workerMemoryMb
        self.daemonMemoryMb = daemonMemoryMb
        self.port: int | None = None
        self.webUiPort: int | None = None
        saved = self.clusterDir / "cluster.json"
        if saved.exists():  # a cluster started earlier (make cluster), to stop or to use
            info = json.loads(saved.read_text())
            self.port, self.webUiPort, self.workers = info["port"], info["webUiPort"], info["workers"]

    @property
    def masterUrl(self) -> str:
        """``spark://127.0.0.1:<port>``: the value of ``kspark.spark.master``."""
        return f"spark://127.0.0.1:{self.port}"

    def environment(self) -> dict[str, str]:
        """The environment of the daemons (and of ``spark-submit`` against this cluster)."""
        return {
            **os.environ,
            "SPARK_HOME": str(_sparkHome()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_CONF_DIR": str(self.clusterDir / "conf"),
            "SPARK_LOG_DIR": str(self.clusterDir / "logs"),
            "SPARK_PID_DIR": str(self.clusterDir / "pids"),
            "SPARK_WORKER_DIR": str(self.clusterDir / "work"),
            "SPARK_IDENT_STRING": "kspark",
            "SPARK_DAEMON_MEMORY": f"{self.daemonMemoryMb}m",
        }

    def _daemon(self, action: str, cls: str, instance: int, *args: str) -> subprocess.Popen:
        script = _sparkHome() / "sbin" / "spark-daemon.sh"
        return subprocess.Popen(["bash", str(script), action, cls, str(instance), *args], env=self.environment(),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)

    def start(self, timeout: float = 60.0) -> "SparkStandaloneCluster":
        """Start the master and the workers, and wait until every worker is registered and alive.
        Returns self."""
        if self.port is not None and self.pids():
            return self
        for sub in ("conf", "logs", "pids", "work"):
            (self.clusterDir / sub).mkdir(parents=True, exist_ok=True)
        # the master's REST submission server would take the fixed port 6066 (one per machine)
        (self.clusterDir / "conf" / "spark-defaults.conf").write_text("spark.master.rest.enabled false\n")
        self.port, self.webUiPort = freePort(), freePort()
        (self.clusterDir / "cluster.json").write_text(json.dumps(
            {"masterUrl": self.masterUrl, "port": self.port, "webUiPort": self.webUiPort, "workers": self.workers}))
        # spark-daemon.sh waits ~2.5 s after launching its JVM: start all daemons at once (a
        # worker retries until the master answers)
        launched = [self._daemon("start", _MASTER, 1, "--host", "127.0.0.1", "--port", str(self.port),
                                 "--webui-port", str(self.webUiPort))]
        launched += [self._launchWorker(i) for i in range(1, self.workers + 1)]
        try:
            self._awaitWorkers(launched, self.workers, timeout)
        except RuntimeError:
            self.stop()
            raise
        return self

    def _launchWorker(self, worker: int) -> subprocess.Popen:
        return self._daemon("start", _WORKER, worker, "--host", "127.0.0.1", "--webui-port", str(freePort()),
                            "--cores", str(self.coresPerWorker), "--memory", f"{self.workerMemoryMb}m",
                            "--work-dir", str(self.clusterDir / "work" / f"worker-{worker}"), self.masterUrl)

    def _awaitWorkers(self, launched: list[subprocess.Popen], alive: int, timeout: float) -> None:
        outputs = [p.communicate()[0].decode(errors="replace") for p in launched]
        if any(p.returncode != 0 or "failed to launch" in out for p, out in zip(launched, outputs)):
            raise RuntimeError("A Spark daemon did not start:\n" + "\n".join(outputs) + self._logTail())
        deadline = time.monotonic() + timeout
        while len(self.aliveWorkers()) < alive:
            if time.monotonic() > deadline or self._pid(_MASTER, 1) is None:
                raise RuntimeError(f"The Spark workers did not register with {self.masterUrl} within "
                                   f"{timeout:.0f} s:{self._logTail()}")
            time.sleep(0.2)

    def startWorker(self, worker: int, timeout: float = 60.0) -> None:
        """Start worker ``worker`` (1-based) again, e.g. after :meth:`killWorker`, and wait until
        the master counts it alive; nothing if it runs."""
        if self.workerPid(worker) is None:
            self._awaitWorkers([self._launchWorker(worker)], len(self.aliveWorkers()) + 1, timeout)

    def state(self) -> dict:
        """The master's JSON status (``/json`` of its web UI): workers, applications..."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webUiPort}/json/", timeout=5) as response:
            return json.load(response)

    def aliveWorkers(self) -> list[dict]:
        """The workers the master knows as ``ALIVE``; empty if the master does not answer."""
        try:
            return [w for w in self.state()["workers"] if w["state"] == "ALIVE"]
        except (OSError, ValueError, KeyError):
            return []

    def _pidFile(self, cls: str, instance: int) -> Path:
        return self.clusterDir / "pids" / f"spark-kspark-{cls}-{instance}.pid"

    def _pid(self, cls: str, instance: int) -> int | None:
        try:
            pid = int(self._pidFile(cls, instance).read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _isJava(pid) else None

    def workerPid(self, worker: int) -> int | None:
        """The JVM process id of worker ``worker`` (1-based) while it runs."""
        return self._pid(_WORKER, worker)

    def executorPids(self, worker: int) -> list[int]:
        """The executor JVMs worker ``worker`` launched (its child java processes)."""
        pid = self.workerPid(worker)
        return [] if pid is None else [c for c in _children(pid) if _isJava(c)]

    def pids(self) -> list[int]:
        """Every running daemon JVM of this cluster."""
        found = [self._pid(_MASTER, 1)] + [self._pid(_WORKER, i) for i in range(1, self.workers + 1)]
        return [p for p in found if p is not None]

    def killWorker(self, worker: int) -> list[int]:
        """SIGKILL worker ``worker`` and its executors at once, as a lost machine would.
        Returns the killed process ids (the worker's first)."""
        pid = self.workerPid(worker)
        if pid is None:
            return []
        victims = [pid, *self.executorPids(worker)]
        for p in victims:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return victims

    def stop(self, stopTimeout: float = 30.0) -> None:
        """Stop the workers (each stops its executors), then the master: spark-daemon.sh stop
        (SIGTERM), then SIGKILL whatever of them and their descendants is left after
        ``stopTimeout`` seconds."""
        daemons = [(_WORKER, i) for i in range(1, self.workers + 1)] + [(_MASTER, 1)]
        tree: list[int] = []
        for cls, instance in daemons:
            pid = self._pid(cls, instance)
            if pid is not None:
                tree += [pid, *_descendants(pid)]
        for p in [self._daemon("stop", cls, i) for cls, i in daemons]:
            p.communicate()
        deadline = time.monotonic() + stopTimeout
        while any(_alive(p) for p in tree) and time.monotonic() < deadline:
            time.sleep(0.1)
        for p in tree:
            if _alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for cls, instance in daemons:
            self._pidFile(cls, instance).unlink(missing_ok=True)

    def close(self) -> None:
        """Stop the cluster and delete its directory if this object created it."""
        self.stop()
        if self._ownsDir:
            shutil.rmtree(self.clusterDir, ignore_errors=True)

    def _logTail(self, lines: int = 20) -> str:
        out = []
        for log in sorted((self.clusterDir / "logs").glob("*.out")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"\n--- {log.name}\n" + "\n".join(text))
        return "".join(out)

    def __enter__(self) -> "SparkStandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def _isJava(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "java"
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _parents() -> dict[int, int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return parents


def _children(pid: int) -> list[int]:
    return sorted(p for p, parent in _parents().items() if parent == pid)


def _descendants(pid: int) -> list[int]:
    parents = _parents()
    found, frontier = [], [pid]
    while frontier:
        kids = [p for p, parent in parents.items() if parent in frontier]
        found += kids
        frontier = kids
    return found


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="make cluster",
                                     description="A Spark standalone cluster on 127.0.0.1 (make cluster)")
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("dir", type=Path, help="the cluster's pid files, logs and work directories")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1, help="cores per worker")
    parser.add_argument("--memory-mb", type=int, default=2048, help="memory per worker for executors, MiB")
    args = parser.parse_args(argv)
    cluster = SparkStandaloneCluster(args.dir, args.workers, args.cores, args.memory_mb)
    if args.action == "start":
        if cluster.pids():
            print(f"already running: {cluster.masterUrl} (stop it first)")
            return 1
        cluster.start()
        print(f"Spark standalone cluster up: master {cluster.masterUrl} (web UI http://127.0.0.1:{cluster.webUiPort}), "
              f"{cluster.workers} workers x {cluster.coresPerWorker} core, logs in {cluster.clusterDir / 'logs'}")
    elif args.action == "stop":
        cluster.stop()
        print("stopped")
    else:
        alive = cluster.aliveWorkers() if cluster.pids() else []
        print(f"{cluster.masterUrl}: {len(alive)} workers alive" if alive else "not running")
        return 0 if alive else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
