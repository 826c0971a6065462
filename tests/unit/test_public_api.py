"""The public surface and the import boundary: only kspark.spark imports pyspark."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import kspark

SRC = Path(kspark.__file__).parent


def test_all_is_sorted_and_every_name_resolves():
    assert kspark.__all__ == sorted(kspark.__all__, key=str.casefold)
    for name in kspark.__all__:
        if name != "KafkaStreams":  # resolved lazily, it imports pyspark
            assert getattr(kspark, name) is not None


def test_the_lazy_names_are_the_type_checking_imports():
    """``kspark`` imports its public names on first use (``_EXPORTS``); the ``TYPE_CHECKING``
    block that static tools read names the same ones from the same modules."""
    tree = ast.parse((SRC / "__init__.py").read_text())
    [block] = [n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING"]
    imported = {a.name: "." * n.level + n.module for n in block.body for a in n.names}
    assert imported == kspark._MODULE_OF
    assert set(dir(kspark)) >= set(kspark.__all__)
    assert kspark.state.Stores is kspark.Stores  # subpackages resolve as after an eager import
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        kspark.Nope


def test_spark_helper_processes_import_the_data_source_without_the_dsl():
    """Spark's Python data source processes import ``kspark.spark._datasource`` (and its
    packages) once each per query: neither the DSL nor the Spark host's driver side comes with it."""
    code = ("import sys, kspark.spark._datasource; "
            "print(sorted(m for m in sys.modules if m.startswith(('kspark.dsl', 'kspark.spark._kafka_streams'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_only_the_spark_host_imports_pyspark():
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.relative_to(SRC).parts[0] == "spark":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(SRC)}: {n}" for n in names if n.split(".")[0] == "pyspark"]
    assert offenders == []


def test_java_keyword_names_get_a_trailing_underscore():
    assert kspark.Consumed.with_ and kspark.Produced.with_ and kspark.Materialized.as_ and kspark.Repartitioned.as_


def test_state_does_not_import_the_dsl():
    """The window types live below state/ (issue 20's layout): stores hand them out without the DSL."""
    offenders = []
    for path in (SRC / "state").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                module = ("." * node.level) + (node.module or "")
                if "dsl" in module.split("."):
                    offenders.append(f"{path.relative_to(SRC)}: {module}")
            elif isinstance(node, ast.Import):
                offenders += [f"{path.relative_to(SRC)}: {a.name}" for a in node.names if a.name.startswith("kspark.dsl")]
    assert offenders == []
