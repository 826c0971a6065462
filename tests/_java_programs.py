"""Small Java programs the tests run on Kafka Streams' jars (``tests/unit/java/<package>``) to
take Kafka's answer: compiled once per source version, run, their standard output parsed as JSON."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest


def runJavaProgram(sources: Path, mainClass: str) -> object:
    """Compile ``sources`` (a package directory; classes cached under ``~/.cache/kspark/<its
    name>``) against ``make jvm``'s jars, run ``mainClass`` and return its stdout as JSON. Skips
    the test, naming why, if there are no jars or no JDK; fails it with the program's stderr if
    the program fails."""
    from kspark.testing._jvm import JvmArtifactsMissing, compileJava, javaExecutable

    try:
        java, classpath = javaExecutable(), compileJava(sources, Path.home() / ".cache" / "kspark" / sources.name)
    except JvmArtifactsMissing as e:
        pytest.skip(f"Kafka Streams' side of the comparison cannot run: {e}")
    result = subprocess.run(
        [java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=off",
         "-cp", classpath, mainClass], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"the Java program failed:\n{result.stderr[-4000:]}"
    return json.loads(result.stdout)
