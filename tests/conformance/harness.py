"""The differential harness: one catalogue of topologies, run on Kafka Streams' own
``TopologyTestDriver`` (the Java harness under ``java/``) and on kspark's, with the same input
bytes; the results are compared record by record.

A *request* (one scenario variant and one seed) is a JSON object::

    {"id", "scenario", "params", "config", "steps", "outputs", "stores"}

Steps pipe one record (key and value as hex bytes, timestamp, headers), call one of
``TestInputTopic``'s overloads (``"form"``) or advance the wall clock. Both sides answer with the
same JSON shape::

    {"id", "describe", "steps": [[record, ...] per step], "error": {"at", "chain"} | absent,
     "stores": {name: [[key, value], ...] | {"missing": true} | {"error": chain}},
     "files": {name: text}}

where a record is ``{"t": topic, "k": hex, "v": hex, "ts": ms, "h": [[name, hex], ...]}``:
serialized bytes, so a serde that kspark does not inherit as Kafka does shows as a mismatch.
Store keys and values are rendered by ``canon`` (Java: ``Harness.canon``).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import struct
import subprocess
import tempfile
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

JAVA_SOURCES = Path(__file__).parent / "java"
CACHE_DIR = Path(os.environ.get("KSPARK_CONFORMANCE_CACHE", Path.home() / ".cache" / "kspark" / "conformance"))


class HarnessError(RuntimeError):
    """The Java harness could not be built or run (the message says why and what to do)."""


# ---------------------------------------------------------------------------------- Java side
def buildJavaHarness() -> tuple[str, str]:
    """Compile ``java/`` against the jars of ``make jvm`` (once per source version: the classes
    are cached under ``~/.cache/kspark/conformance/classes-<hash>``, outside git).

    Returns the java executable and the class path. Raises ``JvmArtifactsMissing`` (no jars: run
    ``make jvm``; no JDK) or ``HarnessError`` (the sources do not compile).
    """
    from kspark.testing._jvm import JavaCompileError, compileJava, javaExecutable

    try:
        return javaExecutable(), compileJava(JAVA_SOURCES, CACHE_DIR)
    except JavaCompileError as e:
        raise HarnessError(str(e)) from e


def runKafka(requests: list[dict]) -> dict[str, dict]:
    """Run ``requests`` on Kafka Streams' TopologyTestDriver; results by request id.

    The requests are independent (a driver each, a state.dir per JVM), so they are dealt round
    robin to one JVM per CPU, at most 2 (1,473 requests on a loaded 2-core machine: 37-41 s
    against 45-46 s for one JVM)."""
    java, classpath = buildJavaHarness()
    jvms = max(1, min(2, os.cpu_count() or 1, len(requests)))
    # Kafka's RocksDB stores open and close (and sync) per driver: on the disk the JVM waited most
    # of its 98-104 s for 1,473 requests; in a memory file system, where there is one, 37-46 s
    shm = Path("/dev/shm")
    memory = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="kspark-conformance-", dir=memory) as tmp:
        runs = []
        for i in range(jvms):
            requestFile, resultFile = Path(tmp) / f"requests-{i}.jsonl", Path(tmp) / f"results-{i}.jsonl"
            requestFile.write_text("".join(json.dumps(r) + "\n" for r in requests[i::jvms]), encoding="utf-8")
            proc = subprocess.Popen(
                [java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", f"-Djava.io.tmpdir={tmp}",
                 "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", classpath, "conformance.Harness",
                 str(requestFile), str(resultFile)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            runs.append((proc, resultFile))
        results = []
        try:
            for proc, resultFile in runs:
                _, stderr = proc.communicate()
                if proc.returncode != 0:
                    raise HarnessError(f"The Java harness failed (exit {proc.returncode}):\n{stderr[-4000:]}")
                results.extend(json.loads(line) for line in resultFile.read_text(encoding="utf-8").splitlines() if line)
        finally:
            for proc, _ in runs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    byId = {r["id"]: r for r in results}
    missing = [r["id"] for r in requests if r["id"] not in byId]
    if missing:
        raise HarnessError(f"The Java harness gave no result for {len(missing)} requests, e.g. {missing[:3]}")
    return byId


# ---------------------------------------------------------------------------------- kspark side
def canon(o: Any) -> Any:
    """A store key or value as JSON, as ``Harness.canon`` renders the Java object."""
    from kspark import Windowed
    from kspark.state import ValueAndTimestamp, VersionedRecord

    if o is None or isinstance(o, (bool, str)):
        return o
    if isinstance(o, int):
        return o
    if isinstance(o, float):
        return {"f": struct.pack(">d", o).hex()}
    if isinstance(o, (bytes, bytearray, memoryview)):
        return {"b": bytes(o).hex()}
    if isinstance(o, Windowed):
        return {"w": [canon(o.key()), o.window().start(), o.window().end()]}
    if isinstance(o, ValueAndTimestamp):
        return {"vt": [canon(o.value), o.timestamp]}
    if isinstance(o, VersionedRecord):
        return {"vr": [canon(o.value()), o.timestamp(), o.validTo()]}
    if isinstance(o, (list, tuple)):
        return [canon(e) for e in o]
    if isinstance(o, uuid.UUID):
        return {"u": str(o)}
    return {"o": f"{type(o).__qualname__}:{o!r}"}


def errorChain(e: BaseException) -> list[list]:
    """``[[class, message], ...]`` from the exception through its causes (Java: ``Harness.chain``)."""
    chain, seen = [], set()
    while e is not None and id(e) not in seen and len(chain) < 8:
        seen.add(id(e))
        chain.append([f"{type(e).__module__}.{type(e).__qualname__}", str(e)])
        e = e.__cause__ if e.__cause__ is not None else (None if e.__suppress_context__ else e.__context__)
    return chain


def _hex(b: bytes | None) -> str | None:
    return None if b is None else bytes(b).hex()


def _unhex(s: str | None) -> bytes | None:
    return None if s is None else bytes.fromhex(s)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _instant(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


def _pipe(driver, inputs: dict, step: dict) -> None:
    """One step, as ``Harness.step`` does it on Kafka's driver."""
    from kspark import Serdes

    if "advance" in step:
        driver.advanceWallClockTime(step["advance"])
        return
    topic, form = step["pipe"], step.get("form", "record")
    if form == "record":
        if topic not in inputs:
            inputs[topic] = driver.createInputTopic(topic, Serdes.ByteArray(), Serdes.ByteArray())
        headers = tuple((name, _unhex(value)) for name, value in step.get("h", ()))
        inputs[topic].pipeInput(_unhex(step["k"]), _unhex(step["v"]), step["ts"], headers)
        return
    # the TestInputTopic overloads a Java test calls, ported as a Python user would write them
    t = driver.createInputTopic(topic, Serdes.String(), Serdes.String(), _instant(step.get("start", 0)),
                                timedelta(milliseconds=step.get("autoAdvance", 0)))
    key, value = step.get("key"), step.get("value")
    if form == "value":
        t.pipeInput(value)
    elif form == "keyValue":
        t.pipeInput(key, value)
    elif form == "valueInstant":
        t.pipeInput(value, _instant(step["ts"]))
    elif form == "keyValueInstant":
        t.pipeInput(key, value, _instant(step["ts"]))
    elif form == "keyValueLong":
        t.pipeInput(key, value, step["ts"])
    elif form == "valueList":
        t.pipeValueList(step["values"])
    elif form == "valueListTimed":
        t.pipeValueList(step["values"], _instant(step["ts"]), timedelta(milliseconds=step["advanceMs"]))
    elif form == "keyValueList":
        t.pipeKeyValueList([tuple(kv) for kv in step["keyValues"]])
    elif form == "keyValueListTimed":
        t.pipeKeyValueList([tuple(kv) for kv in step["keyValues"]], _instant(step["ts"]),
                           timedelta(milliseconds=step["advanceMs"]))
    else:
        raise ValueError(f"unknown pipe form {form}")


def _dumpStore(driver, spec: dict) -> Any:
    name, kind = spec["name"], spec["kind"]
    try:
        if kind == "kv":
            store = driver.getKeyValueStore(name)
        elif kind == "tkv":
            store = driver.getTimestampedKeyValueStore(name)
        elif kind == "window":
            store = driver.getWindowStore(name)
        elif kind == "twindow":
            # content, not API: kspark's getWindowStore gives what Kafka's getTimestampedWindowStore
            # gives (ValueAndTimestamp values); the stores.* scenarios check the store views' API
            getter = getattr(driver, "getTimestampedWindowStore", None) or driver.getWindowStore
            store = getter(name)
        elif kind == "kv-iter":  # Kafka's iterator protocol: hasNext()/next()/close()
            store = driver.getKeyValueStore(name)
            if store is None:
                return {"missing": True}
            it, rows = store.all(), []
            while it.hasNext():
                kv = it.next()
                rows.append([canon(kv.key), canon(kv.value)])
            it.close()
            return rows
        elif kind == "session":
            store = driver.getSessionStore(name)
            if store is None:
                return {"missing": True}
            return [[canon(kv.key), canon(kv.value)] for key in spec["probe"] for kv in store.fetch(key)]
        elif kind in ("versioned", "kv-ops", "window-ops", "session-ops"):
            getter = {"versioned": driver.getVersionedKeyValueStore, "kv-ops": driver.getKeyValueStore,
                      "window-ops": driver.getWindowStore, "session-ops": driver.getSessionStore}[kind]
            store = getter(name)
            return {"missing": True} if store is None else _queries(kind, store, spec)
        else:
            raise ValueError(f"unknown store kind {kind}")
        if store is None:
            return {"missing": True}
        return [[canon(kv.key), canon(kv.value)] for kv in store.all()]
    except Exception as e:  # noqa: BLE001 - compared with Kafka's outcome
        return {"error": errorChain(e)}


def _queries(kind: str, store, spec: dict) -> list:
    """The store's read operations as rows ``[step, operation, key, value]`` (Java: ``Queries.dump``)."""
    from kspark import Serdes

    rows: list = []

    def row(op, key, value):
        rows.append([len(rows), op, canon(key), canon(value)])

    def each(op, it):
        row(op + ":start", None, None)
        with it:
            while it.hasNext():
                kv = it.next()
                row(op, kv.key, kv.value)

    if kind == "versioned":
        for key in spec["probe"]:
            row("get", key, store.get(key))
            for asOf in spec["asOf"]:
                row(f"get@{asOf}", key, store.get(key, asOf))
    elif kind == "kv-ops":
        each("range(b,c)", store.range("b", "c"))
        each("range(null,b)", store.range(None, "b"))
        each("range(c,null)", store.range("c", None))
        each("range(c,b)", store.range("c", "b"))
        each("reverseRange(b,d)", store.reverseRange("b", "d"))
        each("reverseAll", store.reverseAll())
        each("prefixScan(a)", store.prefixScan("a", Serdes.String()))
        each("prefixScan()", store.prefixScan("", Serdes.String()))
        # approximateNumEntries is left out: RocksDB's estimate counts overwritten keys too
    elif kind == "window-ops":
        start, end = _instant(spec["from"]), _instant(spec["to"])
        for k in spec["probe"]:
            each(f"fetch({k},from,to)", store.fetch(k, start, end))
            each(f"backwardFetch({k},from,to)", store.backwardFetch(k, start, end))
            row(f"fetch({k},from)", None, store.fetch(k, spec["from"]))
    else:
        start, end = spec["from"], spec["to"]
        for k in spec["probe"]:
            each(f"fetch({k})", store.fetch(k))
            each(f"backwardFetch({k})", store.backwardFetch(k))
            each(f"findSessions({k},from,to)", store.findSessions(k, start, end))
            each(f"backwardFindSessions({k},from,to)", store.backwardFindSessions(k, start, end))
    return rows


def runKspark(scenario, request: dict) -> dict:
    """Run ``request`` on kspark's TopologyTestDriver with ``scenario``'s Python port (its
    parameters plus ``tmpdir``, a directory for files the topology writes)."""
    result: dict[str, Any] = {"id": request["id"]}
    with tempfile.TemporaryDirectory(prefix="kspark-conformance-") as tmpdir:
        try:
            return _runKspark(scenario, request, {**request["params"], "tmpdir": tmpdir}, result)
        finally:  # files the topology wrote (Printed.toFile), as Harness.run reads them
            result["files"] = {p.name: p.read_text(encoding="utf-8") for p in sorted(Path(tmpdir).iterdir())}


def _runKspark(scenario, request: dict, params: dict, result: dict) -> dict:
    from kspark import StreamsBuilder
    from kspark.testing import TopologyTestDriver

    try:
        builder = StreamsBuilder()
        topology = scenario.build(builder, params) or builder.build()
        result["describe"] = str(topology.describe())
    except Exception as e:  # noqa: BLE001
        result["error"] = {"at": "build", "chain": errorChain(e)}
        return result
    steps = result["steps"] = []
    try:
        driver = TopologyTestDriver(topology, scenario.kspark_config(request["config"]), initialWallClockTime=0)
    except Exception as e:  # noqa: BLE001
        result["error"] = {"at": "init", "chain": errorChain(e)}
        return result
    from kspark import Serdes

    try:
        outputs = {t: driver.createOutputTopic(t, Serdes.ByteArray(), Serdes.ByteArray()) for t in request["outputs"]}
        inputs: dict = {}
        for index, step in enumerate(request["steps"]):
            failure = None
            try:
                _pipe(driver, inputs, step)
            except Exception as e:  # noqa: BLE001
                failure = e
            steps.append([
                {"t": t, "k": _hex(r.key()), "v": _hex(r.value()), "ts": r.timestamp(),
                 "h": [[name, _hex(value)] for name, value in r.headers()]}
                for t, topic in outputs.items() for r in topic.readRecordsToList()
            ])
            if failure is not None:
                result["error"] = {"at": str(index), "chain": errorChain(failure)}
                break
        result["stores"] = {s["name"]: _dumpStore(driver, s) for s in request["stores"]}
    finally:
        try:
            driver.close()
        except Exception as e:  # noqa: BLE001
            result.setdefault("error", {"at": "close", "chain": errorChain(e)})
    return result


# ---------------------------------------------------------------------------------- comparison
# Kafka's exception classes and what kspark raises for them
_EQUIVALENT = {
    "org.apache.kafka.streams.errors.StreamsException": {"kspark.errors.StreamsException"},
    "org.apache.kafka.streams.errors.TopologyException": {"kspark.errors.TopologyException"},
    "org.apache.kafka.common.errors.SerializationException": {"kspark.serialization.SerializationException"},
    "org.apache.kafka.common.config.ConfigException": {"kspark.errors.ConfigException"},
    "java.lang.IllegalArgumentException": {"builtins.ValueError"},
    "java.lang.NullPointerException": {"builtins.TypeError"},
    "java.lang.IllegalStateException": {"builtins.RuntimeError"},
    "java.lang.RuntimeException": {"builtins.RuntimeError"},
    "java.lang.IndexOutOfBoundsException": {"builtins.IndexError"},
}


def sameClass(javaClass: str, pythonClass: str) -> bool:
    return pythonClass in _EQUIVALENT.get(javaClass, ()) or javaClass.rsplit(".", 1)[-1] == pythonClass.rsplit(".", 1)[-1]


def compareErrors(kafka: dict | None, ours: dict | None) -> str | None:
    """Errors agree when both runs fail at the same step, with an equivalent outermost class whose
    message starts with Kafka's, and a root cause (the user's, the serde's or Kafka's own text)
    whose message starts with Kafka's root cause message: kspark may add context (topic,
    partition, offset) after Kafka's text, never change it."""
    if kafka is None and ours is None:
        return None
    if kafka is None or ours is None:
        return f"error: Kafka {_fmtError(kafka)}\n       kspark {_fmtError(ours)}"
    k, o = kafka["chain"], ours["chain"]
    if (kafka["at"] != ours["at"] or not sameClass(k[0][0], o[0][0]) or not _extends(o[0][1], k[0][1])
            or not _extends(o[-1][1], k[-1][1])):
        return f"error: Kafka {_fmtError(kafka)}\n       kspark {_fmtError(ours)}"
    return None


def _extends(ours: str | None, kafka: str | None) -> bool:
    return ours == kafka or (ours is not None and kafka is not None and ours.startswith(kafka))


def _fmtError(e: dict | None) -> str:
    if e is None:
        return "no error"
    return f"at step {e['at']}: " + " <- ".join(f"{c.rsplit('.', 1)[-1]}({m!r})" for c, m in e["chain"])


def _fmtRecord(r: dict) -> str:
    h = f" h={r['h']}" if r["h"] else ""
    return f"{r['t']} k={r['k']} v={r['v']} ts={r['ts']}{h}"


# a TopicNameExtractor sink names the extractor's class: a Java lambda's or a Python function's
_EXTRACTOR_CLASS = re.compile(r"\(extractor class: [^)]*\)")


def compareDescribe(kafka: dict, ours: dict) -> str | None:
    """How the ``describe()`` texts differ (a unified diff), or None when equal or when neither
    side could build the topology (the behaviour test compares those errors)."""
    a, b = (None if d is None else _EXTRACTOR_CLASS.sub("(extractor class: ...)", d)
            for d in (kafka.get("describe"), ours.get("describe")))
    if a == b:
        return None
    if a is None or b is None:
        return (f"describe(): Kafka {'built it' if b is None else _fmtError(kafka.get('error'))}, "
                f"kspark {'built it' if a is None else _fmtError(ours.get('error'))}")
    lines = difflib.unified_diff(a.splitlines(), b.splitlines(), "Kafka", "kspark",
                                 lineterm="", n=1)
    return "describe():\n" + "\n".join(lines)


def compare(kafka: dict, ours: dict, steps: list[dict]) -> dict[str, str]:
    """Differences of the run by aspect (``records``, ``error``, ``stores``, ``files``); empty when the runs
    agree. Each text names the first differing step with its input and both outputs."""
    diffs: dict[str, str] = {}
    ks, os_ = kafka.get("steps", []), ours.get("steps", [])
    for i in range(max(len(ks), len(os_))):
        a = ks[i] if i < len(ks) else None
        b = os_[i] if i < len(os_) else None
        if a != b and not _sameRecords(a, b):
            step = steps[i] if i < len(steps) else None
            diffs["records"] = (
                f"first differing step {i}: input {json.dumps(step)}\n"
                f"  Kafka : {'(not run)' if a is None else [_fmtRecord(r) for r in a]}\n"
                f"  kspark: {'(not run)' if b is None else [_fmtRecord(r) for r in b]}")
            break
    error = compareErrors(kafka.get("error"), ours.get("error"))
    if error:
        diffs["error"] = error
    if kafka.get("files", {}) != ours.get("files", {}):
        diffs["files"] = f"files written:\n  Kafka : {kafka.get('files')}\n  kspark: {ours.get('files')}"
    kStores, oStores = kafka.get("stores", {}), ours.get("stores", {})
    for name in sorted(set(kStores) | set(oStores)):
        a, b = _sortedRows(kStores.get(name)), _sortedRows(oStores.get(name))
        if a != b and not _sameStoreError(a, b):
            diffs.setdefault("stores", "")
            diffs["stores"] += f"store {name}:\n  Kafka : {json.dumps(a)[:1500]}\n  kspark: {json.dumps(b)[:1500]}\n"
    return diffs


_ERROR_EXCEPTION, _ERROR_MESSAGE, _ERROR_STACKTRACE = (
    "__streams.errors.exception", "__streams.errors.message", "__streams.errors.stacktrace")


def _text(h: str | None) -> str | None:
    return None if h is None else bytes.fromhex(h).decode("utf-8", "replace")


def _sameHeader(name: str, kafka: str | None, ours: str | None) -> bool:
    """A dead-letter record's error headers (KIP-1034) in each language's terms: the exception's
    class as ``sameClass`` (a Python builtin named bare), kspark's message starting with Kafka's,
    a stack trace on both sides (Java's and Python's differ)."""
    if name == _ERROR_EXCEPTION:
        k, o = _text(kafka), _text(ours)
        return k is not None and o is not None and sameClass(k, o if "." in o else "builtins." + o)
    if name == _ERROR_MESSAGE:
        return _extends(_text(ours), _text(kafka))
    if name == _ERROR_STACKTRACE:
        return kafka is not None and ours is not None
    return kafka == ours


def _sameRecords(kafka: list | None, ours: list | None) -> bool:
    """The records of one step are the same, dead-letter error headers compared by ``_sameHeader``."""
    if kafka is None or ours is None or len(kafka) != len(ours):
        return False
    for a, b in zip(kafka, ours):
        if {k: v for k, v in a.items() if k != "h"} != {k: v for k, v in b.items() if k != "h"}:
            return False
        if len(a["h"]) != len(b["h"]) or not all(
                ka == kb and _sameHeader(ka, va, vb) for (ka, va), (kb, vb) in zip(a["h"], b["h"])):
            return False
    return True


def _sameStoreError(kafka, ours) -> bool:
    """Both store reads failed with equivalent exception chains: classes as ``sameClass``, each
    kspark message starting with Kafka's (any message where Kafka's is null)."""
    if not (isinstance(kafka, dict) and isinstance(ours, dict) and "error" in kafka and "error" in ours):
        return False
    k, o = kafka["error"], ours["error"]
    return len(k) == len(o) and all(sameClass(kc, oc) and (km is None or _extends(om, km))
                                    for (kc, km), (oc, om) in zip(k, o))


def _sortedRows(rows):
    if isinstance(rows, list):
        return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
    return rows
