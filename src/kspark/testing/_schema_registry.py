"""A real schema registry on 127.0.0.1 for tests and the Avro demo: Apicurio Registry with
in-memory storage, serving Confluent's Schema Registry API at ``/apis/ccompat/v7``.

``make jvm`` builds it from Maven Central's artifacts (``jvm/registry/pom.xml``) into
``$KSPARK_REGISTRY_DIR`` (default ``~/.cache/kspark/registry``). No Docker.
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

from ._jvm import JvmArtifactsMissing, javaExecutable
from ._jvm_server import JvmServer

__all__ = ["SchemaRegistry", "registryDir"]


def registryDir() -> Path:
    """``$KSPARK_REGISTRY_DIR``, else ``~/.cache/kspark/registry`` (the Makefile's default)."""
    configured = os.environ.get("KSPARK_REGISTRY_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "kspark" / "registry"


class SchemaRegistry(JvmServer):
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

    title = "The schema registry"

    def __init__(self, logDir: str | os.PathLike | None = None, port: int | None = None, heapMb: int = 256) -> None:
        super().__init__(logDir, port, heapMb, "kspark-registry-")

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>/apis/ccompat/v7``: the value of ``schema.registry.url``."""
        return f"http://127.0.0.1:{self.port}/apis/ccompat/v7"

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

        def ready() -> bool:
            with urllib.request.urlopen(f"{self.url}/subjects", timeout=1) as response:
                return response.status == 200

        self._launch(command, log, ready, timeout, cwd=self.logDir)
        return self

    def requestCount(self, method: str | None = None, path: str | None = None) -> int:
        """How many requests the registry has answered (any status), from its own metrics
        (``/metrics``, ``rest_requests_seconds_count``): for ``method`` on the Confluent API path
        template ``path`` (e.g. ``"GET", "/schemas/ids/{id}"``), or every method/path if None."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as response:
            text = response.read().decode()
        wanted = ([f'method="{method}"'] if method else []) + ([f'path="/apis/ccompat/v7{path}"'] if path else [])
        return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith("rest_requests_seconds_count{") and all(w in line for w in wanted)))
