"""Class data sharing for the driver JVM (kspark.spark._cds): the first session writes the archive
at its exit, one process at a time, and only an archive java can map is put in place; later
sessions map it."""

from __future__ import annotations

import os
import subprocess

import pytest

from kspark.spark import _cds


@pytest.fixture
def cacheDir(tmp_path, monkeypatch):
    monkeypatch.setenv("KSPARK_CDS_DIR", str(tmp_path))
    monkeypatch.setattr(_cds, "_dumping", None)
    return tmp_path


def test_the_first_session_writes_the_archive_and_later_ones_map_it(cacheDir):
    options = _cds.javaOptions({}, "-XX:TieredStopAtLevel=1")
    key = _cds.archiveKey(_cds.javaExecutable(), {})
    written = cacheDir / f"driver-{key}.jsa.{os.getpid()}.tmp"
    assert options == [f"-XX:ArchiveClassesAtExit={written}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    assert (cacheDir / f"driver-{key}.jsa.lock").read_text() == str(os.getpid())

    # the JVM writes the archive as it exits (its stdin closed, as when Python ends)
    jvm = subprocess.Popen([_cds.javaExecutable(), options[0], *_cds.QUIET, "-version"], stdin=subprocess.PIPE,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert _cds.finishArchive(jvm) is True
    assert sorted(p.name for p in cacheDir.iterdir()) == [f"driver-{key}.jsa"]  # moved in place, lock gone

    assert _cds.javaOptions({}, "") == [f"-XX:SharedArchiveFile={cacheDir / f'driver-{key}.jsa'}",
                                        "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    other = _cds.archiveKey(_cds.javaExecutable(), {"spark.jars": "/x.jar"})
    assert other != key  # another driver class path: another archive


def test_only_the_newest_archives_are_kept(cacheDir):
    for i in range(6):
        (cacheDir / f"driver-{i}.jsa").write_bytes(b"x")
        os.utime(cacheDir / f"driver-{i}.jsa", (1000 + i, 1000 + i))
    (cacheDir / "driver-5.jsa.lock").write_text("1")
    _cds._keepNewest(str(cacheDir), 4)
    assert sorted(p.name for p in cacheDir.iterdir()) == ["driver-2.jsa", "driver-3.jsa", "driver-4.jsa",
                                                          "driver-5.jsa", "driver-5.jsa.lock"]


def test_a_truncated_archive_is_not_put_in_place(cacheDir):
    written = _cds.javaOptions({}, "")[0].split("=", 1)[1]
    jvm = subprocess.Popen([_cds.javaExecutable(), f"-XX:ArchiveClassesAtExit={written}", *_cds.QUIET, "-version"],
                           stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    jvm.wait(120)
    with open(written, "rb") as f:
        head = f.read(4096)
    with open(written, "wb") as f:  # as a JVM killed while writing it leaves it
        f.write(head)
    assert not _cds.usable(written)
    assert _cds.finishArchive(jvm) is False
    assert list(cacheDir.iterdir()) == []  # the truncated archive and the lock are gone
    assert _cds.javaOptions({}, "")[0].startswith("-XX:ArchiveClassesAtExit=")  # the next session tries again


def test_one_process_at_a_time_writes_the_archive(cacheDir, monkeypatch):
    key = _cds.archiveKey(_cds.javaExecutable(), {})
    lock = cacheDir / f"driver-{key}.jsa.lock"
    lock.write_text(str(os.getppid()))  # a live process writes it
    assert _cds.javaOptions({}, "") == []
    lock.write_text("")  # its creator has not written its pid yet
    assert _cds.javaOptions({}, "") == []
    os.utime(lock, (1000, 1000))  # or died before it did
    assert _cds.javaOptions({}, "")[0].startswith("-XX:ArchiveClassesAtExit=")
    lock.write_text("999999999")  # one that ended without finishing: taken over
    monkeypatch.setattr(_cds, "_dumping", None)
    assert _cds.javaOptions({}, "")[0].startswith("-XX:ArchiveClassesAtExit=")
    assert lock.read_text() == str(os.getpid())


def test_no_archive_when_off_or_when_the_options_set_cds(cacheDir, monkeypatch):
    assert _cds.javaOptions({}, "-Xshare:off") == []
    assert _cds.javaOptions({}, "-XX:SharedArchiveFile=/my.jsa") == []
    monkeypatch.setenv("KSPARK_CDS_DIR", "off")
    assert _cds.javaOptions({}, "") == []
    assert list(cacheDir.iterdir()) == []
