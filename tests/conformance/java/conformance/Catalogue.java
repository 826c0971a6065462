package conformance;

import conformance.Harness.Scenario;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Printed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.internals.TimeWindow;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.kstream.Windows;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.processor.api.ContextualFixedKeyProcessor;
import org.apache.kafka.streams.processor.api.ContextualProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * The catalogue's topologies as a Kafka Streams user writes them. Each has a twin of the same
 * name in tests/conformance/catalogue.py, ported line by line; keep the two in the same order.
 * Default serdes are set by the request's config (String/String unless a scenario says otherwise).
 */
final class Catalogue {
    private Catalogue() {
    }

    static Map<String, Scenario> all() {
        final Map<String, Scenario> m = new LinkedHashMap<>();
        stateless(m);
        processors(m);
        serdes(m);
        aggregations(m);
        timeWindows(m);
        sessionWindows(m);
        tables(m);
        joins(m);
        failures(m);
        apiForms(m);
        Issue20.all(m);
        Issue36.all(m);
        return m;
    }

    // ------------------------------------------------------------------ helpers
    static Topology sb(final Consumer<StreamsBuilder> body) {
        final StreamsBuilder b = new StreamsBuilder();
        body.accept(b);
        return b.build();
    }

    @SuppressWarnings("unchecked")
    static Serde<Object> serde(final String name) {
        final Serde<?> s;
        switch (name) {
            case "String": s = Serdes.String(); break;
            case "Long": s = Serdes.Long(); break;
            case "Integer": s = Serdes.Integer(); break;
            case "Short": s = Serdes.Short(); break;
            case "Float": s = Serdes.Float(); break;
            case "Double": s = Serdes.Double(); break;
            case "ByteArray": s = Serdes.ByteArray(); break;
            case "ByteBuffer": s = Serdes.ByteBuffer(); break;
            case "Bytes": s = Serdes.Bytes(); break;
            case "UUID": s = Serdes.UUID(); break;
            case "Boolean": s = Serdes.Boolean(); break;
            case "Void": s = Serdes.Void(); break;
            default: throw new IllegalArgumentException("serde " + name);
        }
        return (Serde<Object>) s;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Serde<List<String>> stringList() {
        return (Serde) Serdes.ListSerde(ArrayList.class, Serdes.String());
    }

    /** What a dynamically typed port passes: the compiler would refuse it for a non-windowed KTable. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static Suppressed<String> untilWindowClosesUnchecked() {
        return (Suppressed) Suppressed.untilWindowCloses(BufferConfig.unbounded());
    }

    static String wk(final Windowed<String> w) {
        return w.key() + "@" + w.window().start() + "/" + w.window().end();
    }

    static int len(final String v) {
        return v == null ? 0 : v.length();
    }

    static String orDash(final Object v) {
        return v == null ? "-" : v.toString();
    }

    /** Event time from the value: "<word>:<ms>" gives ms (negative allowed), else the record's timestamp. */
    public static final class ValueTimestampExtractor implements TimestampExtractor {
        @Override
        public long extract(final ConsumerRecord<Object, Object> record, final long partitionTime) {
            final Object v = record.value();
            if (v instanceof String && ((String) v).contains(":")) {
                return Long.parseLong(((String) v).substring(((String) v).indexOf(':') + 1));
            }
            return record.timestamp();
        }
    }

    /** Counts records per key in store "counts" and forwards "value#count". */
    static final class CountingProcessor extends ContextualProcessor<String, String, String, String> {
        private KeyValueStore<String, Long> store;

        @Override
        public void init(final org.apache.kafka.streams.processor.api.ProcessorContext<String, String> context) {
            super.init(context);
            store = context.getStateStore("counts");
        }

        @Override
        public void process(final Record<String, String> record) {
            if (record.key() == null) {
                return;
            }
            final Long old = store.get(record.key());
            final long n = old == null ? 1 : old + 1;
            store.put(record.key(), n);
            context().forward(record.withValue(orDash(record.value()) + "#" + n));
        }
    }

    /** Counts records; every second of {@code type} time forwards "time:count" under {@code key}. */
    static final class Ticker extends ContextualProcessor<String, String, String, String> {
        private final PunctuationType type;
        private final String key;
        private int seen;

        Ticker(final PunctuationType type, final String key) {
            this.type = type;
            this.key = key;
        }

        @Override
        public void init(final org.apache.kafka.streams.processor.api.ProcessorContext<String, String> context) {
            super.init(context);
            context.schedule(Duration.ofMillis(1000), type, t -> context.forward(new Record<>(key, t + ":" + seen, t)));
        }

        @Override
        public void process(final Record<String, String> record) {
            seen++;
        }
    }

    static StoreBuilder<KeyValueStore<String, Long>> countsStore() {
        return Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("counts"), Serdes.String(), Serdes.Long());
    }

    // ------------------------------------------------------------------ stateless KStream operators
    static void stateless(final Map<String, Scenario> m) {
        m.put("stream.filter", p -> sb(b -> b.<String, String>stream("in")
            .filter((k, v) -> v != null && v.length() % 2 == 0).to("out")));
        m.put("stream.filter.named", p -> sb(b -> b.<String, String>stream("in")
            .filter((k, v) -> v != null && v.length() % 2 == 0, Named.as("keep-even")).to("out")));
        m.put("stream.filterNot", p -> sb(b -> b.<String, String>stream("in")
            .filterNot((k, v) -> v != null && v.startsWith("a")).to("out")));
        m.put("stream.mapValues", p -> sb(b -> b.<String, String>stream("in")
            .mapValues(v -> v == null ? null : v.toUpperCase()).to("out")));
        m.put("stream.mapValues.withKey", p -> sb(b -> b.<String, String>stream("in")
            .mapValues((k, v) -> orDash(k) + ":" + orDash(v)).to("out")));
        m.put("stream.mapValues.named", p -> sb(b -> b.<String, String>stream("in")
            .mapValues(v -> v == null ? null : v.toUpperCase(), Named.as("upper")).to("out")));
        m.put("stream.map", p -> sb(b -> b.<String, String>stream("in")
            .map((k, v) -> KeyValue.pair(v, k)).to("out")));
        m.put("stream.selectKey", p -> sb(b -> b.<String, String>stream("in")
            .selectKey((k, v) -> v == null ? null : v.substring(0, 1)).to("out")));
        m.put("stream.flatMap", p -> sb(b -> b.<String, String>stream("in")
            .flatMap((k, v) -> {
                final List<KeyValue<String, String>> out = new ArrayList<>();
                for (int i = 0; i < len(v) % 3; i++) {
                    out.add(KeyValue.pair(v.substring(i, i + 1), k));
                }
                return out;
            }).to("out")));
        m.put("stream.flatMapValues", p -> sb(b -> b.<String, String>stream("in")
            .flatMapValues(v -> v == null ? List.<String>of() : Arrays.asList(v.split(""))).to("out")));
        m.put("stream.flatMapValues.withKey", p -> sb(b -> b.<String, String>stream("in")
            .flatMapValues((k, v) -> List.of(orDash(k), orDash(v))).to("out")));
        m.put("stream.peek", p -> sb(b -> b.<String, String>stream("in").peek((k, v) -> { }).to("out")));
        m.put("stream.foreach", p -> sb(b -> {
            final KStream<String, String> s = b.stream("in");
            s.foreach((k, v) -> { });
            s.to("out");
        }));
        m.put("stream.merge", p -> sb(b -> {
            final KStream<String, String> a = b.stream("in1");
            a.merge(b.stream("in2")).to("out");
        }));
        m.put("stream.merge.named", p -> sb(b -> {
            final KStream<String, String> a = b.stream("in1");
            a.merge(b.stream("in2"), Named.as("both")).to("out");
        }));
        m.put("stream.split", p -> sb(b -> {
            final Map<String, KStream<String, String>> branches = b.<String, String>stream("in")
                .split(Named.as("s-"))
                .branch((k, v) -> v != null && v.length() == 1, Branched.as("one"))
                .branch((k, v) -> v != null && v.length() == 2)
                .defaultBranch();
            branches.get("s-one").to("out1");
            branches.get("s-2").to("out2");
            branches.get("s-0").to("out0");
        }));
        m.put("stream.split.functions", p -> sb(b -> {
            final Map<String, KStream<String, String>> branches = b.<String, String>stream("in")
                .split()
                .branch((k, v) -> v != null && v.length() == 1,
                    Branched.withFunction(s -> s.mapValues(v -> v + "!"), "f"))
                .branch((k, v) -> v != null && v.length() == 2, Branched.withConsumer(s -> s.to("out2")))
                .noDefaultBranch();
            branches.values().forEach(s -> s.to("out1"));
        }));
        m.put("stream.split.defaultBranch.named", p -> sb(b -> {
            final Map<String, KStream<String, String>> branches = b.<String, String>stream("in")
                .split(Named.as("s-"))
                .branch((k, v) -> v != null && v.length() == 1, Branched.as("one"))
                .defaultBranch(Branched.as("rest"));
            branches.get("s-one").to("out1");
            branches.get("s-rest").to("out0");
        }));
        m.put("stream.multiTopic", p -> sb(b -> b.<String, String>stream(Arrays.asList("in1", "in2")).to("out")));
        m.put("stream.pattern", p -> sb(b -> b.<String, String>stream(Pattern.compile("in[0-9]")).to("out")));
        m.put("stream.to.produced", p -> sb(b -> b.<String, String>stream("in")
            .to("out", Produced.with(Serdes.String(), Serdes.String()))));
        m.put("stream.to.extractor", p -> sb(b -> b.<String, String>stream("in")
            .to((k, v, ctx) -> "out" + len(v) % 2)));
        m.put("stream.to.extractor.produced", p -> sb(b -> b.<String, String>stream("in")
            .to((k, v, ctx) -> "out" + len(v) % 2, Produced.with(Serdes.String(), Serdes.String()))));
        m.put("stream.repartition", p -> sb(b -> b.<String, String>stream("in")
            .selectKey((k, v) -> v == null ? null : v.substring(0, 1)).repartition().to("out")));
        m.put("stream.repartition.named", p -> sb(b -> b.<String, String>stream("in")
            .selectKey((k, v) -> v == null ? null : v.substring(0, 1)).repartition(Repartitioned.as("rp")).to("out")));
        m.put("stream.repartition.serdes", p -> sb(b -> b.<String, String>stream("in")
            .repartition(Repartitioned.with(Serdes.String(), Serdes.String()).withName("rp")).to("out")));
        m.put("stream.repartition.partitions", p -> sb(b -> b.<String, String>stream("in")
            .repartition(Repartitioned.<String, String>numberOfPartitions(1).withName("rp")).to("out")));
        m.put("stream.print", p -> sb(b -> {
            final KStream<String, String> s = b.stream("in");
            s.print(Printed.<String, String>toFile(p.get("tmpdir") + "/print.txt").withLabel("lbl"));
            s.to("out");
        }));
        m.put("stream.print.mapper", p -> sb(b -> {
            final KStream<String, String> s = b.stream("in");
            s.print(Printed.<String, String>toFile(p.get("tmpdir") + "/print.txt")
                .withKeyValueMapper((k, v) -> orDash(k) + "=" + orDash(v)).withName("printer"));
            s.to("out");
        }));
        m.put("stream.multiTopic.consumed", p -> sb(b -> b.stream(Arrays.asList("in1", "in2"),
            Consumed.with(Serdes.String(), Serdes.String())).to("out")));
    }

    // ------------------------------------------------------------------ Processor API
    static void processors(final Map<String, Scenario> m) {
        m.put("process.stateful", p -> sb(b -> {
            b.addStateStore(countsStore());
            b.<String, String>stream("in").process(CountingProcessor::new, "counts").to("out");
        }));
        m.put("process.named", p -> sb(b -> {
            b.addStateStore(countsStore());
            b.<String, String>stream("in").process(CountingProcessor::new, Named.as("counter"), "counts").to("out");
        }));
        m.put("processValues", p -> sb(b -> {
            b.addStateStore(countsStore());
            b.<String, String>stream("in").processValues(() -> new ContextualFixedKeyProcessor<String, String, String>() {
                private KeyValueStore<String, Long> store;

                @Override
                public void init(final org.apache.kafka.streams.processor.api.FixedKeyProcessorContext<String, String> context) {
                    super.init(context);
                    store = context.getStateStore("counts");
                }

                @Override
                public void process(final FixedKeyRecord<String, String> record) {
                    final String key = record.key() == null ? "-" : record.key();
                    final Long old = store.get(key);
                    final long n = old == null ? 1 : old + 1;
                    store.put(key, n);
                    context().forward(record.withValue(orDash(record.value()) + "#" + n));
                }
            }, "counts").to("out");
        }));
        m.put("process.metadata", p -> sb(b -> b.<String, String>stream("in")
            .process(() -> new ContextualProcessor<String, String, String, String>() {
                @Override
                public void process(final Record<String, String> record) {
                    final String md = context().recordMetadata()
                        .map(r -> r.topic() + "/" + r.partition() + "/" + r.offset()).orElse("none");
                    context().forward(record.withValue(md + "/" + record.timestamp()));
                }
            }).to("out")));
        m.put("process.headers", p -> sb(b -> b.<String, String>stream("in")
            .process(() -> new ContextualProcessor<String, String, String, String>() {
                @Override
                public void process(final Record<String, String> record) {
                    final Record<String, String> out = record.withHeaders(record.headers());
                    out.headers().add(new RecordHeader("len", Integer.toString(len(record.value())).getBytes()));
                    context().forward(out);
                }
            }).to("out")));
        m.put("process.punctuate.streamTime", p -> sb(b -> b.<String, String>stream("in")
            .process(() -> new Ticker(PunctuationType.STREAM_TIME, "tick")).to("out")));
        m.put("process.punctuate.wallClock", p -> sb(b -> b.<String, String>stream("in")
            .process(() -> new Ticker(PunctuationType.WALL_CLOCK_TIME, "wall")).to("out")));
        m.put("process.supplier.stores", p -> sb(b -> b.<String, String>stream("in")
            .process(new ProcessorSupplier<String, String, String, String>() {
                @Override
                public Processor<String, String, String, String> get() {
                    return new CountingProcessor();
                }

                @Override
                public Set<StoreBuilder<?>> stores() {
                    return Set.of(countsStore());
                }
            }).to("out")));
    }

    // ------------------------------------------------------------------ built-in serdes
    static void serdes(final Map<String, Scenario> m) {
        m.put("serde.produced", p -> sb(b -> {
            final Serde<Object> s = serde(p.get("serde"));
            b.stream("in", Consumed.with(s, s)).to("out", Produced.with(s, s));
        }));
        m.put("serde.inherit", p -> sb(b -> {
            final Serde<Object> s = serde(p.get("serde"));
            b.stream("in", Consumed.with(s, s)).to("out");
        }));
        m.put("serde.inherit.filter", p -> sb(b -> {
            final Serde<Object> s = serde(p.get("serde"));
            b.stream("in", Consumed.with(s, s)).filter((k, v) -> true).to("out");
        }));
    }

    // ------------------------------------------------------------------ KGroupedStream aggregations
    static void aggregations(final Map<String, Scenario> m) {
        m.put("count", p -> sb(b -> b.<String, String>stream("in").groupByKey().count().toStream().to("out")));
        m.put("count.produced", p -> sb(b -> b.<String, String>stream("in").groupByKey().count().toStream()
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("count.named", p -> sb(b -> b.<String, String>stream("in").groupByKey().count(Named.as("cnt"))
            .toStream().to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("count.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .count(Materialized.as("cnt-store")).toStream().to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("count.named.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .count(Named.as("cnt"), Materialized.as("cnt-store")).toStream()
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("count.groupBy", p -> sb(b -> b.<String, String>stream("in")
            .groupBy((k, v) -> v, Grouped.with(Serdes.String(), Serdes.String())).count().toStream()
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("count.groupBy.named", p -> sb(b -> b.<String, String>stream("in")
            .groupBy((k, v) -> v, Grouped.as("by-value")).count().toStream()
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("count.groupBy.grouped3", p -> sb(b -> b.<String, String>stream("in")
            .groupBy((k, v) -> v, Grouped.with("by-value", Serdes.String(), Serdes.String())).count().toStream()
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("count.selectKey", p -> sb(b -> b.<String, String>stream("in")
            .selectKey((k, v) -> v == null ? null : v.substring(0, 1)).groupByKey().count().toStream()
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("count.groupByKey.grouped", p -> sb(b -> b.<String, String>stream("in")
            .selectKey((k, v) -> v == null ? null : v.substring(0, 1)).groupByKey(Grouped.as("regrouped")).count()
            .toStream().to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("count.groupByKey.serdes", p -> sb(b -> b.<String, String>stream("in")
            .selectKey((k, v) -> v == null ? null : v.substring(0, 1))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String())).count()
            .toStream().to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("count.twice", p -> sb(b -> {
            final KGroupedStream<String, String> g = b.<String, String>stream("in")
                .groupBy((k, v) -> v == null ? null : v.substring(0, 1), Grouped.as("first"));
            g.count().toStream().to("out1", Produced.with(Serdes.String(), Serdes.Long()));
            g.count(Named.as("second")).toStream().to("out2", Produced.with(Serdes.String(), Serdes.Long()));
        }));
        m.put("reduce", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .reduce((a, v) -> a + "+" + orDash(v)).toStream().to("out")));
        m.put("reduce.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .reduce((a, v) -> a + "+" + orDash(v), Materialized.as("red-store")).toStream().to("out")));
        m.put("reduce.named.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .reduce((a, v) -> a + "+" + orDash(v), Named.as("red"), Materialized.as("red-store")).toStream().to("out")));
        m.put("reduce.grouped.serde", p -> sb(b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.Long()))
            .groupBy((k, v) -> k, Grouped.with(Serdes.String(), Serdes.Long())).reduce(Long::sum).toStream()
            .to("out")));
        m.put("aggregate", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .aggregate(() -> "", (k, v, a) -> a + orDash(v)).toStream().to("out")));
        m.put("aggregate.materialized.serdes", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .aggregate(() -> 0L, (k, v, a) -> a + len(v), Materialized.with(Serdes.String(), Serdes.Long()))
            .toStream().to("out")));
        m.put("aggregate.materialized.as", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .aggregate(() -> "", (k, v, a) -> a + orDash(v), Materialized.as("agg-store")).toStream().to("out")));
        m.put("aggregate.named.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .aggregate(() -> 0L, (k, v, a) -> a + len(v), Named.as("agg"),
                Materialized.<String, Long, KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("agg-store")
                    .withValueSerde(Serdes.Long()))
            .toStream().to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("aggregate.list.mutated", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .aggregate(() -> (List<String>) new ArrayList<String>(), (k, v, list) -> {
                list.add(v);
                return list;
            }, Named.as("agg"), Materialized.<String, List<String>, KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("lists")
                .withValueSerde(stringList()))
            .toStream().mapValues(list -> {
                list.add("!");
                return String.join(",", list);
            }).to("out")));
        m.put("count.cachingDisabled", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .count(Named.as("cnt"), Materialized.<String, Long, KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("cnt-store")
                .withCachingDisabled())
            .toStream().to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("count.loggingDisabled", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .count(Named.as("cnt"), Materialized.<String, Long, KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("cnt-store")
                .withLoggingDisabled())
            .toStream().to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("count.recordContext", p -> sb(b -> b.<String, String>stream("in").groupByKey().count().toStream()
            .process(() -> new ContextualProcessor<String, Long, String, String>() {
                @Override
                public void process(final Record<String, Long> record) {
                    final String md = context().recordMetadata().isPresent() ? "some" : "none";
                    context().forward(record.withValue(md + ":" + record.value()));
                }
            }).to("out")));
    }

    // ------------------------------------------------------------------ time windows
    static final class OffsetWindows extends Windows<TimeWindow> {
        @Override
        public Map<Long, TimeWindow> windowsFor(final long timestamp) {
            final Map<Long, TimeWindow> windows = new LinkedHashMap<>();
            final long start = Math.floorDiv(timestamp - 300, 1000) * 1000 + 300;
            if (start >= 0) {
                windows.put(start, new TimeWindow(start, start + 1000));
            }
            return windows;
        }

        @Override
        public long size() {
            return 1000;
        }

        @Override
        public long gracePeriodMs() {
            return 0;
        }
    }

    static void timeWindows(final Map<String, Scenario> m) {
        final Duration second = Duration.ofMillis(1000);
        m.put("wcount", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(second)).count().toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wcount.inherit", p -> sb(b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.String())).groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(second)).count().toStream().to("out")));
        m.put("wcount.windowedSerde", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(second)).count().toStream()
            .to("out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 1000), Serdes.Long()))));
        m.put("wcount.hopping", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(second, Duration.ofMillis(500)).advanceBy(Duration.ofMillis(250)))
            .count().toStream().map((w, c) -> KeyValue.pair(wk(w), c))
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wcount.grace", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(second, Duration.ofMillis(2000))).count().toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wcount.named", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(second)).count(Named.as("wc")).toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wcount.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(second)).count(Materialized.as("wstore")).toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wcount.named.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(second))
            .count(Named.as("wc"), Materialized.<String, Long, org.apache.kafka.streams.state.WindowStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("wstore")
                .withRetention(Duration.ofMinutes(1)))
            .toStream().map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wcount.emitFinal", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(second, Duration.ofMillis(500)))
            .emitStrategy(EmitStrategy.onWindowClose()).count().toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wcount.suppress", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(second, Duration.ofMillis(500)))
            .count(Materialized.with(Serdes.String(), Serdes.Long()))
            .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded())).toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wcount.suppress.named", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(second, Duration.ofMillis(500)))
            .count(Named.as("wc"), Materialized.with(Serdes.String(), Serdes.Long()))
            .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded())).toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wcount.suppress.withName", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(second, Duration.ofMillis(500)))
            .count(Named.as("wc"), Materialized.with(Serdes.String(), Serdes.Long()))
            .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName("final")).toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("fail.suppress.defaultSerdes", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(second, Duration.ofMillis(500))).count()
            .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded())).toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wreduce", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(second)).reduce((a, v) -> a + "+" + orDash(v)).toStream()
            .map((w, v) -> KeyValue.pair(wk(w), v)).to("out")));
        m.put("wreduce.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(second)).reduce((a, v) -> a + "+" + orDash(v), Materialized.as("wr"))
            .toStream().map((w, v) -> KeyValue.pair(wk(w), v)).to("out")));
        m.put("waggregate", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(second, Duration.ofMillis(300)).advanceBy(Duration.ofMillis(500)))
            .aggregate(() -> "", (k, v, a) -> a + orDash(v)).toStream()
            .map((w, v) -> KeyValue.pair(wk(w), v)).to("out")));
        m.put("waggregate.named", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(second))
            .aggregate(() -> "", (k, v, a) -> a + orDash(v), Named.as("wa")).toStream()
            .map((w, v) -> KeyValue.pair(wk(w), v)).to("out")));
        m.put("waggregate.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(second))
            .aggregate(() -> 0L, (k, v, a) -> a + len(v), Materialized.with(Serdes.String(), Serdes.Long()))
            .toStream().map((w, v) -> KeyValue.pair(wk(w), v)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("waggregate.named.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(second))
            .aggregate(() -> 0L, (k, v, a) -> a + len(v), Named.as("wagg"),
                Materialized.<String, Long, org.apache.kafka.streams.state.WindowStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("wagg-store")
                    .withValueSerde(Serdes.Long()))
            .toStream().map((w, v) -> KeyValue.pair(wk(w), v)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("wcount.customWindows", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(new OffsetWindows()).count().toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
    }

    // ------------------------------------------------------------------ session windows
    static void sessionWindows(final Map<String, Scenario> m) {
        final Duration gap = Duration.ofMillis(500);
        m.put("scount", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(gap)).count().toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("scount.inherit", p -> sb(b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.String())).groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(gap)).count().toStream().to("out")));
        m.put("scount.named", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(gap)).count(Named.as("sc")).toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("scount.grace", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(gap, Duration.ofMillis(1000))).count().toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("scount.emitFinal", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(gap, Duration.ofMillis(300)))
            .emitStrategy(EmitStrategy.onWindowClose()).count().toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("scount.suppress", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(gap, Duration.ofMillis(300)))
            .count(Materialized.with(Serdes.String(), Serdes.Long()))
            .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded())).toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("scount.suppress.named", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(gap, Duration.ofMillis(300)))
            .count(Named.as("sc"), Materialized.with(Serdes.String(), Serdes.Long()))
            .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded())).toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("scount.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(gap)).count(Materialized.as("sstore")).toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("scount.named.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(gap))
            .count(Named.as("sc"), Materialized.as("sstore")).toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("sreduce", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(gap)).reduce((a, v) -> a + "+" + orDash(v)).toStream()
            .map((w, v) -> KeyValue.pair(wk(w), v)).to("out")));
        m.put("sreduce.named", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(gap)).reduce((a, v) -> a + "+" + orDash(v), Named.as("sr"))
            .toStream().map((w, v) -> KeyValue.pair(wk(w), v)).to("out")));
        m.put("saggregate", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(gap, Duration.ofMillis(200)))
            .aggregate(() -> "", (k, v, a) -> a + orDash(v), (k, a1, a2) -> a1 + "|" + a2).toStream()
            .map((w, v) -> KeyValue.pair(wk(w), v)).to("out")));
        m.put("saggregate.materialized", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(gap, Duration.ofMillis(200)))
            .aggregate(() -> "", (k, v, a) -> a + orDash(v), (k, a1, a2) -> a1 + "|" + a2, Materialized.as("sa"))
            .toStream().map((w, v) -> KeyValue.pair(wk(w), v)).to("out")));
    }

    // ------------------------------------------------------------------ KTable
    static void tables(final Map<String, Scenario> m) {
        m.put("table.toStream", p -> sb(b -> b.<String, String>table("in").toStream().to("out")));
        m.put("table.consumed", p -> sb(b -> b.table("in", Consumed.with(Serdes.String(), Serdes.String()))
            .toStream().to("out")));
        m.put("table.materialized", p -> sb(b -> b.<String, String>table("in", Materialized.as("t")).toStream().to("out")));
        m.put("table.consumed.materialized", p -> sb(b -> b.table("in", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.as("t")).toStream().to("out")));
        m.put("table.filter", p -> sb(b -> b.<String, String>table("in")
            .filter((k, v) -> v.length() > 2).toStream().to("out")));
        m.put("table.filter.named", p -> sb(b -> b.<String, String>table("in")
            .filter((k, v) -> v.length() > 2, Named.as("flt")).toStream().to("out")));
        m.put("table.filter.materialized", p -> sb(b -> b.<String, String>table("in")
            .filter((k, v) -> v.length() > 2, Materialized.as("f")).toStream().to("out")));
        m.put("table.filter.named.materialized", p -> sb(b -> b.<String, String>table("in")
            .filter((k, v) -> v.length() > 2, Named.as("flt"), Materialized.as("f")).toStream().to("out")));
        m.put("table.filterNot", p -> sb(b -> b.<String, String>table("in")
            .filterNot((k, v) -> v.startsWith("a")).toStream().to("out")));
        m.put("table.mapValues", p -> sb(b -> b.<String, String>table("in")
            .mapValues(v -> v.toUpperCase()).toStream().to("out")));
        m.put("table.mapValues.withKey", p -> sb(b -> b.<String, String>table("in")
            .mapValues((k, v) -> k + "=" + v).toStream().to("out")));
        m.put("table.mapValues.materialized", p -> sb(b -> b.<String, String>table("in")
            .mapValues(v -> v.toUpperCase(), Materialized.as("mv")).toStream().to("out")));
        m.put("table.mapValues.named.materialized", p -> sb(b -> b.<String, String>table("in")
            .mapValues(v -> v.toUpperCase(), Named.as("up"), Materialized.as("mv")).toStream().to("out")));
        m.put("table.toStream.mapper", p -> sb(b -> b.<String, String>table("in")
            .toStream((k, v) -> k + "!").to("out")));
        m.put("table.toStream.named", p -> sb(b -> b.<String, String>table("in")
            .toStream(Named.as("changes")).to("out")));
        m.put("table.toStream.mapper.named", p -> sb(b -> b.<String, String>table("in")
            .toStream((k, v) -> k + "!", Named.as("changes")).to("out")));
        m.put("table.groupBy.count", p -> sb(b -> b.<String, String>table("in")
            .groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), v)).count().toStream()
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("table.groupBy.count.materialized", p -> sb(b -> b.<String, String>table("in")
            .groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), v)).count(Materialized.as("tc")).toStream()
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("table.groupBy.count.named", p -> sb(b -> b.<String, String>table("in")
            .groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), v)).count(Named.as("cnt")).toStream()
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("table.groupBy.reduce", p -> sb(b -> b.<String, String>table("in")
            .groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), v), Grouped.as("by-first"))
            .reduce((a, v) -> a + "+" + v, (a, v) -> a + "-" + v).toStream().to("out")));
        m.put("table.groupBy.reduce.materialized", p -> sb(b -> b.<String, String>table("in")
            .groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), v))
            .reduce((a, v) -> a + "+" + v, (a, v) -> a + "-" + v, Materialized.as("tr")).toStream().to("out")));
        m.put("table.groupBy.aggregate", p -> sb(b -> b.<String, String>table("in")
            .groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), v))
            .aggregate(() -> 0L, (k, v, a) -> a + v.length(), (k, v, a) -> a - v.length(),
                Materialized.with(Serdes.String(), Serdes.Long()))
            .toStream().to("out")));
        m.put("table.groupBy.aggregate.named.materialized", p -> sb(b -> b.<String, String>table("in")
            .groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), v))
            .aggregate(() -> 0L, (k, v, a) -> a + v.length(), (k, v, a) -> a - v.length(), Named.as("sum"),
                Materialized.<String, Long, KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("sum-store")
                    .withValueSerde(Serdes.Long()))
            .toStream().to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("table.join", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.join(b.<String, String>table("in2"), (a, c) -> a + "|" + c).toStream().to("out");
        }));
        m.put("table.leftJoin", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.leftJoin(b.<String, String>table("in2"), (a, c) -> a + "|" + orDash(c)).toStream().to("out");
        }));
        m.put("table.outerJoin", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.outerJoin(b.<String, String>table("in2"), (a, c) -> orDash(a) + "|" + orDash(c)).toStream().to("out");
        }));
        m.put("table.join.named", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.join(b.<String, String>table("in2"), (a, c) -> a + "|" + c, Named.as("jn")).toStream().to("out");
        }));
        m.put("table.join.materialized", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.join(b.<String, String>table("in2"), (a, c) -> a + "|" + c, Materialized.as("j")).toStream().to("out");
        }));
        m.put("table.join.named.materialized", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.join(b.<String, String>table("in2"), (a, c) -> a + "|" + c, Named.as("jn"), Materialized.as("j"))
                .toStream().to("out");
        }));
        m.put("table.suppress.timeLimit", p -> sb(b -> b.<String, String>table("in")
            .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(1000), BufferConfig.unbounded())).toStream().to("out")));
        m.put("table.suppress.maxRecords", p -> sb(b -> b.<String, String>table("in")
            .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(1000), BufferConfig.maxRecords(2).emitEarlyWhenFull()))
            .toStream().to("out")));
        m.put("count.suppress.maxBytes", p -> sb(b -> b.<String, String>stream("in").groupByKey().count()
            .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(2000), BufferConfig.maxBytes(120).emitEarlyWhenFull()))
            .toStream().to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("toTable", p -> sb(b -> b.<String, String>stream("in").toTable().toStream().to("out")));
        m.put("toTable.named", p -> sb(b -> b.<String, String>stream("in")
            .toTable(Named.as("as-table")).toStream().to("out")));
        m.put("toTable.materialized", p -> sb(b -> b.<String, String>stream("in")
            .toTable(Materialized.as("tt")).toStream().to("out")));
        m.put("toTable.named.materialized", p -> sb(b -> b.<String, String>stream("in")
            .toTable(Named.as("as-table"), Materialized.as("tt")).toStream().to("out")));
        m.put("toTable.rekeyed", p -> sb(b -> b.<String, String>stream("in")
            .selectKey((k, v) -> v == null ? null : v.substring(0, 1)).toTable().toStream().to("out")));
    }

    // ------------------------------------------------------------------ stream-table and global joins
    static void joins(final Map<String, Scenario> m) {
        m.put("sjoin.table", p -> sb(b -> {
            final KTable<String, String> t = b.table("tbl");
            b.<String, String>stream("in").join(t, (v, tv) -> v + "|" + tv).to("out");
        }));
        m.put("sleftJoin.table", p -> sb(b -> {
            final KTable<String, String> t = b.table("tbl");
            b.<String, String>stream("in").leftJoin(t, (v, tv) -> v + "|" + orDash(tv)).to("out");
        }));
        m.put("sjoin.table.withKey", p -> sb(b -> {
            final KTable<String, String> t = b.table("tbl");
            b.<String, String>stream("in").join(t, (k, v, tv) -> k + ":" + v + "|" + tv).to("out");
        }));
        m.put("sjoin.table.joined", p -> sb(b -> {
            final KTable<String, String> t = b.table("tbl");
            b.<String, String>stream("in").selectKey((k, v) -> v == null ? null : v.substring(0, 1))
                .join(t, (v, tv) -> v + "|" + tv, Joined.with(Serdes.String(), Serdes.String(), Serdes.String(), "jn"))
                .to("out");
        }));
        m.put("sjoin.table.rekeyed", p -> sb(b -> {
            final KTable<String, String> t = b.table("tbl");
            b.<String, String>stream("in").selectKey((k, v) -> v == null ? null : v.substring(0, 1))
                .join(t, (v, tv) -> v + "|" + tv).to("out");
        }));
        m.put("sjoin.global", p -> sb(b -> {
            final GlobalKTable<String, String> g = b.globalTable("glb");
            b.<String, String>stream("in").join(g, (k, v) -> v == null ? null : v.substring(0, 1), (v, gv) -> v + "|" + gv).to("out");
        }));
        m.put("sleftJoin.global", p -> sb(b -> {
            final GlobalKTable<String, String> g = b.globalTable("glb");
            b.<String, String>stream("in").leftJoin(g, (k, v) -> v == null ? null : v.substring(0, 1), (v, gv) -> v + "|" + orDash(gv))
                .to("out");
        }));
        m.put("sjoin.global.named", p -> sb(b -> {
            final GlobalKTable<String, String> g = b.globalTable("glb", Materialized.as("g-store"));
            b.<String, String>stream("in").join(g, (k, v) -> v == null ? null : v.substring(0, 1), (k, v, gv) -> orDash(k) + ":" + v + "|" + gv,
                Named.as("gj")).to("out");
        }));
        m.put("sjoin.global.consumed", p -> sb(b -> {
            final GlobalKTable<String, String> g = b.globalTable("glb", Consumed.with(Serdes.String(), Serdes.String()));
            b.<String, String>stream("in").join(g, (k, v) -> v == null ? null : v.substring(0, 1), (v, gv) -> v + "|" + gv)
                .to("out");
        }));
        m.put("sjoin.global.consumed.materialized", p -> sb(b -> {
            final GlobalKTable<String, String> g = b.globalTable("glb", Consumed.with(Serdes.String(), Serdes.String()),
                Materialized.as("g-store"));
            b.<String, String>stream("in").leftJoin(g, (k, v) -> v == null ? null : v.substring(0, 1),
                (v, gv) -> v + "|" + orDash(gv)).to("out");
        }));
        m.put("globalStore", p -> sb(b -> {
            b.addGlobalStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("gstore"), Serdes.String(),
                    Serdes.String()).withLoggingDisabled(), "glb", Consumed.with(Serdes.String(), Serdes.String()),
                () -> new ContextualProcessor<String, String, Void, Void>() {
                    private KeyValueStore<String, String> store;

                    @Override
                    public void init(final org.apache.kafka.streams.processor.api.ProcessorContext<Void, Void> context) {
                        super.init(context);
                        store = context.getStateStore("gstore");
                    }

                    @Override
                    public void process(final Record<String, String> record) {
                        if (record.key() == null) {
                            return;
                        }
                        if (record.value() == null) {
                            store.delete(record.key());
                        } else {
                            store.put(record.key(), record.value());
                        }
                    }
                });
            b.<String, String>stream("in").process(() -> new ContextualProcessor<String, String, String, String>() {
                private KeyValueStore<String, String> store;

                @Override
                public void init(final org.apache.kafka.streams.processor.api.ProcessorContext<String, String> context) {
                    super.init(context);
                    store = context.getStateStore("gstore");
                }

                @Override
                public void process(final Record<String, String> record) {
                    final String found = record.key() == null ? null : store.get(record.key());
                    context().forward(record.withValue(orDash(record.value()) + "|" + orDash(found)));
                }
            }).to("out");
        }));
    }

    // ------------------------------------------------------------------ failure modes
    static void failures(final Map<String, Scenario> m) {
        m.put("fail.deserialization", p -> sb(b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.Long()))
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("fail.processing", p -> sb(b -> b.<String, String>stream("in").mapValues(v -> {
            if (v != null && v.startsWith("x")) {
                throw new IllegalStateException("boom " + v);
            }
            return v;
        }).to("out")));
        m.put("fail.sink.wrongSerde", p -> sb(b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.Long()))
            .mapValues(v -> v).to("out")));
        m.put("fail.extractor.negative", p -> sb(b -> b.stream("in",
            Consumed.with(Serdes.String(), Serdes.String()).withTimestampExtractor(new ValueTimestampExtractor())).to("out")));
        m.put("fail.extractor.consumedWith", p -> sb(b -> b.<String, String>stream("in",
            Consumed.with(new ValueTimestampExtractor())).to("out")));
        m.put("fail.suppress.notWindowed", p -> sb(b -> b.<String, String>table("in")
            .suppress(untilWindowClosesUnchecked()).toStream().to("out")));
        m.put("fail.store.notConnected", p -> sb(b -> {
            b.addStateStore(countsStore());
            b.<String, String>stream("in").process(CountingProcessor::new).to("out");
        }));
        m.put("fail.flatMap.null", p -> sb(b -> b.<String, String>stream("in")
            .flatMap((k, v) -> v != null && v.startsWith("x") ? null : List.of(KeyValue.pair(k, v))).to("out")));
        m.put("fail.suppress.shutDown", p -> sb(b -> b.<String, String>table("in")
            .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(1000), BufferConfig.maxRecords(1).shutDownWhenFull()))
            .toStream().to("out")));
        m.put("fail.join.gracePeriod", p -> sb(b -> {
            final KTable<String, String> t = b.table("tbl");
            b.<String, String>stream("in").join(t, (v, tv) -> v + "|" + tv,
                Joined.with(Serdes.String(), Serdes.String(), Serdes.String()).withGracePeriod(Duration.ofMillis(100)))
                .to("out");
        }));
        m.put("fail.timeWindows.zeroSize", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ZERO)).count().toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("fail.sessionWindows.zeroGap", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ZERO)).count().toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("fail.sessionWindows.negativeGap", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMillis(-1))).count().toStream()
            .map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("fail.retention.tooSmall", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(1000)))
            .count(Named.as("wc"), Materialized.<String, Long, org.apache.kafka.streams.state.WindowStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("w-store")
                .withRetention(Duration.ofMillis(500)))
            .toStream().map((w, c) -> KeyValue.pair(wk(w), c)).to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("extractor.default.repartition", p -> sb(b -> b.<String, String>stream("in")
            .selectKey((k, v) -> v == null ? null : v.substring(0, 1)).mapValues(v -> v == null ? null : v + "0")
            .groupByKey().count().toStream().to("out", Produced.with(Serdes.String(), Serdes.Long()))));
    }

    // ------------------------------------------------------------------ API forms: static factories, driver overloads
    static void apiForms(final Map<String, Scenario> m) {
        m.put("api.passThrough", p -> sb(b -> b.<String, String>stream("in").to("out")));
        m.put("api.produced.keySerde", p -> sb(b -> b.<String, String>stream("in")
            .to("out", Produced.keySerde(Serdes.String()))));
        m.put("api.produced.partitioner", p -> sb(b -> b.<String, String>stream("in")
            .to("out", Produced.with(Serdes.String(), Serdes.String(), (t, k, v, n) -> Optional.of(Set.of(0))))));
        m.put("api.grouped.valueSerde", p -> sb(b -> b.<String, String>stream("in")
            .groupBy((k, v) -> v, Grouped.valueSerde(Serdes.String())).count().toStream()
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("api.consumed.as", p -> sb(b -> b.<String, String>stream("in", Consumed.as("source")).to("out")));
        m.put("api.table.consumed.as", p -> sb(b -> b.<String, String>table("in", Consumed.as("src")).toStream().to("out")));
        m.put("api.materialized.storeSupplier", p -> sb(b -> b.<String, String>stream("in").groupByKey()
            .count(Named.as("cnt"), Materialized.as(Stores.inMemoryKeyValueStore("mem-counts"))).toStream()
            .to("out", Produced.with(Serdes.String(), Serdes.Long()))));
        m.put("api.serdeFrom", p -> sb(b -> b.stream("in", Consumed.with(Serdes.serdeFrom(String.class), Serdes.serdeFrom(String.class)))
            .to("out", Produced.with(Serdes.String(), Serdes.String()))));
    }
}
