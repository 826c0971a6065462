"""Where the JVM artifacts of ``jvm/pom.xml`` are: the Kafka broker and kafka-streams jars that
tests, the Kafka demo and the benchmarks run (``make jvm`` resolves them with Maven)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["JavaCompileError", "JvmArtifactsMissing", "compileJava", "javaExecutable", "jvmClasspath", "jvmLibDir"]


class JvmArtifactsMissing(RuntimeError):
    """The JVM artifacts have not been resolved: run ``make jvm``."""


class JavaCompileError(RuntimeError):
    """``javac`` rejected the sources (the message holds its output)."""


def jvmLibDir() -> Path:
    """``$KSPARK_JVM_LIB``, else ``~/.cache/kspark/jvm`` (the Makefile's default)."""
    configured = os.environ.get("KSPARK_JVM_LIB")
    return Path(configured) if configured else Path.home() / ".cache" / "kspark" / "jvm"


def jvmClasspath() -> str:
    """The class path (``<dir>/*``) of the resolved jars.

    Raises
    ------
    JvmArtifactsMissing
        If the directory holds no kafka-streams and Kafka broker jars, naming the directory and
        the command that resolves them.
    """
    lib = jvmLibDir()
    jars = {p.name for p in lib.glob("*.jar")} if lib.is_dir() else set()
    if not any(n.startswith("kafka_2.13-") for n in jars) or not any(n.startswith("kafka-streams-") for n in jars):
        raise JvmArtifactsMissing(
            f"No Kafka jars in {lib} (KSPARK_JVM_LIB): run `make jvm` in the kspark repository, which resolves "
            "jvm/pom.xml with Maven into that directory."
        )
    return str(lib / "*")


def javaExecutable() -> str:
    """``$JAVA_HOME/bin/java`` if set, else ``java`` on the PATH.

    Raises
    ------
    JvmArtifactsMissing
        If no java executable is found.
    """
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        raise JvmArtifactsMissing("No java executable (JAVA_HOME or PATH); Java 17 runs the Kafka broker.")
    return java


def compileJava(sourceDir: str | os.PathLike, cacheDir: str | os.PathLike) -> str:
    """Compile every ``*.java`` under ``sourceDir`` with ``javac --release 17`` against the jars of
    ``make jvm``, once per version of the sources and jars: the classes are kept in
    ``cacheDir/classes-<hash>`` (outside git), built in a staging directory and renamed into place,
    so concurrent runs never see half a build.

    Returns
    -------
    str
        The class path: the classes, then the jars.

    Raises
    ------
    JvmArtifactsMissing
        No jars (run ``make jvm``), or no ``javac`` next to the java executable or on the PATH.
    JavaCompileError
        If javac fails, with its output.
    """
    sourceDir, cacheDir = Path(sourceDir), Path(cacheDir)
    classpath, java = jvmClasspath(), javaExecutable()
    sources = sorted(sourceDir.rglob("*.java"))
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.relative_to(sourceDir).as_posix().encode() + b"\0" + path.read_bytes())
    for jar in sorted(p.name for p in jvmLibDir().glob("*.jar")):
        digest.update(jar.encode())
    classes = cacheDir / f"classes-{digest.hexdigest()[:16]}"
    if not (classes / ".complete").exists():
        sibling = Path(java).with_name("javac")
        javac = str(sibling) if sibling.exists() else shutil.which("javac")
        if not javac:
            raise JvmArtifactsMissing(f"No javac next to {java} or on the PATH: compiling {sourceDir} needs a JDK 17.")
        cacheDir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="classes-", dir=cacheDir))
        result = subprocess.run(
            [javac, "-encoding", "UTF-8", "--release", "17", "-nowarn", "-d", str(staging), "-cp", classpath,
             *map(str, sources)], capture_output=True, text=True)
        if result.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise JavaCompileError(f"javac failed on {sourceDir}:\n{result.stdout}{result.stderr}")
        (staging / ".complete").touch()
        try:
            staging.rename(classes)
        except OSError:  # built by a concurrent run in the meantime: use theirs
            shutil.rmtree(staging, ignore_errors=True)
    return f"{classes}{os.pathsep}{classpath}"
