"""Where the JVM artifacts of ``jvm/pom.xml`` are: the Kafka broker and kafka-streams jars that
tests, the Kafka demo and the benchmarks run (``make jvm`` resolves them with Maven)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["JvmArtifactsMissing", "javaExecutable", "jvmClasspath", "jvmLibDir"]


class JvmArtifactsMissing(RuntimeError):
    """The JVM artifacts have not been resolved: run ``make jvm``."""


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
