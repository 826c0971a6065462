"""What the test servers that run as one JVM on 127.0.0.1 (the Kafka broker, the schema registry)
share: a process started in its own session with its output in a log file, a wait until it
answers, a stop (SIGTERM, then SIGKILL), its resident memory, its temporary directory."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def freePort() -> int:
    """A TCP port on 127.0.0.1 that is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of the log at ``path`` (for an error message)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"


class JvmServer:
    """One server JVM: ``title`` names it in errors ("The Kafka broker"), ``logDir`` holds its
    files (a new temporary directory with ``prefix`` if None, deleted by ``close()``)."""

    title = "The server"

    def __init__(self, logDir: str | os.PathLike | None, port: int | None, heapMb: int, prefix: str) -> None:
        self._ownsDir = logDir is None
        self.logDir = Path(logDir) if logDir is not None else Path(tempfile.mkdtemp(prefix=prefix))
        self.port = port or freePort()
        self.heapMb = heapMb
        self._process: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        """The JVM's process id while it runs."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def start(self, timeout: float = 60.0) -> "JvmServer":
        raise NotImplementedError

    def _launch(self, command: list[str], log: Path, ready: Callable[[], bool], timeout: float,
                cwd: Path | None = None) -> None:
        """Start ``command`` with its output appended to ``log``, then poll ``ready()`` every
        0.2 s until it returns True. Raises RuntimeError (with the end of the log) if the process
        exits first or ``timeout`` seconds pass (it is killed then)."""
        with open(log, "ab") as out:
            self._process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True, cwd=cwd)
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"{self.title} exited with code {self._process.returncode}:\n{tail(log)}")
            try:
                if ready():
                    return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"{self.title} did not answer within {timeout:.0f} s:\n{tail(log)}")
            time.sleep(0.2)

    def stop(self, stopTimeout: float = 30.0) -> None:
        """Shut the JVM down (SIGTERM; SIGKILL after ``stopTimeout`` seconds)."""
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
        """Kill the JVM at once (SIGKILL), as a crash would."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def rssMb(self) -> float | None:
        """The JVM's resident memory in MiB (from /proc), while it runs."""
        pid = self.pid
        if pid is None:
            return None
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return None

    def close(self) -> None:
        """Stop the JVM and delete its directory if this object created it."""
        self.stop()
        if self._ownsDir:
            shutil.rmtree(self.logDir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
