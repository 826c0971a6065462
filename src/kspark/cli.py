"""``kspark run module:function --config app.properties``: run an application on Spark.

``function`` (in an importable module, or a ``path/to/file.py``) returns a ``Topology`` (a
``StreamsBuilder`` is built); it is called without arguments, or, if it requires one argument,
with the properties: a dict (``Properties``, with Java's ``put``/``setProperty``/``getProperty``
too) that ``KafkaStreams`` then gets itself, as Java's ``main`` hands the same object to both, so
keys the function sets (``properties.put(...)`` in ``buildTopology(properties)``) apply. The
properties file is Kafka's format (``key=value``, ``key: value`` or ``key value``; ``#``/``!``
comments; ``\\`` continues a line) and holds the
``KafkaStreams`` config: ``application.id``, ``state.dir``, ``kspark.*``, ``spark.*``... as
strings, which ``StreamsConfig`` parses as Kafka does (numbers, booleans, class names).

The run shows kspark's progress view and ends with its summary. Ctrl-C stops the queries
cleanly (exit status 130): the checkpoint in ``state.dir`` stays intact and the same command
resumes where the run stopped. A failed run prints kspark's error (for a processor exception the
task, processor, topic, partition and offset) and the application's traceback once
(:func:`failureReport`), then the summary; Spark's own traces only with ``-v``. ``--describe``
prints ``Topology.describe()`` and the application's changelog and repartition topics (for
``application.id`` from the properties file), ``--describe FILE`` writes its picture (``.dot``, ``.svg``,
``.png``) instead of running.

``kspark topics create|produce|consume|list|describe`` (``kspark.cli_topics``) puts records into
topics and reads them, as Kafka's console tools do.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import logging
import os
import re
import signal
import sys
import threading
from pathlib import Path
from typing import Any

__all__ = ["Properties", "failureReport", "loadTopology", "main", "readProperties"]

# keys read by kspark's Spark host; applied here so that a properties file may set them
_PROGRESS, _VERBOSE = "kspark.progress", "kspark.verbose"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class Properties(dict):
    """The properties ``kspark run`` reads and hands to the application's function, then to
    ``KafkaStreams``: a dict with ``java.util.Properties``' methods, so that a ported
    ``buildTopology(Properties props)`` runs line by line."""

    def put(self, key, value):
        """Set ``key``; returns the previous value or None (Java ``Hashtable.put``)."""
        previous = self.get(key)
        self[key] = value
        return previous

    setProperty = put

    def putIfAbsent(self, key, value):
        """Set ``key`` unless it has a value; returns the value it had, or None."""
        previous = self.get(key)
        if previous is None:
            self[key] = value
        return previous

    def putAll(self, other) -> None:
        self.update(other)

    def getProperty(self, key, defaultValue=None):
        """The value of ``key`` if it is a string, else ``defaultValue`` (Java ``Properties.getProperty``)."""
        value = self.get(key)
        return value if isinstance(value, str) else defaultValue

    def containsKey(self, key) -> bool:
        return key in self

    def remove(self, key):
        return self.pop(key, None)


def readProperties(path) -> Properties:
    """Read a Java/Kafka ``.properties`` file into ``{key: value}`` (strings).

    Raises
    ------
    OSError
        If the file cannot be read.
    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    props = Properties()
    logical = ""
    for raw in lines:
        line = raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes: the line continues
            logical += line[:-1]
            continue
        logical += line
        key, value = _splitProperty(logical)
        props[key] = value
        logical = ""
    if logical:
        key, value = _splitProperty(logical)
        props[key] = value
    return props


def _splitProperty(line: str) -> tuple[str, str]:
    i, n = 0, len(line)
    while i < n and line[i] not in "=: \t\f":
        i += 2 if line[i] == "\\" else 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def _unescape(text: str) -> str:
    def one(m: re.Match) -> str:
        c = m.group(1)
        if c.startswith("u"):
            return chr(int(c[1:], 16))
        return _ESCAPES.get(c, c)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", one, text)


def loadTopology(target: str, props: dict[str, Any]):
    """Import ``module:function`` (or ``file.py:function``) and call it: the application's ``Topology``.

    A function that requires one argument gets ``props`` itself, not a copy: what it sets there
    is what ``KafkaStreams`` gets (Java's ``buildTopology(props)`` then ``new KafkaStreams(topology,
    props)``).

    Raises
    ------
    SystemExit
        If the target is malformed, cannot be imported, or does not give a Topology.
    """
    from .dsl import StreamsBuilder
    from .topology import Topology

    modulePart, sep, function = target.rpartition(":")
    if not sep or not modulePart or not function:
        raise SystemExit(f"kspark run: expected module:function or path/to/file.py:function, got {target!r}")
    if modulePart.endswith(".py") or os.sep in modulePart:
        path = Path(modulePart).resolve()
        if not path.exists():
            raise SystemExit(f"kspark run: no such file: {path}")
        sys.path.insert(0, str(path.parent))  # its sibling modules import as they would from `python file.py`
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(modulePart)
    factory = getattr(module, function, None)
    if not callable(factory):
        raise SystemExit(f"kspark run: {modulePart} has no function {function!r}")
    required = [p for p in inspect.signature(factory).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    topology = factory(props) if required else factory()
    if isinstance(topology, StreamsBuilder):
        topology = topology.build()
    if not isinstance(topology, Topology):
        raise SystemExit(f"kspark run: {target} returned {type(topology).__name__}, not a Topology")
    return topology


_KSPARK_ERROR = re.compile(r"^kspark\.errors\.\w+: (.*)$", re.MULTILINE)
_CAUSED = "\nThe above exception was the direct cause of the following exception:\n"
_FRAME = re.compile(r'^  File "([^"]*)", line \d+, in .*$')
_SPARK_DETAIL = re.compile(r"\n(=== Streaming Query ===|JVM stacktrace:|\tat )")


def _internalFile(path: str) -> bool:
    """Whether a traceback frame is in kspark's or pyspark's own code (not the application's)."""
    roots = [str(Path(__file__).resolve().parent) + os.sep]
    spec = importlib.util.find_spec("pyspark")  # its location (only kspark.spark imports pyspark)
    if spec is not None and spec.origin:
        roots.append(str(Path(spec.origin).resolve().parent) + os.sep)
    try:
        resolved = str(Path(path).resolve())
    except OSError:
        return False
    return resolved.startswith(tuple(roots))


def _userTraceback(block: str) -> str:
    """A Python traceback without the frames of kspark and pyspark (all of it if none is left)."""
    lines = block.strip("\n").splitlines()
    kept, frames, skip = [lines[0]], 0, False
    for line in lines[1:]:
        m = _FRAME.match(line)
        if m is not None:
            skip = _internalFile(m.group(1))
            frames += not skip
        elif not line.startswith("    "):
            skip = False  # the exception's own lines
        if not skip:
            kept.append(line)
    return "\n".join(kept if frames else lines)


def failureReport(error: BaseException | str, verbose: bool = False) -> str:
    """What ``kspark run`` prints when the run fails: kspark's error (for a processor exception
    Kafka's "Exception caught in process. taskId=..., processor=..., topic=..., partition=...,
    offset=..." with the exception), then the application's traceback without kspark's and
    Spark's frames, once, from the failure Spark reports (whose text holds each of them several
    times, with the query's plan). Verbose: Spark's whole report follows."""
    text = str(error)
    found = _KSPARK_ERROR.search(text)
    if found is None:  # not a record's failure: its headline (the Python exception), else Spark's
        # message without the plan and the JVM's stack
        from .spark._kafka_streams import SPARK_REPORT

        cut = _SPARK_DETAIL.search(text)
        report = [text.split(SPARK_REPORT)[0] if SPARK_REPORT in text
                  else text[:cut.start()] if cut is not None else text]
    else:
        head = re.match(r"The streams application \S+ failed: ", text)
        report = [(head.group(0) if head is not None else "") + found.group(1)]
        start = text.find("Traceback (most recent call last):")
        cause = text.find(_CAUSED, start)
        if 0 <= start < found.start() and 0 <= cause < found.start():
            report.append(_userTraceback(text[start:cause]))
    report.append("(Spark's report of the failure: kspark run -v)" if not verbose
                  else "Spark's report of the failure:\n" + text)
    return "\n".join(line.rstrip() for line in report)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kspark", description="Run a kspark application on Spark; "
                                     "create, fill and read its topics.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run module:function's topology", description=__doc__.split("\n\n")[0])
    run.add_argument("target", metavar="module:function", help="a function returning the Topology")
    run.add_argument("--config", "-c", metavar="app.properties", help="Kafka-style properties file")
    run.add_argument("--describe", nargs="?", const="-", metavar="FILE",
                     help="print the topology (or write its picture: .dot, .svg, .png) and exit")
    run.add_argument("--picture", metavar="FILE", help="after the run, write the topology's picture with the run's counters")
    run.add_argument("--progress", choices=("auto", "rich", "plain", "none"), help="progress view (default: auto)")
    run.add_argument("-v", "--verbose", action="store_true", help="show Spark's INFO logs and everything the JVM prints")
    from .cli_topics import addParser

    addParser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "topics":
        from .cli_topics import run as topics

        return topics(args)
    props = readProperties(args.config) if args.config else Properties()
    verbose = args.verbose or props.pop(_VERBOSE, "false").strip().lower() == "true"
    progress = args.progress or props.pop(_PROGRESS, None)
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    if verbose:
        logging.getLogger("kspark").setLevel(logging.DEBUG)
    if progress:
        os.environ["KSPARK_PROGRESS"] = progress
    topology = loadTopology(args.target, props)
    if args.describe == "-":
        from .config import StreamsConfig
        from .spark._takeover import internalTopicsText  # imports no Spark

        print(topology.describe(), end="")  # ends with an empty line
        print(internalTopicsText(topology, StreamsConfig({**props, StreamsConfig.APPLICATION_ID_CONFIG:
                                                          props.get("application.id") or "<application.id>"})), end="")
        return 0
    if args.describe:
        try:
            path = topology.describe().render(args.describe)
        except RuntimeError as e:
            print(f"kspark run: {e}", file=sys.stderr)
            return 1
        print(f"wrote {path}")
        return 0
    return _run(topology, props, args.picture, verbose)  # StreamsConfig parses Kafka's string values


def _run(topology, config: dict[str, str], picture: str | None, verbose: bool = False) -> int:
    from .spark import _quiet
    from .spark._kafka_streams import KafkaStreams

    _quiet.detachJvm = True  # Ctrl-C goes to this process only (see _stop)
    _quiet.reportingFailures = True  # a failure is printed once, below, not by each of Spark's loggers
    stop = threading.Event()

    def onSigint(signum, frame):  # first Ctrl-C: stop cleanly; a second one interrupts at once
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    from .errors import ConfigException

    try:
        streams = KafkaStreams(topology, config)
    except ConfigException as e:  # e.g. "Invalid url in bootstrap.servers: ..." (checked by the clients)
        print(f"kspark run: {e}", file=sys.stderr)
        return 1
    previous = signal.signal(signal.SIGINT, onSigint)
    failure = None
    try:
        streams.start()
        # pyspark's SparkContext installs its own SIGINT handler (cancel all jobs, raise
        # KeyboardInterrupt) when start() creates the session: put this one back
        if not stop.is_set():
            signal.signal(signal.SIGINT, onSigint)
        while not stop.is_set():
            if streams.awaitTermination(0.5):
                break
    except Exception as e:  # noqa: BLE001 - StreamsException, or Spark's StreamingQueryException
        failure = e
        # first, before the summary: what failed, where, and the application's traceback
        from ._secrets import redact

        print(f"kspark run: {redact(failureReport(e, verbose))}", file=sys.stderr, flush=True)
    finally:
        streams.close()  # stops the queries; the live view ends and the summary is printed
        signal.signal(signal.SIGINT, previous)
    if failure is not None:
        return 1
    if picture:
        print(f"wrote {topology.describe().render(picture, streams.metrics())}")
    if stop.is_set():
        print(f"stopped (Ctrl-C): the checkpoint in {streams._stateDir().uri} is intact; the same command resumes the run",
              flush=True)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
