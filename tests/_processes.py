"""Killing a whole kspark run in crash tests, and measuring it (soak test): the run's process
group and the processes outside it (pyspark's worker daemons call ``setpgid``, so killing the
group alone left them behind for seconds, overlapping the next test)."""

import os
import signal
import time


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    parent = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"  # a zombie is gone for our purposes
    except (OSError, IndexError):
        return False


def killRun(proc, timeout: float = 30.0) -> None:
    """SIGKILL a run started with ``start_new_session=True`` (``proc``, a ``Popen``): its process
    group, every descendant and their groups (pyspark's daemons and their workers); then wait
    until all of them are gone.

    Raises
    ------
    AssertionError
        If some process outlives ``timeout`` seconds.
    """
    doomed = descendants(proc.pid)
    groups = {proc.pid} | {pid for pid in doomed if _pgid(pid) == pid}
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
    deadline = time.time() + timeout
    while any(alive(pid) for pid in doomed):
        assert time.time() < deadline, f"processes {[p for p in doomed if alive(p)]} of the killed run outlived it"
        time.sleep(0.05)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def treeRss(pid: int) -> int:
    """Resident set size (bytes) of ``pid`` and its descendants."""
    total = 0
    for p in [pid, *descendants(pid)]:
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return total


def checkpointFiles(appDir) -> set:
    """The micro-batch files of a run's checkpoints under ``appDir`` (``<state.dir>/<application.id>``):
    ``(sub-topology directory, "offsets" or "commits", batch)`` for each batch planned (its offsets
    written) and each committed. Spark writes each file whole (a rename), once per batch however
    often the run is killed and restarted."""
    from pathlib import Path

    found = set()
    for sub in Path(appDir).glob("subtopology-*"):
        for kind in ("offsets", "commits"):
            if (sub / kind).is_dir():
                found.update((sub.name, kind, int(f.name)) for f in (sub / kind).iterdir() if f.name.isdigit())
    return found


def runUntilCheckpointFiles(proc, appDir, count: int, timeout: float = 240.0) -> bool:
    """Wait until run ``proc`` (a ``Popen``) has written ``count`` new :func:`checkpointFiles` in
    ``appDir``: a point in its processing whatever the machine's speed (a fixed sleep lands in a
    slow machine's start-up, or after a fast one's end). False if the run ended first.

    Raises
    ------
    AssertionError
        If neither happened within ``timeout`` seconds.
    """
    before = checkpointFiles(appDir)
    deadline = time.time() + timeout
    while len(checkpointFiles(appDir) - before) < count:
        if proc.poll() is not None:
            return False
        assert time.time() < deadline, f"the run wrote no {count} checkpoint files in {appDir} within {timeout} s"
        time.sleep(0.05)
    return True
