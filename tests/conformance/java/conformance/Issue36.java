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
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.ContextualProcessor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * Issue 36's classes of input as a Kafka Streams user writes them: foreign-key joins whose result
 * is not cached (deletes and foreign-key moves), dead-letter queues, joins of windowed tables, and
 * emit-final aggregations over a store supplier of the user's (window stores at their retention
 * edge); the emit-interval scenarios reuse Catalogue's and Issue20's emit-final ones. Twins of the same names in
 * tests/conformance/catalogue_issue36.py, in the same order.
 */
final class Issue36 {
    private Issue36() {
    }

    static void all(final Map<String, Scenario> m) {
        fkJoins(m);
        deadLetterQueue(m);
        windowedTableJoins(m);
        windowedCogroupJoin(m);
        retentionEdges(m);
    }

    static Duration ms(final long v) {
        return Duration.ofMillis(v);
    }

    static String fk(final String v) {
        return v.substring(0, 1);
    }

    // ------------------------------------------------------------------ foreign-key joins, result not cached
    /** KTableKTableForeignKeyJoinIntegrationTest's result table: "the cache suppresses some of the
     *  unnecessary tombstones we want to make assertions about". */
    static Materialized<String, String, KeyValueStore<Bytes, byte[]>> uncached(final boolean named) {
        return named
            ? Materialized.<String, String>as(Stores.inMemoryKeyValueStore("fk")).withValueSerde(Serdes.String())
                .withCachingDisabled()
            : Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(null, Serdes.String()).withCachingDisabled();
    }

    static void fkJoins(final Map<String, Scenario> m) {
        m.put("fk.join.uncached", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.join(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + c, uncached(true))
                .toStream().to("out");
        }));
        m.put("fk.leftJoin.uncached", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.leftJoin(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + orDash(c), uncached(true))
                .toStream().to("out");
        }));
        m.put("fk.join.uncached.rejoin", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            final KTable<String, String> joined =
                left.join(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + c, uncached(false));
            joined.toStream().to("out");
            joined.join(left, (j, a) -> "rejoin(" + j + "," + a + ")", Materialized.with(null, Serdes.String()))
                .toStream().to("rej");
        }));
        m.put("fk.leftJoin.uncached.rejoin", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            final KTable<String, String> joined =
                left.leftJoin(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + orDash(c), uncached(false));
            joined.toStream().to("out");
            joined.leftJoin(left, (j, a) -> "rejoin(" + j + "," + orDash(a) + ")",
                Materialized.<String, String>as(Stores.inMemoryKeyValueStore("fk-rejoin")).withValueSerde(Serdes.String())
                    .withCachingDisabled())
                .toStream().to("rej");
        }));
    }

    // ------------------------------------------------------------------ processing errors and the dead-letter queue
    /** Forwards what it gets; its stream-time punctuator (every second) fails every other time. */
    static final class FailingTicker extends ContextualProcessor<String, String, String, String> {
        private int ticks;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            super.init(context);
            context.schedule(Duration.ofMillis(1000), PunctuationType.STREAM_TIME, t -> {
                if (ticks++ % 2 == 1) {
                    throw new IllegalStateException("tick " + t);
                }
                context.forward(new Record<>("tick", Long.toString(t), t));
            });
        }

        @Override
        public void process(final Record<String, String> record) {
            context().forward(record);
        }
    }

    static void deadLetterQueue(final Map<String, Scenario> m) {
        m.put("fail.punctuate", p -> sb(b -> b.<String, String>stream("in").process(FailingTicker::new).to("out")));
        m.put("fail.processing.repartitioned", p -> sb(b -> b.<String, String>stream("in")
            .selectKey((k, v) -> v == null ? null : v.substring(0, 1)).groupByKey()
            .reduce((a, v) -> {
                if (v.endsWith("x")) {
                    throw new IllegalStateException("boom " + a + "+" + v);
                }
                return a + v;
            }).toStream().to("out")));
    }

    // ------------------------------------------------------------------ joins of windowed tables
    static KTable<Windowed<String>, String> slidingTable(final StreamsBuilder b, final String topic,
                                                         final boolean emitFinal) {
        TimeWindowedKStream<String, String> w = b.<String, String>stream(topic).groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(300)));
        if (emitFinal) {
            w = w.emitStrategy(EmitStrategy.onWindowClose());
        }
        return w.aggregate(() -> "0", (k, v, a) -> a + "+" + orDash(v));
    }

    static void windowedTableJoins(final Map<String, Scenario> m) {
        m.put("wtable.sliding.join", p -> sb(b -> slidingTable(b, "in1", false)
            .join(slidingTable(b, "in2", false), (a, c) -> a + "%" + c).toStream()
            .map((w, v) -> KeyValue.pair(wk(w), v)).to("out")));
        m.put("wtable.sliding.join.emitFinal", p -> sb(b -> slidingTable(b, "in1", true)
            .join(slidingTable(b, "in2", true), (a, c) -> a + "%" + c).toStream()
            .map((w, v) -> KeyValue.pair(wk(w), v)).to("out")));
        m.put("wtable.time.leftJoin", p -> sb(b -> {
            final TimeWindows windows = TimeWindows.ofSizeAndGrace(ms(1000), ms(500)).advanceBy(ms(500));
            final KTable<Windowed<String>, Long> t1 = b.<String, String>stream("in1").groupByKey().windowedBy(windows).count();
            final KTable<Windowed<String>, String> t2 = b.<String, String>stream("in2").groupByKey().windowedBy(windows)
                .reduce((a, v) -> a + orDash(v));
            t1.leftJoin(t2, (c, r) -> c + "/" + orDash(r)).toStream().map((w, v) -> KeyValue.pair(wk(w), v)).to("out");
        }));
        m.put("wtable.session.outerJoin", p -> sb(b -> {
            final SessionWindows windows = SessionWindows.ofInactivityGapAndGrace(ms(500), ms(300));
            final KTable<Windowed<String>, Long> t1 = b.<String, String>stream("in1").groupByKey().windowedBy(windows).count();
            final KTable<Windowed<String>, Long> t2 = b.<String, String>stream("in2").groupByKey().windowedBy(windows).count();
            t1.outerJoin(t2, (a, c) -> orDash(a) + "/" + orDash(c)).toStream()
                .map((w, v) -> KeyValue.pair(wk(w), v)).to("out");
        }));
        m.put("wtable.stream.join", p -> sb(b -> {
            final TimeWindows windows = TimeWindows.ofSizeWithNoGrace(ms(1000));
            final KTable<Windowed<String>, Long> t2 = b.<String, String>stream("in2").groupByKey().windowedBy(windows).count();
            b.<String, String>stream("in1").groupByKey().windowedBy(windows).count().toStream()
                .leftJoin(t2, (c, d) -> c + "/" + orDash(d)).map((w, v) -> KeyValue.pair(wk(w), v)).to("out");
        }));
    }

    static void windowedCogroupJoin(final Map<String, Scenario> m) {
        m.put("wtable.cogroup.join", p -> sb(b -> {
            final TimeWindows windows = TimeWindows.ofSizeWithNoGrace(ms(1000));
            final KTable<Windowed<String>, String> cogrouped = b.<String, String>stream("in1").groupByKey()
                .<String>cogroup((k, v, a) -> a + orDash(v)).windowedBy(windows).aggregate(() -> "");
            final KTable<Windowed<String>, Long> counts = b.<String, String>stream("in2").groupByKey().windowedBy(windows).count();
            cogrouped.join(counts, (a, c) -> a + "/" + c).toStream().map((w, v) -> KeyValue.pair(wk(w), v)).to("out");
        }));
    }

    // ------------------------------------------------------------------ window-store retention edges
    static void retentionEdges(final Map<String, Scenario> m) {
        m.put("sliding.count.emitFinal.inMemory", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(200)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.as(Stores.inMemoryWindowStore("sw", ms(1200), ms(500), false)))
            .toStream().map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wcount.hopping.emitFinal", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(ms(1000), ms(500)).advanceBy(ms(500)))
            .emitStrategy(EmitStrategy.onWindowClose()).count()
            .toStream().map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wcount.hopping.emitFinal.inMemory", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(ms(1000), ms(500)).advanceBy(ms(500)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.as(Stores.inMemoryWindowStore("tw", ms(1500), ms(1000), false)))
            .toStream().map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
    }
}
