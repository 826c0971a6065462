"""The conformance catalogue: each scenario is a Kafka Streams topology (its Java text is in
``java/conformance/Catalogue.java``, same name, same order) ported line by line the way a user
would port it: positional overloads, Kafka's factories, no serdes where Kafka needs none.

A scenario also says what to feed it (generators of input bytes per topic), which topics to read,
which stores to dump, its config, whether it runs with the record cache on and off, and, when it
fails today for a reason already known, ``xfail``: the FINDINGS.md entry it waits for.
"""

from __future__ import annotations

import random
import struct
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable

from kspark import (
    Branched, Consumed, ContextualProcessor, Printed, EmitStrategy, Grouped, Joined, KeyValue, Materialized, Named,
    Produced, PunctuationType, Record, Repartitioned, Serdes, SessionWindows, Stores, Suppressed, TimeWindows,
    WindowedSerdes,
)

# ------------------------------------------------------------------------------ known differences
# Reasons of the expected failures: the findings written up in FINDINGS.md, one constant each
# (F1 = "FINDINGS F1: ..."), given as a scenario's xfail. A fix turns the scenario into XPASS,
# which fails the run: remove the mark then. (Issue 19's items 1-10 and FINDINGS F1-F18 were
# marked so until fixed; all of them flipped, so no scenario is marked today.)


# ------------------------------------------------------------------------------ input generators
@dataclass(frozen=True)
class Gen:
    """Bytes for one input topic: ``keys(rng)`` and ``values(rng)`` give bytes or None."""

    keys: Callable[[random.Random], bytes | None]
    values: Callable[[random.Random], bytes | None]
    weight: float = 1.0


def keys(choices: str = "abcd", nulls: float = 0.0):
    def gen(rng):
        return None if rng.random() < nulls else rng.choice(choices).encode()
    return gen


def words(alphabet: str = "abcx", maxLen: int = 4, nulls: float = 0.0):
    def gen(rng):
        if rng.random() < nulls:
            return None
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, maxLen))).encode()
    return gen


def stamped(nulls: float = 0.0):
    """"<word>:<ms>" values for the payload timestamp extractor; about one in ten is negative."""
    def gen(rng):
        if rng.random() < nulls:
            return None
        ms = rng.randint(-50, -1) if rng.random() < 0.1 else rng.randint(0, 8000)
        return f"{rng.choice('abc')}:{ms}".encode()
    return gen


def smallLongs():
    """8-byte longs from 0 to 1000: sums stay far from overflow (Java wraps, Python ints grow)."""
    def gen(rng):
        return struct.pack(">q", rng.randint(0, 1000))
    return gen


def serdeBytes(serde: str, bad: float = 0.0):
    """Valid encodings of ``serde``'s type, and now and then a wrong size or invalid text."""
    def gen(rng):
        if rng.random() < 0.04:
            return None
        if serde in ("String",):
            if rng.random() < bad:  # invalid UTF-8: Java decodes it to U+FFFD
                return b"\xff" + rng.choice([b"a", b"\xc3", b""])
            return "".join(rng.choice("aZ9 é€😀") for _ in range(rng.randint(0, 4))).encode()
        if serde == "Void":
            return b"" if rng.random() < bad else None
        size = {"Long": 8, "Integer": 4, "Short": 2, "Float": 4, "Double": 8, "UUID": 36, "Boolean": 1}.get(serde)
        if size is not None and rng.random() < bad:
            return bytes(rng.getrandbits(8) for _ in range(rng.choice([s for s in (0, 1, 3, 5, 9) if s != size])))
        if serde == "UUID":
            return str(uuid.UUID(int=rng.getrandbits(128))).encode()
        if serde == "Boolean":
            return bytes([rng.choice([0, 1])])
        if serde == "Double":
            return struct.pack(">d", rng.choice([0.5, -1.25, 1e300, rng.uniform(-1e6, 1e6)]))
        if serde == "Float":
            return struct.pack(">f", rng.choice([0.5, -1.25, rng.uniform(-1e3, 1e3)]))
        if size is not None:
            return bytes(rng.getrandbits(8) for _ in range(size))
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 6)))  # ByteArray, Bytes, ByteBuffer
    return gen


STREAM = {"in": Gen(keys(nulls=0.05), words(nulls=0.05))}
STREAM_VALUES = {"in": Gen(keys(nulls=0.05), words())}       # no null values
TWO_STREAMS = {"in1": Gen(keys(nulls=0.05), words(nulls=0.05)), "in2": Gen(keys(nulls=0.05), words(nulls=0.05))}
TABLE = {"in": Gen(keys(nulls=0.05), words(nulls=0.15))}  # null values are tombstones
TWO_TABLES = {"in1": Gen(keys(nulls=0.05), words(nulls=0.15)), "in2": Gen(keys(nulls=0.05), words(nulls=0.15))}
# first records of a changelog: deletes of keys the table does not hold (alone, or held by the other side)
TABLE_LEADING = (("in", "a", None),)
TWO_TABLES_LEADING = (("in1", "a", "aa"), ("in2", "a", None), ("in1", "b", None))
STREAM_TABLE = {"in": Gen(keys(nulls=0.05), words(nulls=0.05), 2.0), "tbl": Gen(keys("abcx"), words(nulls=0.1))}
STREAM_GLOBAL = {"in": Gen(keys(nulls=0.05), words(nulls=0.05), 2.0), "glb": Gen(keys("abcx"), words(nulls=0.1))}


def generateSteps(inputs: dict[str, Gen], rng: random.Random, n: int, headers: float = 0.3,
                  leading: tuple = ()) -> list[dict]:
    """``n`` records over ``inputs``' topics by weight, timestamps mostly rising (0-400 ms apart)
    with one in seven going back up to 1.5 s and one in twenty jumping 1-3 s ahead (past window
    and store retention); about ``headers`` of them carry a header; after
    the ``leading`` records ``(topic, key, value)``, at the first timestamp."""
    topics, weights = list(inputs), [g.weight for g in inputs.values()]
    ts, steps = rng.randint(0, 500), []
    for topic, key, value in leading:
        steps.append({"pipe": topic, "k": key.encode().hex(), "v": None if value is None else value.encode().hex(),
                      "ts": ts, "h": []})
    for _ in range(n):
        topic = rng.choices(topics, weights)[0]
        gen = inputs[topic]
        jump = rng.random()
        ts = max(0, ts + (rng.randint(-1500, 0) if jump < 1 / 7 else rng.randint(1000, 3000) if jump > 0.95
                          else rng.randint(0, 400)))
        h = [["h", bytes([rng.getrandbits(8)]).hex()]] if rng.random() < headers else []
        k, v = gen.keys(rng), gen.values(rng)
        steps.append({"pipe": topic, "k": None if k is None else k.hex(), "v": None if v is None else v.hex(),
                      "ts": ts, "h": h})
    return steps


# ------------------------------------------------------------------------------ config
_JAVA_SERDE = "org.apache.kafka.common.serialization.Serdes${}Serde"
_JAVA_CLASSES = {
    "LogAndContinueExceptionHandler": "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler",
    "LogAndContinueProcessingExceptionHandler": "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler",
    "ValueTimestampExtractor": "conformance.Catalogue$ValueTimestampExtractor",
}
DEFAULT_CONFIG = {"default.key.serde": "String", "default.value.serde": "String"}


def javaConfig(config: dict) -> dict:
    """Symbolic config as Kafka's Properties strings (serdes and classes by class name)."""
    out = {}
    for key, value in config.items():
        if key in ("default.key.serde", "default.value.serde") and "." not in str(value):
            value = _JAVA_SERDE.format(value)
        out[key] = _JAVA_CLASSES.get(value, str(value))
    return out


def ksparkConfig(config: dict, raw: bool) -> dict:
    """Symbolic config as a kspark user passes it today: serde and handler objects, int numbers.
    ``raw``: the Kafka application's own strings, unchanged (issue 19 item 7)."""
    if raw:
        return dict(config)
    import kspark

    out: dict[str, Any] = {}
    for key, value in config.items():
        if key in ("default.key.serde", "default.value.serde"):
            value = getattr(Serdes, value)()
        elif value == "ValueTimestampExtractor":
            value = ValueTimestampExtractor()
        elif isinstance(value, str) and hasattr(kspark, value):
            value = getattr(kspark, value)
        elif isinstance(value, str) and value.lstrip("-").isdigit():
            value = int(value)
        out[key] = value
    return out


# ------------------------------------------------------------------------------ scenarios
@dataclass
class Scenario:
    name: str
    java: str
    family: str
    build: Callable
    inputs: dict[str, Gen] = field(default_factory=lambda: STREAM)
    outputs: tuple[str, ...] = ("out",)
    stores: tuple[dict, ...] = ()
    config: dict = field(default_factory=dict)
    rawConfig: bool = False
    params: dict = field(default_factory=dict)
    cached: bool = False       # also run with statestore.cache.max.bytes=0
    xfail: Any = None          # reason records/errors/stores differ today, or {variant: reason}
    xfailDescribe: str | None = None  # reason describe() differs today
    steps: Callable | None = None
    leading: tuple = ()        # (topic, key, value) records before the generated ones
    records: int = 25

    def variants(self) -> list[str]:
        return ["cache", "nocache"] if self.cached else ["default"]

    def xfailReason(self, variant: str) -> str | None:
        return self.xfail.get(variant) if isinstance(self.xfail, dict) else self.xfail

    def describeRequest(self) -> dict:
        """The request whose Kafka result gives this scenario's ``describe()`` (any will do)."""
        return self.request(self.variants()[0], 0)

    def request(self, variant: str, seed: int) -> dict:
        rng = random.Random(f"{self.name}/{seed}")
        steps = self.steps(rng) if self.steps else generateSteps(self.inputs, rng, self.records, leading=self.leading)
        config = dict(self.config) if self.rawConfig else {**DEFAULT_CONFIG, **self.config}
        if variant == "nocache":
            config["statestore.cache.max.bytes"] = "0"
        stores = [dict(s) for s in self.stores]
        return {"id": f"{self.name}|{variant}|{seed}", "scenario": self.java, "params": self.params,
                "config": config, "steps": steps, "outputs": list(self.outputs), "stores": stores}

    def java_request(self, request: dict) -> dict:
        return {**request, "config": request["config"] if self.rawConfig else javaConfig(request["config"])}

    def kspark_config(self, config: dict) -> dict:
        return ksparkConfig(config, self.rawConfig)


CATALOGUE: dict[str, Scenario] = {}


def scenario(name: str, family: str, java: str | None = None, **kw):
    def register(build):
        if name in CATALOGUE:
            raise ValueError(f"duplicate scenario {name}")
        CATALOGUE[name] = Scenario(name, java or name, family, build, **kw)
        return build
    return register


# ------------------------------------------------------------------------------ helpers (as a user writes them)
def wk(w) -> str:
    return f"{w.key()}@{w.window().start()}/{w.window().end()}"


def length(v) -> int:
    return 0 if v is None else len(v)


def orDash(v) -> str:
    return "-" if v is None else str(v)


SECOND = timedelta(milliseconds=1000)
LONGS = Produced.with_(Serdes.String(), Serdes.Long())


class ValueTimestampExtractor:
    """Event time from the value: "<word>:<ms>" gives ms (negative allowed), else the record's timestamp."""

    def extract(self, record, partitionTime):
        v = record.value()
        if isinstance(v, str) and ":" in v:
            return int(v[v.index(":") + 1:])
        return record.timestamp()


class CountingProcessor(ContextualProcessor):
    """Counts records per key in store "counts" and forwards "value#count"."""

    def init(self, context):
        super().init(context)
        self.store = context.getStateStore("counts")

    def process(self, record):
        if record.key() is None:
            return
        old = self.store.get(record.key())
        n = 1 if old is None else old + 1
        self.store.put(record.key(), n)
        self.context().forward(record.withValue(orDash(record.value()) + "#" + str(n)))


def countsStore():
    return Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("counts"), Serdes.String(), Serdes.Long())


# ------------------------------------------------------------------------------ stateless KStream operators
F = "stateless"


@scenario("stream.filter", F)
def _(b, p):
    b.stream("in").filter(lambda k, v: v is not None and len(v) % 2 == 0).to("out")


@scenario("stream.filter.named", F)
def _(b, p):
    b.stream("in").filter(lambda k, v: v is not None and len(v) % 2 == 0, Named.as_("keep-even")).to("out")


@scenario("stream.filterNot", F)
def _(b, p):
    b.stream("in").filterNot(lambda k, v: v is not None and v.startswith("a")).to("out")


@scenario("stream.mapValues", F)
def _(b, p):
    b.stream("in").mapValues(lambda v: None if v is None else v.upper()).to("out")


@scenario("stream.mapValues.withKey", F)
def _(b, p):
    b.stream("in").mapValues(lambda k, v: orDash(k) + ":" + orDash(v)).to("out")


@scenario("stream.mapValues.named", F)
def _(b, p):
    b.stream("in").mapValues(lambda v: None if v is None else v.upper(), Named.as_("upper")).to("out")


@scenario("stream.map", F)
def _(b, p):
    b.stream("in").map(lambda k, v: KeyValue.pair(v, k)).to("out")


@scenario("stream.selectKey", F)
def _(b, p):
    b.stream("in").selectKey(lambda k, v: None if v is None else v[0:1]).to("out")


@scenario("stream.flatMap", F)
def _(b, p):
    def mapper(k, v):
        out = []
        for i in range(length(v) % 3):
            out.append(KeyValue.pair(v[i:i + 1], k))
        return out
    b.stream("in").flatMap(mapper).to("out")


@scenario("stream.flatMapValues", F)
def _(b, p):
    b.stream("in").flatMapValues(lambda v: [] if v is None else list(v)).to("out")


@scenario("stream.flatMapValues.withKey", F)
def _(b, p):
    b.stream("in").flatMapValues(lambda k, v: [orDash(k), orDash(v)]).to("out")


@scenario("stream.peek", F)
def _(b, p):
    b.stream("in").peek(lambda k, v: None).to("out")


@scenario("stream.foreach", F)
def _(b, p):
    s = b.stream("in")
    s.foreach(lambda k, v: None)
    s.to("out")


@scenario("stream.merge", F, inputs=TWO_STREAMS)
def _(b, p):
    a = b.stream("in1")
    a.merge(b.stream("in2")).to("out")


@scenario("stream.merge.named", F, inputs=TWO_STREAMS)
def _(b, p):
    a = b.stream("in1")
    a.merge(b.stream("in2"), Named.as_("both")).to("out")


@scenario("stream.split", F, outputs=("out0", "out1", "out2"))
def _(b, p):
    branches = (b.stream("in")
                .split(Named.as_("s-"))
                .branch(lambda k, v: v is not None and len(v) == 1, Branched.as_("one"))
                .branch(lambda k, v: v is not None and len(v) == 2)
                .defaultBranch())
    branches["s-one"].to("out1")
    branches["s-2"].to("out2")
    branches["s-0"].to("out0")


@scenario("stream.split.functions", F, outputs=("out1", "out2"))
def _(b, p):
    branches = (b.stream("in")
                .split()
                .branch(lambda k, v: v is not None and len(v) == 1,
                        Branched.withFunction(lambda s: s.mapValues(lambda v: v + "!"), "f"))
                .branch(lambda k, v: v is not None and len(v) == 2, Branched.withConsumer(lambda s: s.to("out2")))
                .noDefaultBranch())
    for s in branches.values():
        s.to("out1")


@scenario("stream.split.defaultBranch.named", F, outputs=("out0", "out1"))
def _(b, p):
    branches = (b.stream("in")
                .split(Named.as_("s-"))
                .branch(lambda k, v: v is not None and len(v) == 1, Branched.as_("one"))
                .defaultBranch(Branched.as_("rest")))
    branches["s-one"].to("out1")
    branches["s-rest"].to("out0")


@scenario("stream.multiTopic", F, inputs=TWO_STREAMS)
def _(b, p):
    b.stream(["in1", "in2"]).to("out")


@scenario("stream.pattern", F, inputs=TWO_STREAMS)
def _(b, p):
    import re

    b.stream(re.compile("in[0-9]")).to("out")


@scenario("stream.to.produced", F)
def _(b, p):
    b.stream("in").to("out", Produced.with_(Serdes.String(), Serdes.String()))


@scenario("stream.to.extractor", F, outputs=("out0", "out1"))
def _(b, p):
    b.stream("in").to(lambda k, v, ctx: "out" + str(length(v) % 2))


@scenario("stream.to.extractor.produced", F, outputs=("out0", "out1"))
def _(b, p):
    b.stream("in").to(lambda k, v, ctx: "out" + str(length(v) % 2), Produced.with_(Serdes.String(), Serdes.String()))


@scenario("stream.repartition", F)
def _(b, p):
    b.stream("in").selectKey(lambda k, v: None if v is None else v[0:1]).repartition().to("out")


@scenario("stream.repartition.named", F)
def _(b, p):
    b.stream("in").selectKey(lambda k, v: None if v is None else v[0:1]).repartition(Repartitioned.as_("rp")).to("out")


@scenario("stream.repartition.serdes", F)
def _(b, p):
    b.stream("in").repartition(Repartitioned.with_(Serdes.String(), Serdes.String()).withName("rp")).to("out")


@scenario("stream.repartition.partitions", F)
def _(b, p):
    b.stream("in").repartition(Repartitioned.numberOfPartitions(1).withName("rp")).to("out")


@scenario("stream.print", F)
def _(b, p):
    s = b.stream("in")
    s.print(Printed.toFile(p["tmpdir"] + "/print.txt").withLabel("lbl"))
    s.to("out")


@scenario("stream.print.mapper", F)
def _(b, p):
    s = b.stream("in")
    s.print(Printed.toFile(p["tmpdir"] + "/print.txt")
            .withKeyValueMapper(lambda k, v: orDash(k) + "=" + orDash(v)).withName("printer"))
    s.to("out")


@scenario("stream.multiTopic.consumed", F, inputs=TWO_STREAMS)
def _(b, p):
    b.stream(["in1", "in2"], Consumed.with_(Serdes.String(), Serdes.String())).to("out")


# ------------------------------------------------------------------------------ Processor API
F = "processor"
COUNTS = ({"name": "counts", "kind": "kv"},)


@scenario("process.stateful", F, stores=COUNTS)
def _(b, p):
    b.addStateStore(countsStore())
    b.stream("in").process(CountingProcessor, "counts").to("out")


@scenario("process.named", F, stores=COUNTS)
def _(b, p):
    b.addStateStore(countsStore())
    b.stream("in").process(CountingProcessor, Named.as_("counter"), "counts").to("out")


@scenario("processValues", F, stores=COUNTS)
def _(b, p):
    from kspark.processor import ContextualFixedKeyProcessor

    class Numbering(ContextualFixedKeyProcessor):
        def init(self, context):
            super().init(context)
            self.store = context.getStateStore("counts")

        def process(self, record):
            key = "-" if record.key() is None else record.key()
            old = self.store.get(key)
            n = 1 if old is None else old + 1
            self.store.put(key, n)
            self.context().forward(record.withValue(orDash(record.value()) + "#" + str(n)))

    b.addStateStore(countsStore())
    b.stream("in").processValues(Numbering, "counts").to("out")


@scenario("process.metadata", F)
def _(b, p):
    class Metadata(ContextualProcessor):
        def process(self, record):
            md = self.context().recordMetadata()
            text = "none" if md is None else f"{md.topic()}/{md.partition()}/{md.offset()}"
            self.context().forward(record.withValue(text + "/" + str(record.timestamp())))

    b.stream("in").process(Metadata).to("out")


@scenario("process.headers", F)
def _(b, p):
    from kspark.processor import RecordHeader

    class AddHeader(ContextualProcessor):
        def process(self, record):
            out = record.withHeaders(record.headers())
            out.headers().add(RecordHeader("len", str(length(record.value())).encode()))
            self.context().forward(out)

    b.stream("in").process(AddHeader).to("out")


class Ticker(ContextualProcessor):
    """Counts records; every second of ``type`` time forwards "<time>:<count>" under key ``key``."""

    def __init__(self, type, key):
        self.type, self.key = type, key

    def init(self, context):
        super().init(context)
        self.seen = 0
        context.schedule(SECOND, self.type, lambda t: context.forward(Record(self.key, f"{t}:{self.seen}", t)))

    def process(self, record):
        self.seen += 1


@scenario("process.punctuate.streamTime", F)
def _(b, p):
    b.stream("in").process(lambda: Ticker(PunctuationType.STREAM_TIME, "tick")).to("out")


def _wallClockSteps(rng):
    steps = generateSteps(STREAM, rng, 20)
    for i in sorted(rng.sample(range(len(steps)), 6), reverse=True):
        steps.insert(i, {"advance": rng.choice([300, 700, 1000, 2500])})
    return steps


@scenario("process.punctuate.wallClock", F, steps=_wallClockSteps)
def _(b, p):
    b.stream("in").process(lambda: Ticker(PunctuationType.WALL_CLOCK_TIME, "wall")).to("out")


@scenario("process.supplier.stores", F, stores=COUNTS)
def _(b, p):
    class CountingSupplier:
        def get(self):
            return CountingProcessor()

        def stores(self):
            return {countsStore()}

    b.stream("in").process(CountingSupplier()).to("out")


# ------------------------------------------------------------------------------ built-in serdes
F = "serde"
SERDES = ("String", "Long", "Integer", "Double", "ByteArray", "Float", "UUID", "Void", "Short", "Boolean", "Bytes",
          "ByteBuffer")


def _serde(name: str):
    return getattr(Serdes, name)()


for _name in SERDES:
    _inputs = {"in": Gen(serdeBytes(_name), serdeBytes(_name))}

    @scenario(f"serde.produced[{_name}]", F, java="serde.produced", params={"serde": _name}, inputs=_inputs)
    def _(b, p):
        s = _serde(p["serde"])
        b.stream("in", Consumed.with_(s, s)).to("out", Produced.with_(s, s))

    @scenario(f"serde.inherit[{_name}]", F, java="serde.inherit", params={"serde": _name}, inputs=_inputs)
    def _(b, p):
        s = _serde(p["serde"])
        b.stream("in", Consumed.with_(s, s)).to("out")

    @scenario(f"serde.inherit.filter[{_name}]", F, java="serde.inherit.filter", params={"serde": _name},
              inputs=_inputs)
    def _(b, p):
        s = _serde(p["serde"])
        b.stream("in", Consumed.with_(s, s)).filter(lambda k, v: True).to("out")


@scenario("serde.invalidUtf8", F, java="serde.produced", params={"serde": "String"},
          inputs={"in": Gen(keys(), serdeBytes("String", bad=0.3))})
def _(b, p):
    s = _serde(p["serde"])
    b.stream("in", Consumed.with_(s, s)).to("out", Produced.with_(s, s))


# ------------------------------------------------------------------------------ KGroupedStream aggregations
F = "aggregate"
AGG = dict(cached=True, inputs=STREAM)


@scenario("count", F, **AGG)
def _(b, p):
    b.stream("in").groupByKey().count().toStream().to("out")


@scenario("count.produced", F, stores=({"name": "KSTREAM-AGGREGATE-STATE-STORE-0000000001", "kind": "tkv"},), **AGG)
def _(b, p):
    b.stream("in").groupByKey().count().toStream().to("out", LONGS)


@scenario("count.named", F, **AGG)
def _(b, p):
    b.stream("in").groupByKey().count(Named.as_("cnt")).toStream().to("out", LONGS)


@scenario("count.materialized", F, stores=({"name": "cnt-store", "kind": "tkv"},), **AGG)
def _(b, p):
    b.stream("in").groupByKey().count(Materialized.as_("cnt-store")).toStream().to("out", LONGS)


@scenario("count.named.materialized", F, stores=({"name": "cnt-store", "kind": "tkv"},), **AGG)
def _(b, p):
    b.stream("in").groupByKey().count(Named.as_("cnt"), Materialized.as_("cnt-store")).toStream().to("out", LONGS)


@scenario("count.groupBy", F, **AGG)
def _(b, p):
    (b.stream("in").groupBy(lambda k, v: v, Grouped.with_(Serdes.String(), Serdes.String())).count().toStream()
     .to("out", LONGS))


@scenario("count.groupBy.named", F, **AGG)
def _(b, p):
    b.stream("in").groupBy(lambda k, v: v, Grouped.as_("by-value")).count().toStream().to("out", LONGS)


@scenario("count.groupBy.grouped3", F, **AGG)
def _(b, p):
    (b.stream("in").groupBy(lambda k, v: v, Grouped.with_("by-value", Serdes.String(), Serdes.String())).count()
     .toStream().to("out", LONGS))


@scenario("count.selectKey", F, **AGG)
def _(b, p):
    (b.stream("in").selectKey(lambda k, v: None if v is None else v[0:1]).groupByKey().count().toStream()
     .to("out", LONGS))


@scenario("count.groupByKey.grouped", F, **AGG)
def _(b, p):
    (b.stream("in").selectKey(lambda k, v: None if v is None else v[0:1]).groupByKey(Grouped.as_("regrouped")).count()
     .toStream().to("out", LONGS))


@scenario("count.groupByKey.serdes", F, **AGG)
def _(b, p):
    (b.stream("in").selectKey(lambda k, v: None if v is None else v[0:1])
     .groupByKey(Grouped.with_(Serdes.String(), Serdes.String())).count()
     .toStream().to("out", LONGS))


@scenario("count.twice", F, outputs=("out1", "out2"), **AGG)
def _(b, p):
    g = b.stream("in").groupBy(lambda k, v: None if v is None else v[0:1], Grouped.as_("first"))
    g.count().toStream().to("out1", LONGS)
    g.count(Named.as_("second")).toStream().to("out2", LONGS)


@scenario("reduce", F, **AGG)
def _(b, p):
    b.stream("in").groupByKey().reduce(lambda a, v: a + "+" + orDash(v)).toStream().to("out")


@scenario("reduce.materialized", F, stores=({"name": "red-store", "kind": "tkv"},), **AGG)
def _(b, p):
    b.stream("in").groupByKey().reduce(lambda a, v: a + "+" + orDash(v), Materialized.as_("red-store")).toStream().to("out")


@scenario("reduce.named.materialized", F, stores=({"name": "red-store", "kind": "tkv"},), **AGG)
def _(b, p):
    (b.stream("in").groupByKey().reduce(lambda a, v: a + "+" + orDash(v), Named.as_("red"), Materialized.as_("red-store"))
     .toStream().to("out"))


@scenario("reduce.grouped.serde", F, inputs={"in": Gen(keys(nulls=0.05), smallLongs())}, cached=True)
def _(b, p):
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long()))
     .groupBy(lambda k, v: k, Grouped.with_(Serdes.String(), Serdes.Long())).reduce(lambda a, v: a + v).toStream()
     .to("out"))


@scenario("aggregate", F, **AGG)
def _(b, p):
    b.stream("in").groupByKey().aggregate(lambda: "", lambda k, v, a: a + orDash(v)).toStream().to("out")


@scenario("aggregate.materialized.serdes", F,
          **AGG)
def _(b, p):
    (b.stream("in").groupByKey()
     .aggregate(lambda: 0, lambda k, v, a: a + length(v), Materialized.with_(Serdes.String(), Serdes.Long()))
     .toStream().to("out"))


@scenario("aggregate.materialized.as", F, stores=({"name": "agg-store", "kind": "tkv"},), **AGG)
def _(b, p):
    b.stream("in").groupByKey().aggregate(lambda: "", lambda k, v, a: a + orDash(v), Materialized.as_("agg-store")).toStream().to("out")


@scenario("aggregate.named.materialized", F, stores=({"name": "agg-store", "kind": "tkv"},), **AGG)
def _(b, p):
    (b.stream("in").groupByKey()
     .aggregate(lambda: 0, lambda k, v, a: a + length(v), Named.as_("agg"),
                Materialized.as_("agg-store").withValueSerde(Serdes.Long()))
     .toStream().to("out", LONGS))


@scenario("aggregate.list.mutated", F, stores=({"name": "lists", "kind": "tkv"},), **{**AGG, "inputs": {"in": Gen(keys(), words())}})
def _(b, p):
    def add(k, v, lst):
        lst.append(v)
        return lst

    def mark(lst):
        lst.append("!")
        return ",".join(lst)

    (b.stream("in").groupByKey()
     .aggregate(lambda: [], add, Named.as_("agg"), Materialized.as_("lists").withValueSerde(Serdes.ListSerde(list, Serdes.String())))
     .toStream().mapValues(mark).to("out"))


@scenario("count.cachingDisabled", F, stores=({"name": "cnt-store", "kind": "tkv"},), **AGG)
def _(b, p):
    (b.stream("in").groupByKey().count(Named.as_("cnt"), Materialized.as_("cnt-store").withCachingDisabled())
     .toStream().to("out", LONGS))


@scenario("count.loggingDisabled", F, stores=({"name": "cnt-store", "kind": "tkv"},), **AGG)
def _(b, p):
    (b.stream("in").groupByKey().count(Named.as_("cnt"), Materialized.as_("cnt-store").withLoggingDisabled())
     .toStream().to("out", LONGS))


@scenario("count.recordContext", F, **AGG)
def _(b, p):
    class Context(ContextualProcessor):
        def process(self, record):
            md = "some" if self.context().recordMetadata() is not None else "none"
            self.context().forward(record.withValue(md + ":" + str(record.value())))

    b.stream("in").groupByKey().count().toStream().process(Context).to("out")


# ------------------------------------------------------------------------------ time windows
F = "timeWindows"
WIN = dict(cached=True, inputs=STREAM)
WSTORE = ({"name": "wstore", "kind": "twindow"},)


@scenario("wcount", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND)).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("wcount.inherit", F, **WIN)
def _(b, p):
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND)).count().toStream().to("out"))


@scenario("wcount.windowedSerde", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND)).count().toStream()
     .to("out", Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(str, 1000), Serdes.Long())))


@scenario("wcount.hopping", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey()
     .windowedBy(TimeWindows.ofSizeAndGrace(SECOND, timedelta(milliseconds=500)).advanceBy(timedelta(milliseconds=250)))
     .count().toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("wcount.grace", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(SECOND, timedelta(milliseconds=2000)))
     .count().toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("wcount.named", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND)).count(Named.as_("wc")).toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("wcount.materialized", F, stores=WSTORE, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND)).count(Materialized.as_("wstore"))
     .toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("wcount.named.materialized", F, stores=WSTORE, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND))
     .count(Named.as_("wc"), Materialized.as_("wstore").withRetention(timedelta(minutes=1)))
     .toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("wcount.emitFinal", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(SECOND, timedelta(milliseconds=500)))
     .emitStrategy(EmitStrategy.onWindowClose()).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


def _expiredBeforeClose(rng):
    return [{"pipe": "in", "k": b"a".hex(), "v": b"x".hex(), "ts": ts, "h": []} for ts in (1456, 3218, 3300)]


@scenario("wcount.emitFinal.expiredInCache", F, java="wcount.emitFinal", steps=_expiredBeforeClose, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(SECOND, timedelta(milliseconds=500)))
     .emitStrategy(EmitStrategy.onWindowClose()).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("wcount.suppress", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(SECOND, timedelta(milliseconds=500)))
     .count(Materialized.with_(Serdes.String(), Serdes.Long()))
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())).toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("wcount.suppress.named", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(SECOND, timedelta(milliseconds=500)))
     .count(Named.as_("wc"), Materialized.with_(Serdes.String(), Serdes.Long()))
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())).toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("wcount.suppress.withName", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(SECOND, timedelta(milliseconds=500)))
     .count(Named.as_("wc"), Materialized.with_(Serdes.String(), Serdes.Long()))
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()).withName("final")).toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("wreduce", F, **{**WIN, "inputs": STREAM_VALUES})
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND)).reduce(lambda a, v: a + "+" + orDash(v))
     .toStream().map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


@scenario("wreduce.materialized", F, stores=({"name": "wr", "kind": "twindow"},),
          **{**WIN, "inputs": STREAM_VALUES})
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND))
     .reduce(lambda a, v: a + "+" + orDash(v), Materialized.as_("wr"))
     .toStream().map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


def _nullFirst(rng):
    return [{"pipe": "in", "k": b"a".hex(), "v": v, "ts": ts, "h": []}
            for v, ts in ((None, 100), (b"x".hex(), 200), (b"y".hex(), 300), (None, 1100), (b"z".hex(), 1200))]


@scenario("wreduce.nullFirst", F, java="wreduce", steps=_nullFirst,
          **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND)).reduce(lambda a, v: a + "+" + orDash(v))
     .toStream().map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


@scenario("waggregate", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey()
     .windowedBy(TimeWindows.ofSizeAndGrace(SECOND, timedelta(milliseconds=300)).advanceBy(timedelta(milliseconds=500)))
     .aggregate(lambda: "", lambda k, v, a: a + orDash(v)).toStream()
     .map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


@scenario("waggregate.named", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND))
     .aggregate(lambda: "", lambda k, v, a: a + orDash(v), Named.as_("wa")).toStream()
     .map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


@scenario("waggregate.materialized", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND))
     .aggregate(lambda: 0, lambda k, v, a: a + length(v), Materialized.with_(Serdes.String(), Serdes.Long()))
     .toStream().map(lambda w, v: KeyValue.pair(wk(w), v)).to("out", LONGS))


@scenario("waggregate.named.materialized", F, stores=({"name": "wagg-store", "kind": "twindow"},), **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND))
     .aggregate(lambda: 0, lambda k, v, a: a + length(v), Named.as_("wagg"),
                Materialized.as_("wagg-store").withValueSerde(Serdes.Long()))
     .toStream().map(lambda w, v: KeyValue.pair(wk(w), v)).to("out", LONGS))


@scenario("wcount.customWindows", F, **WIN)
def _(b, p):
    from kspark.dsl import TimeWindow, Windows

    class OffsetWindows(Windows):
        def windowsFor(self, timestamp):
            windows = {}
            start = (timestamp - 300) // 1000 * 1000 + 300
            if start >= 0:
                windows[start] = TimeWindow(start, start + 1000)
            return windows

        def size(self):
            return 1000

        def gracePeriodMs(self):
            return 0

    (b.stream("in").groupByKey().windowedBy(OffsetWindows()).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


# ------------------------------------------------------------------------------ session windows
F = "sessionWindows"
GAP = timedelta(milliseconds=500)
SSTORE = ({"name": "sstore", "kind": "session", "probe": list("abcd")},)


@scenario("scount", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(GAP)).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("scount.inherit", F, **WIN)
def _(b, p):
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(GAP)).count().toStream().to("out"))


@scenario("scount.named", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(GAP)).count(Named.as_("sc"))
     .toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("scount.grace", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapAndGrace(GAP, timedelta(milliseconds=1000))).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("scount.emitFinal", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapAndGrace(GAP, timedelta(milliseconds=300)))
     .emitStrategy(EmitStrategy.onWindowClose()).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("scount.suppress", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapAndGrace(GAP, timedelta(milliseconds=300)))
     .count(Materialized.with_(Serdes.String(), Serdes.Long()))
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())).toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("scount.suppress.named", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapAndGrace(GAP, timedelta(milliseconds=300)))
     .count(Named.as_("sc"), Materialized.with_(Serdes.String(), Serdes.Long()))
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())).toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("scount.materialized", F, stores=SSTORE, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(GAP))
     .count(Materialized.as_("sstore")).toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("scount.named.materialized", F, stores=SSTORE, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(GAP))
     .count(Named.as_("sc"), Materialized.as_("sstore")).toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("sreduce", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(GAP))
     .reduce(lambda a, v: a + "+" + orDash(v)).toStream().map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


@scenario("sreduce.named", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(GAP))
     .reduce(lambda a, v: a + "+" + orDash(v), Named.as_("sr")).toStream()
     .map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


@scenario("saggregate", F, **WIN)
def _(b, p):
    (b.stream("in").groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapAndGrace(GAP, timedelta(milliseconds=200)))
     .aggregate(lambda: "", lambda k, v, a: a + orDash(v), lambda k, a1, a2: a1 + "|" + a2).toStream()
     .map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


@scenario("saggregate.materialized", F, stores=({"name": "sa", "kind": "session", "probe": list("abcd")},), **WIN)
def _(b, p):
    (b.stream("in").groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapAndGrace(GAP, timedelta(milliseconds=200)))
     .aggregate(lambda: "", lambda k, v, a: a + orDash(v), lambda k, a1, a2: a1 + "|" + a2, Materialized.as_("sa"))
     .toStream().map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


# ------------------------------------------------------------------------------ KTable
F = "table"
TBL = dict(cached=True, inputs=TABLE, leading=TABLE_LEADING)
TBL2 = dict(cached=True, inputs=TWO_TABLES, leading=TWO_TABLES_LEADING)


@scenario("table.toStream", F, **TBL)
def _(b, p):
    b.table("in").toStream().to("out")


@scenario("table.consumed", F, **TBL)
def _(b, p):
    b.table("in", Consumed.with_(Serdes.String(), Serdes.String())).toStream().to("out")


@scenario("table.materialized", F, stores=({"name": "t", "kind": "tkv"},), **TBL)
def _(b, p):
    b.table("in", Materialized.as_("t")).toStream().to("out")


@scenario("table.consumed.materialized", F, stores=({"name": "t", "kind": "tkv"},), **TBL)
def _(b, p):
    b.table("in", Consumed.with_(Serdes.String(), Serdes.String()), Materialized.as_("t")).toStream().to("out")


@scenario("table.filter", F, **TBL)
def _(b, p):
    b.table("in").filter(lambda k, v: len(v) > 2).toStream().to("out")


@scenario("table.filter.named", F, **TBL)
def _(b, p):
    b.table("in").filter(lambda k, v: len(v) > 2, Named.as_("flt")).toStream().to("out")


@scenario("table.filter.materialized", F, stores=({"name": "f", "kind": "tkv"},), **TBL)
def _(b, p):
    b.table("in").filter(lambda k, v: len(v) > 2, Materialized.as_("f")).toStream().to("out")


@scenario("table.filter.named.materialized", F, stores=({"name": "f", "kind": "tkv"},), **TBL)
def _(b, p):
    b.table("in").filter(lambda k, v: len(v) > 2, Named.as_("flt"), Materialized.as_("f")).toStream().to("out")


@scenario("table.filterNot", F, **TBL)
def _(b, p):
    b.table("in").filterNot(lambda k, v: v.startswith("a")).toStream().to("out")


@scenario("table.mapValues", F, **TBL)
def _(b, p):
    b.table("in").mapValues(lambda v: v.upper()).toStream().to("out")


@scenario("table.mapValues.withKey", F, **TBL)
def _(b, p):
    b.table("in").mapValues(lambda k, v: k + "=" + v).toStream().to("out")


@scenario("table.mapValues.materialized", F, stores=({"name": "mv", "kind": "tkv"},), **TBL)
def _(b, p):
    b.table("in").mapValues(lambda v: v.upper(), Materialized.as_("mv")).toStream().to("out")


@scenario("table.mapValues.named.materialized", F, stores=({"name": "mv", "kind": "tkv"},), **TBL)
def _(b, p):
    b.table("in").mapValues(lambda v: v.upper(), Named.as_("up"), Materialized.as_("mv")).toStream().to("out")


@scenario("table.toStream.mapper", F, **TBL)
def _(b, p):
    b.table("in").toStream(lambda k, v: k + "!").to("out")


@scenario("table.toStream.named", F, **TBL)
def _(b, p):
    b.table("in").toStream(Named.as_("changes")).to("out")


@scenario("table.toStream.mapper.named", F, **TBL)
def _(b, p):
    b.table("in").toStream(lambda k, v: k + "!", Named.as_("changes")).to("out")


@scenario("table.groupBy.count", F, **TBL)
def _(b, p):
    b.table("in").groupBy(lambda k, v: KeyValue.pair(v[0:1], v)).count().toStream().to("out", LONGS)


@scenario("table.groupBy.count.materialized", F, stores=({"name": "tc", "kind": "tkv"},), **TBL)
def _(b, p):
    b.table("in").groupBy(lambda k, v: KeyValue.pair(v[0:1], v)).count(Materialized.as_("tc")).toStream().to("out", LONGS)


@scenario("table.groupBy.count.named", F, **TBL)
def _(b, p):
    b.table("in").groupBy(lambda k, v: KeyValue.pair(v[0:1], v)).count(Named.as_("cnt")).toStream().to("out", LONGS)


@scenario("table.groupBy.reduce", F, **TBL)
def _(b, p):
    (b.table("in").groupBy(lambda k, v: KeyValue.pair(v[0:1], v), Grouped.as_("by-first"))
     .reduce(lambda a, v: a + "+" + orDash(v), lambda a, v: a + "-" + v).toStream().to("out"))


@scenario("table.groupBy.reduce.materialized", F, stores=({"name": "tr", "kind": "tkv"},),
          **TBL)
def _(b, p):
    (b.table("in").groupBy(lambda k, v: KeyValue.pair(v[0:1], v))
     .reduce(lambda a, v: a + "+" + v, lambda a, v: a + "-" + v, Materialized.as_("tr")).toStream().to("out"))


@scenario("table.groupBy.aggregate", F,
          **TBL)
def _(b, p):
    (b.table("in").groupBy(lambda k, v: KeyValue.pair(v[0:1], v))
     .aggregate(lambda: 0, lambda k, v, a: a + len(v), lambda k, v, a: a - len(v),
                Materialized.with_(Serdes.String(), Serdes.Long()))
     .toStream().to("out"))


@scenario("table.groupBy.aggregate.named.materialized", F, stores=({"name": "sum-store", "kind": "tkv"},), **TBL)
def _(b, p):
    (b.table("in").groupBy(lambda k, v: KeyValue.pair(v[0:1], v))
     .aggregate(lambda: 0, lambda k, v, a: a + len(v), lambda k, v, a: a - len(v), Named.as_("sum"),
                Materialized.as_("sum-store").withValueSerde(Serdes.Long()))
     .toStream().to("out", LONGS))


@scenario("table.join", F, **TBL2)
def _(b, p):
    left = b.table("in1")
    left.join(b.table("in2"), lambda a, c: a + "|" + c).toStream().to("out")


@scenario("table.leftJoin", F, **TBL2)
def _(b, p):
    left = b.table("in1")
    left.leftJoin(b.table("in2"), lambda a, c: a + "|" + orDash(c)).toStream().to("out")


@scenario("table.outerJoin", F, **TBL2)
def _(b, p):
    left = b.table("in1")
    left.outerJoin(b.table("in2"), lambda a, c: orDash(a) + "|" + orDash(c)).toStream().to("out")


@scenario("table.join.named", F, **TBL2)
def _(b, p):
    left = b.table("in1")
    left.join(b.table("in2"), lambda a, c: a + "|" + c, Named.as_("jn")).toStream().to("out")


@scenario("table.join.materialized", F, stores=({"name": "j", "kind": "tkv"},), **TBL2)
def _(b, p):
    left = b.table("in1")
    left.join(b.table("in2"), lambda a, c: a + "|" + c, Materialized.as_("j")).toStream().to("out")


@scenario("table.join.named.materialized", F, stores=({"name": "j", "kind": "tkv"},), **TBL2)
def _(b, p):
    left = b.table("in1")
    left.join(b.table("in2"), lambda a, c: a + "|" + c, Named.as_("jn"), Materialized.as_("j")).toStream().to("out")


@scenario("table.suppress.timeLimit", F, **TBL)
def _(b, p):
    (b.table("in").suppress(Suppressed.untilTimeLimit(SECOND, Suppressed.BufferConfig.unbounded()))
     .toStream().to("out"))


@scenario("table.suppress.maxRecords", F, **TBL)
def _(b, p):
    (b.table("in")
     .suppress(Suppressed.untilTimeLimit(SECOND, Suppressed.BufferConfig.maxRecords(2).emitEarlyWhenFull()))
     .toStream().to("out"))


@scenario("count.suppress.maxBytes", F, **AGG)
def _(b, p):
    (b.stream("in").groupByKey().count()
     .suppress(Suppressed.untilTimeLimit(timedelta(milliseconds=2000),
                                         Suppressed.BufferConfig.maxBytes(120).emitEarlyWhenFull()))
     .toStream().to("out", LONGS))


@scenario("toTable", F, **TBL)
def _(b, p):
    b.stream("in").toTable().toStream().to("out")


@scenario("toTable.named", F, **TBL)
def _(b, p):
    b.stream("in").toTable(Named.as_("as-table")).toStream().to("out")


@scenario("toTable.materialized", F, stores=({"name": "tt", "kind": "tkv"},), **TBL)
def _(b, p):
    b.stream("in").toTable(Materialized.as_("tt")).toStream().to("out")


@scenario("toTable.named.materialized", F, stores=({"name": "tt", "kind": "tkv"},), **TBL)
def _(b, p):
    b.stream("in").toTable(Named.as_("as-table"), Materialized.as_("tt")).toStream().to("out")


@scenario("toTable.rekeyed", F, **TBL)
def _(b, p):
    b.stream("in").selectKey(lambda k, v: None if v is None else v[0:1]).toTable().toStream().to("out")


# ------------------------------------------------------------------------------ stream-table and global joins
F = "join"
JOIN = dict(cached=True, inputs=STREAM_TABLE)
GJOIN = dict(inputs=STREAM_GLOBAL)


@scenario("sjoin.table", F, **JOIN)
def _(b, p):
    t = b.table("tbl")
    b.stream("in").join(t, lambda v, tv: v + "|" + tv).to("out")


@scenario("sleftJoin.table", F, **JOIN)
def _(b, p):
    t = b.table("tbl")
    b.stream("in").leftJoin(t, lambda v, tv: v + "|" + orDash(tv)).to("out")


@scenario("sjoin.table.withKey", F, **JOIN)
def _(b, p):
    t = b.table("tbl")
    b.stream("in").join(t, lambda k, v, tv: k + ":" + v + "|" + tv).to("out")


@scenario("sjoin.table.joined", F, **JOIN)
def _(b, p):
    t = b.table("tbl")
    (b.stream("in").selectKey(lambda k, v: None if v is None else v[0:1])
     .join(t, lambda v, tv: v + "|" + tv, Joined.with_(Serdes.String(), Serdes.String(), Serdes.String(), "jn"))
     .to("out"))


@scenario("sjoin.table.rekeyed", F, **JOIN)
def _(b, p):
    t = b.table("tbl")
    b.stream("in").selectKey(lambda k, v: None if v is None else v[0:1]).join(t, lambda v, tv: v + "|" + tv).to("out")


@scenario("sjoin.global", F, **GJOIN)
def _(b, p):
    g = b.globalTable("glb")
    b.stream("in").join(g, lambda k, v: None if v is None else v[0:1], lambda v, gv: v + "|" + gv).to("out")


@scenario("sleftJoin.global", F, **GJOIN)
def _(b, p):
    g = b.globalTable("glb")
    (b.stream("in").leftJoin(g, lambda k, v: None if v is None else v[0:1], lambda v, gv: v + "|" + orDash(gv))
     .to("out"))


@scenario("sjoin.global.named", F, stores=({"name": "g-store", "kind": "tkv"},), **GJOIN)
def _(b, p):
    g = b.globalTable("glb", Materialized.as_("g-store"))
    (b.stream("in").join(g, lambda k, v: None if v is None else v[0:1], lambda k, v, gv: orDash(k) + ":" + v + "|" + gv,
                         Named.as_("gj")).to("out"))


@scenario("sjoin.global.consumed", F, **GJOIN)
def _(b, p):
    g = b.globalTable("glb", Consumed.with_(Serdes.String(), Serdes.String()))
    b.stream("in").join(g, lambda k, v: None if v is None else v[0:1], lambda v, gv: v + "|" + gv).to("out")


@scenario("sjoin.global.consumed.materialized", F, stores=({"name": "g-store", "kind": "tkv"},), **GJOIN)
def _(b, p):
    g = b.globalTable("glb", Consumed.with_(Serdes.String(), Serdes.String()), Materialized.as_("g-store"))
    (b.stream("in").leftJoin(g, lambda k, v: None if v is None else v[0:1], lambda v, gv: v + "|" + orDash(gv))
     .to("out"))


@scenario("globalStore", F, stores=({"name": "gstore", "kind": "kv"},), **GJOIN)
def _(b, p):
    class GlobalUpdater(ContextualProcessor):
        def init(self, context):
            super().init(context)
            self.store = context.getStateStore("gstore")

        def process(self, record):
            if record.key() is None:
                return
            if record.value() is None:
                self.store.delete(record.key())
            else:
                self.store.put(record.key(), record.value())

    class Lookup(ContextualProcessor):
        def init(self, context):
            super().init(context)
            self.store = context.getStateStore("gstore")

        def process(self, record):
            found = None if record.key() is None else self.store.get(record.key())
            self.context().forward(record.withValue(orDash(record.value()) + "|" + orDash(found)))

    b.addGlobalStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("gstore"), Serdes.String(),
                                                 Serdes.String()).withLoggingDisabled(),
                     "glb", Consumed.with_(Serdes.String(), Serdes.String()), GlobalUpdater)
    b.stream("in").process(Lookup).to("out")


# ------------------------------------------------------------------------------ failure modes
F = "failure"
LONG_VALUES = {"in": Gen(keys(), serdeBytes("Long", bad=0.2))}


@scenario("fail.deserialization", F, inputs=LONG_VALUES)
def _(b, p):
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).to("out", Produced.with_(Serdes.String(), Serdes.Long()))


@scenario("fail.deserialization.continue", F, java="fail.deserialization", inputs=LONG_VALUES,
          config={"default.deserialization.exception.handler": "LogAndContinueExceptionHandler"})
def _(b, p):
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).to("out", Produced.with_(Serdes.String(), Serdes.Long()))


@scenario("fail.processing", F)
def _(b, p):
    def check(v):
        if v is not None and v.startswith("x"):
            raise RuntimeError("boom " + v)
        return v

    b.stream("in").mapValues(check).to("out")


@scenario("fail.processing.continue", F, java="fail.processing",
          config={"processing.exception.handler": "LogAndContinueProcessingExceptionHandler"})
def _(b, p):
    def check(v):
        if v is not None and v.startswith("x"):
            raise RuntimeError("boom " + v)
        return v

    b.stream("in").mapValues(check).to("out")


@scenario("fail.sink.wrongSerde", F, inputs={"in": Gen(keys(), serdeBytes("Long", bad=0))})
def _(b, p):
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).mapValues(lambda v: v).to("out")


@scenario("fail.extractor.negative", F, inputs={"in": Gen(keys(), stamped())})
def _(b, p):
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String()).withTimestampExtractor(ValueTimestampExtractor()))
     .to("out"))


@scenario("fail.extractor.consumedWith", F, inputs={"in": Gen(keys(), stamped())})
def _(b, p):
    b.stream("in", Consumed.with_(ValueTimestampExtractor())).to("out")


@scenario("fail.suppress.notWindowed", F, inputs=TABLE)
def _(b, p):
    b.table("in").suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())).toStream().to("out")


@scenario("fail.store.notConnected", F)
def _(b, p):
    b.addStateStore(countsStore())
    b.stream("in").process(CountingProcessor).to("out")


@scenario("fail.flatMap.null", F)
def _(b, p):
    b.stream("in").flatMap(lambda k, v: None if v is not None and v.startswith("x") else [KeyValue.pair(k, v)]).to("out")


@scenario("fail.suppress.shutDown", F, inputs=TABLE)
def _(b, p):
    (b.table("in")
     .suppress(Suppressed.untilTimeLimit(SECOND, Suppressed.BufferConfig.maxRecords(1).shutDownWhenFull()))
     .toStream().to("out"))


@scenario("fail.join.gracePeriod", F, inputs=STREAM_TABLE)
def _(b, p):
    t = b.table("tbl")
    (b.stream("in").join(t, lambda v, tv: v + "|" + tv,
                         Joined.with_(Serdes.String(), Serdes.String(), Serdes.String())
                         .withGracePeriod(timedelta(milliseconds=100)))
     .to("out"))


@scenario("fail.timeWindows.zeroSize", F)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(timedelta(0))).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("fail.sessionWindows.zeroGap", F)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(timedelta(0))).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("fail.sessionWindows.negativeGap", F)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(timedelta(milliseconds=-1)))
     .count().toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("fail.retention.tooSmall", F)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND))
     .count(Named.as_("wc"), Materialized.as_("w-store").withRetention(timedelta(milliseconds=500)))
     .toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("extractor.default.repartition", F, inputs={"in": Gen(keys(), stamped())},
          config={"default.timestamp.extractor": "ValueTimestampExtractor"}, cached=True)
def _(b, p):
    (b.stream("in").selectKey(lambda k, v: None if v is None else v[0:1]).mapValues(lambda v: None if v is None else v + "0")
     .groupByKey().count().toStream().to("out", LONGS))


@scenario("fail.suppress.defaultSerdes", F, cached=True)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(SECOND, timedelta(milliseconds=500))).count()
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())).toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


# ------------------------------------------------------------------------------ Kafka's configuration (item 7)
F = "config"
KAFKA_APP_CONFIG = {
    "application.id": "app", "bootstrap.servers": "localhost:9092", "client.id": "app-client",
    "commit.interval.ms": "100", "processing.guarantee": "exactly_once_v2", "num.stream.threads": "2",
    "auto.offset.reset": "earliest",
    "default.key.serde": "org.apache.kafka.common.serialization.Serdes$StringSerde",
    "default.value.serde": "org.apache.kafka.common.serialization.Serdes$StringSerde",
}


@scenario("config.kafkaApp", F, java="count.produced", rawConfig=True, config=KAFKA_APP_CONFIG, cached=True)
def _(b, p):
    b.stream("in").groupByKey().count().toStream().to("out", LONGS)


@scenario("config.numbersAsStrings", F, java="count.produced", rawConfig=True,
          config={"default.key.serde": "org.apache.kafka.common.serialization.Serdes$StringSerde",
                  "default.value.serde": "org.apache.kafka.common.serialization.Serdes$StringSerde",
                  "statestore.cache.max.bytes": "0", "max.task.idle.ms": "0"})
def _(b, p):
    b.stream("in").groupByKey().count().toStream().to("out", LONGS)


@scenario("config.handlerClassNames", F, java="fail.deserialization", rawConfig=True, inputs=LONG_VALUES,
          config={"default.key.serde": "org.apache.kafka.common.serialization.Serdes$StringSerde",
                  "default.value.serde": "org.apache.kafka.common.serialization.Serdes$StringSerde",
                  "default.deserialization.exception.handler":
                      "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler"})
def _(b, p):
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).to("out", Produced.with_(Serdes.String(), Serdes.Long()))


def _steadySteps(rng):
    """Records 0-400 ms apart: windows close one after another, none expires before it closes."""
    steps, ts = [], 0
    for _ in range(25):
        ts += rng.randint(0, 400)
        steps.append({"pipe": "in", "k": rng.choice("abcd").encode().hex(), "v": b"x".hex(), "ts": ts, "h": []})
    return steps


@scenario("config.emitInterval", F, java="wcount.emitFinal", cached=True, steps=_steadySteps,
          config={"__emit.interval.ms.kstreams.windowed.aggregation__": "0"})
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(SECOND, timedelta(milliseconds=500)))
     .emitStrategy(EmitStrategy.onWindowClose()).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


# ------------------------------------------------------------------------------ store views (item 8)
F = "stores"


@scenario("stores.kv.plain", F, java="count.named.materialized", cached=True,
          stores=({"name": "cnt-store", "kind": "kv"},))
def _(b, p):
    b.stream("in").groupByKey().count(Named.as_("cnt"), Materialized.as_("cnt-store")).toStream().to("out", LONGS)


@scenario("stores.kv.iterator", F, java="count.named.materialized", cached=True,
          stores=({"name": "cnt-store", "kind": "kv-iter"},))
def _(b, p):
    b.stream("in").groupByKey().count(Named.as_("cnt"), Materialized.as_("cnt-store")).toStream().to("out", LONGS)


@scenario("stores.window.plain", F, java="wcount.named.materialized", cached=True,
          stores=({"name": "wstore", "kind": "window"},))
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(SECOND))
     .count(Named.as_("wc"), Materialized.as_("wstore").withRetention(timedelta(minutes=1)))
     .toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


# ------------------------------------------------------------------------------ API forms: static factories, driver overloads
F = "api"


@scenario("api.produced.keySerde", F)
def _(b, p):
    b.stream("in").to("out", Produced.keySerde(Serdes.String()))


@scenario("api.produced.partitioner", F)
def _(b, p):
    b.stream("in").to("out", Produced.with_(Serdes.String(), Serdes.String(), lambda t, k, v, n: {0}))


@scenario("api.grouped.valueSerde", F, cached=True)
def _(b, p):
    b.stream("in").groupBy(lambda k, v: v, Grouped.valueSerde(Serdes.String())).count().toStream().to("out", LONGS)


@scenario("api.consumed.as", F)
def _(b, p):
    b.stream("in", Consumed.as_("source")).to("out")


@scenario("api.table.consumed.as", F, inputs=TABLE)
def _(b, p):
    b.table("in", Consumed.as_("src")).toStream().to("out")


@scenario("api.materialized.storeSupplier", F, stores=({"name": "mem-counts", "kind": "tkv"},), cached=True)
def _(b, p):
    (b.stream("in").groupByKey().count(Named.as_("cnt"), Materialized.as_(Stores.inMemoryKeyValueStore("mem-counts")))
     .toStream().to("out", LONGS))


@scenario("api.serdeFrom", F)
def _(b, p):
    b.stream("in", Consumed.with_(Serdes.serdeFrom(str), Serdes.serdeFrom(str))).to("out", Produced.with_(Serdes.String(), Serdes.String()))


def _driverSteps(form: str, **extra):
    def steps(rng):
        out = []
        for _ in range(6):
            value = "".join(rng.choice("abc") for _ in range(rng.randint(1, 3)))
            out.append({"pipe": "in", "form": form, "key": rng.choice("ab"), "value": value,
                        "ts": rng.randint(0, 5000), "start": 1000, "autoAdvance": 10,
                        "values": [value, value + "!"], "keyValues": [["a", value], ["b", value + "?"]],
                        "advanceMs": 7, **extra})
        return out
    return steps


for _form in ("value", "keyValue", "valueInstant", "keyValueInstant", "keyValueLong", "valueList", "valueListTimed",
              "keyValueList", "keyValueListTimed"):
    @scenario(f"driver.{_form}", "driver", java="api.passThrough", steps=_driverSteps(_form))
    def _(b, p):
        b.stream("in").to("out")


from . import catalogue_dsl20  # noqa: E402,F401  (issue 20's operators register here)
from . import catalogue_issue36  # noqa: E402,F401  (issue 36's classes of input register here)
