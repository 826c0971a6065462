"""The public surface and the import boundary: only kspark.spark imports pyspark."""

import ast
from pathlib import Path

import kspark

SRC = Path(kspark.__file__).parent


def test_all_is_sorted_and_every_name_resolves():
    assert kspark.__all__ == sorted(kspark.__all__, key=str.casefold)
    for name in kspark.__all__:
        if name != "KafkaStreams":  # resolved lazily, it imports pyspark
            assert getattr(kspark, name) is not None


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
