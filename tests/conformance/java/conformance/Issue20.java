package conformance;

import static conformance.Catalogue.orDash;
import static conformance.Catalogue.sb;
import static conformance.Catalogue.wk;

import conformance.Harness.Scenario;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Issue 20's operators as a Kafka Streams user writes them: stream-stream joins, sliding windows,
 * cogroup, foreign-key table-table joins, versioned tables. Twins of the same names in
 * tests/conformance/catalogue_dsl20.py, in the same order.
 */
final class Issue20 {
    private Issue20() {
    }

    static Duration ms(final long v) {
        return Duration.ofMillis(v);
    }

    static final Produced<String, Long> LONGS = Produced.with(Serdes.String(), Serdes.Long());

    static void all(final Map<String, Scenario> m) {
        streamJoins(m);
        slidingWindows(m);
        cogroups(m);
        fkJoins(m);
        versioned(m);
        queries(m);
    }

    // ------------------------------------------------------------------ stream-stream joins
    @SuppressWarnings("deprecation")
    static void streamJoins(final Map<String, Scenario> m) {
        m.put("ssjoin.join", p -> sb(b -> {
            final KStream<String, String> left = b.stream("in1");
            left.join(b.<String, String>stream("in2"), (a, c) -> a + "+" + c, JoinWindows.ofTimeDifferenceWithNoGrace(ms(500)))
                .to("out");
        }));
        m.put("ssjoin.leftJoin", p -> sb(b -> {
            final KStream<String, String> left = b.stream("in1");
            left.leftJoin(b.<String, String>stream("in2"), (a, c) -> a + "+" + orDash(c),
                JoinWindows.ofTimeDifferenceAndGrace(ms(500), ms(200))).to("out");
        }));
        m.put("ssjoin.outerJoin", p -> sb(b -> {
            final KStream<String, String> left = b.stream("in1");
            left.outerJoin(b.<String, String>stream("in2"), (a, c) -> orDash(a) + "+" + orDash(c),
                JoinWindows.ofTimeDifferenceAndGrace(ms(500), ms(300))).to("out");
        }));
        m.put("ssjoin.join.beforeAfter", p -> sb(b -> {
            final KStream<String, String> left = b.stream("in1");
            left.join(b.<String, String>stream("in2"), (a, c) -> a + "+" + c,
                JoinWindows.ofTimeDifferenceWithNoGrace(ms(300)).before(ms(100)).after(ms(700))).to("out");
        }));
        m.put("ssjoin.leftJoin.of", p -> sb(b -> {
            final KStream<String, String> left = b.stream("in1");
            left.leftJoin(b.<String, String>stream("in2"), (a, c) -> a + "+" + orDash(c), JoinWindows.of(ms(500)))
                .to("out");
        }));
        m.put("ssjoin.outerJoin.withKey", p -> sb(b -> {
            final KStream<String, String> left = b.stream("in1");
            left.outerJoin(b.<String, String>stream("in2"), (k, a, c) -> orDash(k) + ":" + orDash(a) + "+" + orDash(c),
                JoinWindows.ofTimeDifferenceWithNoGrace(ms(400))).to("out");
        }));
        m.put("ssjoin.self", p -> sb(b -> {
            final KStream<String, String> s = b.stream("in1");
            s.join(s, (a, c) -> a + "+" + c, JoinWindows.ofTimeDifferenceWithNoGrace(ms(300))).to("out");
        }));
        m.put("ssjoin.streamJoined", p -> sb(b -> {
            final KStream<String, String> left = b.stream("in1");
            left.outerJoin(b.<String, String>stream("in2"), (a, c) -> orDash(a) + "+" + orDash(c),
                JoinWindows.ofTimeDifferenceAndGrace(ms(500), ms(100)),
                StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String()).withName("sj").withStoreName("st"))
                .to("out");
        }));
        m.put("ssjoin.suppliers", p -> sb(b -> {
            final KStream<String, String> left = b.stream("in1");
            left.leftJoin(b.<String, String>stream("in2"), (a, c) -> a + "+" + orDash(c),
                JoinWindows.ofTimeDifferenceAndGrace(ms(500), ms(100)),
                StreamJoined.<String, String, String>with(
                    Stores.inMemoryWindowStore("this-s", ms(1100), ms(1000), true),
                    Stores.inMemoryWindowStore("other-s", ms(1100), ms(1000), true))).to("out");
        }));
        m.put("ssjoin.rekeyed", p -> sb(b -> {
            final KStream<String, String> left = b.<String, String>stream("in1").selectKey((k, v) -> v == null ? null : v.substring(0, 1));
            final KStream<String, String> right = b.<String, String>stream("in2").selectKey((k, v) -> v == null ? null : v.substring(0, 1));
            left.leftJoin(right, (a, c) -> a + "+" + orDash(c), JoinWindows.ofTimeDifferenceWithNoGrace(ms(500))).to("out");
        }));
    }

    // ------------------------------------------------------------------ sliding windows
    static void slidingWindows(final Map<String, Scenario> m) {
        m.put("sliding.count", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(ms(500))).count()
            .toStream().map((w, c) -> KeyValue.pair(wk(w), c)).to("out", LONGS)));
        m.put("sliding.count.grace", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(300))).count()
            .toStream().map((w, c) -> KeyValue.pair(wk(w), c)).to("out", LONGS)));
        m.put("sliding.reduce", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(400), ms(200))).reduce((a, v) -> a + "+" + v)
            .toStream().map((w, v) -> KeyValue.pair(wk(w), v)).to("out")));
        m.put("sliding.aggregate.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(300)))
            .aggregate(() -> "", (k, v, a) -> a + "|" + orDash(v), Named.as("sagg"),
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as("sw").withRetention(ms(60000)))
            .toStream().map((w, v) -> KeyValue.pair(wk(w), v)).to("out")));
        m.put("sliding.count.emitFinal", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(200)))
            .emitStrategy(EmitStrategy.onWindowClose()).count()
            .toStream().map((w, c) -> KeyValue.pair(wk(w), c)).to("out", LONGS)));
        m.put("sliding.count.suppress", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(200)))
            .count(Materialized.with(Serdes.String(), Serdes.Long()))
            .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
            .toStream().map((w, c) -> KeyValue.pair(wk(w), c)).to("out", LONGS)));
    }

    // ------------------------------------------------------------------ cogroup
    static void cogroups(final Map<String, Scenario> m) {
        m.put("cogroup.aggregate", p -> sb(b -> {
            final KGroupedStream<String, String> g1 = b.<String, String>stream("in1").groupByKey();
            final KGroupedStream<String, String> g2 = b.<String, String>stream("in2").groupByKey();
            g1.<String>cogroup((k, v, a) -> a + "a" + v).cogroup(g2, (k, v, a) -> a + "b" + v)
                .aggregate(() -> "").toStream().to("out");
        }));
        m.put("cogroup.named.materialized", p -> sb(b -> {
            final KGroupedStream<String, String> g1 = b.<String, String>stream("in1").groupByKey();
            final KGroupedStream<String, String> g2 = b.<String, String>stream("in2").groupByKey();
            g1.<String>cogroup((k, v, a) -> a + "a" + v).cogroup(g2, (k, v, a) -> a + "b" + v)
                .aggregate(() -> "", Named.as("cg"), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cg-store"))
                .toStream().to("out");
        }));
        m.put("cogroup.rekeyed", p -> sb(b -> {
            final KGroupedStream<String, String> g1 = b.<String, String>stream("in1").groupByKey();
            final KGroupedStream<String, String> g2 = b.<String, String>stream("in2")
                .groupBy((k, v) -> v == null ? null : v.substring(0, 1), Grouped.as("by-first"));
            g1.<String>cogroup((k, v, a) -> a + "a" + v).cogroup(g2, (k, v, a) -> a + "b" + v)
                .aggregate(() -> "").toStream().to("out");
        }));
        m.put("cogroup.windowed.time", p -> sb(b -> {
            final KGroupedStream<String, String> g1 = b.<String, String>stream("in1").groupByKey();
            final KGroupedStream<String, String> g2 = b.<String, String>stream("in2").groupByKey();
            g1.<String>cogroup((k, v, a) -> a + "a" + v).cogroup(g2, (k, v, a) -> a + "b" + v)
                .windowedBy(TimeWindows.ofSizeAndGrace(ms(1000), ms(500)))
                .aggregate(() -> "").toStream().map((w, v) -> KeyValue.pair(wk(w), v)).to("out");
        }));
        m.put("cogroup.windowed.sliding", p -> sb(b -> {
            final KGroupedStream<String, String> g1 = b.<String, String>stream("in1").groupByKey();
            final KGroupedStream<String, String> g2 = b.<String, String>stream("in2").groupByKey();
            g1.<String>cogroup((k, v, a) -> a + "a" + v).cogroup(g2, (k, v, a) -> a + "b" + v)
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(300)))
                .aggregate(() -> "").toStream().map((w, v) -> KeyValue.pair(wk(w), v)).to("out");
        }));
        m.put("cogroup.windowed.session", p -> sb(b -> {
            final KGroupedStream<String, String> g1 = b.<String, String>stream("in1").groupByKey();
            final KGroupedStream<String, String> g2 = b.<String, String>stream("in2").groupByKey();
            g1.<String>cogroup((k, v, a) -> a + "a" + v).cogroup(g2, (k, v, a) -> a + "b" + v)
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(500), ms(300)))
                .aggregate(() -> "", (k, a1, a2) -> a1 + "|" + a2,
                    Materialized.<String, String, SessionStore<Bytes, byte[]>>as("cs"))
                .toStream().map((w, v) -> KeyValue.pair(wk(w), orDash(v))).to("out");
        }));
    }

    // ------------------------------------------------------------------ foreign-key table-table joins
    static String fk(final String v) {
        return v.substring(0, 1);
    }

    static void fkJoins(final Map<String, Scenario> m) {
        m.put("fk.join", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.join(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + c).toStream().to("out");
        }));
        m.put("fk.leftJoin", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.leftJoin(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + orDash(c)).toStream().to("out");
        }));
        m.put("fk.join.biFunction", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.join(b.<String, String>table("in2"), (k, v) -> k.equals("a") ? "x" : fk(v), (a, c) -> a + "|" + c)
                .toStream().to("out");
        }));
        m.put("fk.join.materialized", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.join(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + c,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("fk")).toStream().to("out");
        }));
        m.put("fk.leftJoin.tableJoined.materialized", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.leftJoin(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + orDash(c), TableJoined.as("fkj"),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("fk")).toStream().to("out");
        }));
        m.put("fk.join.tableJoined", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.join(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + c, TableJoined.as("fkj"))
                .toStream().to("out");
        }));
        m.put("fk.join.nullForeignKey", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.join(b.<String, String>table("in2"), v -> v.startsWith("x") ? null : fk(v), (a, c) -> a + "|" + c)
                .toStream().to("out");
        }));
        m.put("fk.leftJoin.nullForeignKey", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.leftJoin(b.<String, String>table("in2"), v -> v.startsWith("x") ? null : fk(v), (a, c) -> a + "|" + orDash(c))
                .toStream().to("out");
        }));
        m.put("fk.join.chained", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            final KTable<String, String> fkJoined = left.join(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + c,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("fk"));
            left.join(fkJoined, (a, j) -> a + "=" + j).toStream().to("out");
        }));
        m.put("fk.join.mapValuesLeft", p -> sb(b -> {
            final KTable<String, String> left = b.<String, String>table("in1").mapValues(v -> v + "!");
            left.join(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + c).toStream().to("out");
        }));
        m.put("fk.leftJoin.filterRight", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            final KTable<String, String> right = b.<String, String>table("in2").filter((k, v) -> v.length() > 1);
            left.leftJoin(right, v -> fk(v), (a, c) -> a + "|" + orDash(c)).toStream().to("out");
        }));
    }

    // ------------------------------------------------------------------ versioned tables
    static Materialized<String, String, KeyValueStore<Bytes, byte[]>> versionedStore(final String name, final long historyMs) {
        return Materialized.as(Stores.persistentVersionedKeyValueStore(name, ms(historyMs)));
    }

    static void versioned(final Map<String, Scenario> m) {
        m.put("vjoin.table", p -> sb(b -> {
            final KTable<String, String> t = b.table("tbl", versionedStore("vt", 2000));
            b.<String, String>stream("in").join(t, (v, tv) -> v + "|" + tv).to("out");
        }));
        m.put("vleftJoin.table", p -> sb(b -> {
            final KTable<String, String> t = b.table("tbl", versionedStore("vt", 2000));
            b.<String, String>stream("in").leftJoin(t, (v, tv) -> v + "|" + orDash(tv)).to("out");
        }));
        m.put("vjoin.grace", p -> sb(b -> {
            final KTable<String, String> t = b.table("tbl", versionedStore("vt", 2000));
            b.<String, String>stream("in").join(t, (v, tv) -> v + "|" + tv,
                Joined.with(Serdes.String(), Serdes.String(), Serdes.String(), "vj", ms(400))).to("out");
        }));
        m.put("vleftJoin.grace", p -> sb(b -> {
            final KTable<String, String> t = b.table("tbl", versionedStore("vt", 2000));
            b.<String, String>stream("in").leftJoin(t, (v, tv) -> v + "|" + orDash(tv),
                Joined.<String, String, String>as("vj").withGracePeriod(ms(700))).to("out");
        }));
        m.put("vjoin.grace.filtered", p -> sb(b -> {
            final KTable<String, String> t = b.<String, String>table("tbl", versionedStore("vt", 2000))
                .filter((k, v) -> v.length() > 1);
            b.<String, String>stream("in").join(t, (v, tv) -> v + "|" + tv,
                Joined.<String, String, String>as("vj").withGracePeriod(ms(300))).to("out");
        }));
        m.put("vjoin.grace.notVersioned", p -> sb(b -> {
            final KTable<String, String> t = b.table("tbl");
            b.<String, String>stream("in").join(t, (v, tv) -> v + "|" + tv,
                Joined.<String, String, String>as("vj").withGracePeriod(ms(300))).to("out");
        }));
        m.put("vjoin.grace.pastRetention", p -> sb(b -> {
            final KTable<String, String> t = b.table("tbl", versionedStore("vt", 200));
            b.<String, String>stream("in").join(t, (v, tv) -> v + "|" + tv,
                Joined.<String, String, String>as("vj").withGracePeriod(ms(300))).to("out");
        }));
        m.put("vtable.toStream", p -> sb(b -> b.<String, String>table("in", versionedStore("vt", 1000))
            .toStream().to("out")));
        m.put("vtoTable", p -> sb(b -> b.<String, String>stream("in").toTable(versionedStore("vt", 1000))
            .toStream().to("out")));
        m.put("vtable.filter", p -> sb(b -> b.<String, String>table("in", versionedStore("vt", 1000))
            .filter((k, v) -> v.length() > 1).toStream().to("out")));
        m.put("vtable.groupBy.count", p -> sb(b -> b.<String, String>table("in", versionedStore("vt", 1000))
            .groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), v)).count().toStream().to("out", LONGS)));
        m.put("vtable.join.table", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1", versionedStore("v1", 1000));
            left.leftJoin(b.<String, String>table("in2", versionedStore("v2", 1000)), (a, c) -> a + "|" + orDash(c))
                .toStream().to("out");
        }));
        m.put("vfk.join", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1", versionedStore("v1", 1000));
            left.join(b.<String, String>table("in2", versionedStore("v2", 1000)), v -> fk(v), (a, c) -> a + "|" + c)
                .toStream().to("out");
        }));
        m.put("vtable.suppress", p -> sb(b -> b.<String, String>table("in", versionedStore("vt", 1000))
            .suppress(Suppressed.untilTimeLimit(ms(1000), BufferConfig.unbounded())).toStream().to("out")));
    }

    // ------------------------------------------------------------------ interactive-query views of the driver
    static void queries(final Map<String, Scenario> m) {
        m.put("stores.session.count", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(500), ms(300)))
            .count(Materialized.as("ss")).toStream().map((w, c) -> KeyValue.pair(wk(w), orDash(c))).to("out")));
    }
}
