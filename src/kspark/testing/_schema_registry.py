"""A real schema registry on 127.0.0.1 for tests and the Avro demo: Apicurio Registry with
in-memory storage, serving Confluent's Schema Registry API at ``/apis/ccompat/v7``.

``make jvm`` builds it from Maven Central's artifacts (``jvm/registry/pom.xml``) into
``$KSPARK_REGISTRY_DIR`` (default ``~/.cache/kspark/registry``). No Docker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from ._jvm import JvmArtifactsMissing, javaExecutable
from ._kafka_broker import _freePort, _tail

__all__ = ["SchemaRegistry", "registryDir"]


def registryDir() -> Path:
    """``$KSPARK_REGISTRY_DIR``, else ``~/.cache/kspark/registry`` (the Makefile's default)."""
    configured = os.environ.get("KSPARK_REGISTRY_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "kspark" / "registry"


class SchemaRegistry:
    """Apicurio Registry (2.4.2.Final, in-memory H2 storage) on 127.0.0.1: Confluent's REST API at
    :attr:`url`, which confluent-kafka's ``SchemaRegistryClient`` and kspark's serdes take as
    ``schema.registry.url``. Its compatibility rules, schema ids and errors are the registry's
    own (e.g. a 409 naming the subject for an incompatible schema, a 404 with error code 40403
    for an unknown id). Its content lives as long as the process.

    ``start()`` waits until the API answers; ``stop()`` shuts it down (SIGTERM, then SIGKILL
    after ``stopTimeout``). Also a context manager.

    Parameters
    ----------
    logDir : str or os.PathLike, optional
        Where ``registry.log`` goes; a new temporary directory if None.
    port : int, optional
        The HTTP port; a free one if None.
    heapMb : int, default 256
        The JVM's maximum heap (``-Xmx``), in MiB.

    Raises
    ------
    kspark.testing.JvmArtifactsMissing
        From ``start()``, if ``make jvm`` has not built the registry, or there is no java.
    RuntimeError
        From ``start()``, if the registry exits or does not answer within ``timeout`` seconds
        (with the end of its log).
    """

    def __init__(self, logDir: str | os.PathLike | None = None, port: int | None = None, heapMb: int = 256) -> None:
        self._ownsDir = logDir is None
        self.logDir = Path(logDir) if logDir is not None else Path(tempfile.mkdtemp(prefix="kspark-registry-"))
        self.port = port or _freePort()
        self.heapMb = heapMb
        self._process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>/apis/ccompat/v7``: the value of ``schema.registry.url``."""
        return f"http://127.0.0.1:{self.port}/apis/ccompat/v7"

    @property
    def pid(self) -> int | None:
        """The registry JVM's process id while it runs."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def start(self, timeout: float = 90.0) -> "SchemaRegistry":
        """Start the registry and wait until its API answers. Returns self."""
        if self.pid is not None:
            return self
        runner = registryDir() / "target" / "apicurio-registry-runner.jar"
        if not runner.is_file():
            raise JvmArtifactsMissing(
                f"No schema registry at {runner} (KSPARK_REGISTRY_DIR): run `make jvm` in the kspark repository, "
                "which builds jvm/registry/pom.xml with Maven into that directory.")
        java = javaExecutable()
        self.logDir.mkdir(parents=True, exist_ok=True)
        log = self.logDir / "registry.log"
        command = [java, f"-Xmx{self.heapMb}m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   "-Dquarkus.http.host=127.0.0.1", f"-Dquarkus.http.port={self.port}",
                   "-Dquarkus.log.level=WARN", "-D%prod.quarkus.datasource.jdbc.min-size=1", "-jar", str(runner)]
        with open(log, "ab") as out:
            self._process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True, cwd=self.logDir)
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"The schema registry exited with code {self._process.returncode}:\n{_tail(log)}")
            try:
                with urllib.request.urlopen(f"{self.url}/subjects", timeout=1) as response:
                    if response.status == 200:
                        return self
            except (OSError, urllib.error.URLError):  # not up yet
                pass
            if time.monotonic() > deadline:
                self.stop(0)
                raise RuntimeError(f"The schema registry did not answer within {timeout:.0f} s:\n{_tail(log)}")
            time.sleep(0.2)

    def requestCount(self, method: str | None = None, path: str | None = None) -> int:
        """How many requests the registry has answered (any status), from its own metrics
        (``/metrics``, ``rest_requests_seconds_count``): for ``method`` on the Confluent API path
        template ``path`` (e.g. ``"GET", "/schemas/ids/{id}"``), or every method/path if None."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as response:
            text = response.read().decode()
        wanted = ([f'method="{method}"'] if method else []) + ([f'path="/apis/ccompat/v7{path}"'] if path else [])
        return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith("rest_requests_seconds_count{") and all(w in line for w in wanted)))

    def stop(self, stopTimeout: float = 30.0) -> None:
        """Shut the registry down (SIGTERM; SIGKILL after ``stopTimeout`` seconds). Its schemas are gone."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(stopTimeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def rssMb(self) -> float | None:
        """The registry JVM's resident memory in MiB (from /proc), while it runs."""
        pid = self.pid
        if pid is None:
            return None
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return None

    def close(self) -> None:
        """Stop the registry and delete its directory if this object created it."""
        self.stop()
        if self._ownsDir:
            import shutil

            shutil.rmtree(self.logDir, ignore_errors=True)

    def __enter__(self) -> "SchemaRegistry":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
