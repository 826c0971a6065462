package bench;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.processor.api.ContextualProcessor;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * examples/valuation_signals.py ported to Kafka Streams: the same topology (valuations
 * repartitioned to 5 partitions as {@code valuations-by-code}, a KTable {@code valuations-in-force},
 * the prices' KStream-KTable join {@code join-valuation}, the GlobalKTable join
 * {@code join-company-master} on {@code company-master}, the filter {@code per-below-threshold},
 * the dedup processor {@code once-per-company-per-day} on the persistent store
 * {@code signal-company-state-store}), the same value bytes: JSON objects as kspark's
 * {@code Serdes.JSON()} writes them (Python's {@code json.dumps(separators=(",", ":"),
 * ensure_ascii=False)}: keys in insertion order, floats in Python's repr, non-ASCII text as UTF-8),
 * and the same arithmetic (IEEE doubles, Python's {@code round(x, n)}).
 *
 * <p>Arguments are {@code key=value}: bootstrap, appId, stateDir, prices, valuations, companies,
 * signals (topic names; defaults as the example's), threads (default 2), threshold (default 0.05),
 * idleMs ({@code max.task.idle.ms}, default 5000), sessionTimeoutMs (the consumers' session timeout,
 * Kafka's 45 s if not given: a closed application's member leaves the group when it expires).
 * exactly_once_v2, commit.interval.ms 100 (Kafka's default under EOS). {@code mode=live} (bench/run.py's
 * P2-java latency phase): prints "RUNNING" once the application is running and runs until standard
 * input is closed (then prints the JSON line below; its records are the input's ends at the start).
 *
 * <p>{@code max.task.idle.ms}: the join task reads the prices and the repartitioned valuations;
 * when the latter is still empty at start-up (the repartition sub-topology has not committed yet),
 * Kafka Streams would process prices ahead of older valuations. The example's semantics (each
 * price sees the valuation in force at its timestamp, as kspark processes each task in timestamp
 * order) are Kafka Streams' with enough idling for the repartition topic to fill
 * ({@code max.task.idle.ms}, KIP-353/KIP-695).
 *
 * <p>The clock runs from {@code KafkaStreams.start()} until the group's committed offsets
 * (committed in the same transactions as the signals) reach the end offsets of the prices and
 * valuations (polled every 20 ms); prints one JSON line (records, seconds, cpu_seconds of the
 * whole JVM, peak_rss_mb) and exits 0. A stream thread failure prints "STREAMS FAILED" and exits 1.
 */
public final class Flagship {
    private Flagship() {}

    static final String SIGNAL_STORE = "signal-company-state-store";
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final TypeReference<LinkedHashMap<String, Object>> MAP = new TypeReference<>() {};

    /** kspark's {@code Serdes.JSON()} for flat JSON objects. */
    static final class Json implements Serializer<Map<String, Object>>, Deserializer<Map<String, Object>> {
        @Override
        public byte[] serialize(final String topic, final Map<String, Object> data) {
            return data == null ? null : write(data).getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public Map<String, Object> deserialize(final String topic, final byte[] data) {
            if (data == null) return null;
            try {
                return MAPPER.readValue(data, MAP);
            } catch (java.io.IOException e) {
                throw new org.apache.kafka.common.errors.SerializationException("bad JSON on " + topic, e);
            }
        }

        @Override
        public void configure(final Map<String, ?> configs, final boolean isKey) {}

        @Override
        public void close() {}
    }

    static final Serde<Map<String, Object>> JSON = Serdes.serdeFrom(new Json(), new Json());

    /** A flat object as Python's json.dumps(separators=(",", ":"), ensure_ascii=False). */
    static String write(final Map<String, Object> data) {
        final StringBuilder b = new StringBuilder(256).append('{');
        boolean first = true;
        for (final Map.Entry<String, Object> e : data.entrySet()) {
            if (!first) b.append(',');
            first = false;
            string(b, e.getKey());
            b.append(':');
            final Object v = e.getValue();
            if (v == null) b.append("null");
            else if (v instanceof String) string(b, (String) v);
            else if (v instanceof Double) b.append(pyRepr((Double) v));
            else if (v instanceof Boolean) b.append(((Boolean) v) ? "true" : "false");
            else if (v instanceof Integer || v instanceof Long || v instanceof java.math.BigInteger) b.append(v);
            else throw new IllegalArgumentException("not a flat JSON value: " + v);
        }
        return b.append('}').toString();
    }

    private static void string(final StringBuilder b, final String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            final char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                case '\b': b.append("\\b"); break;
                case '\f': b.append("\\f"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
            }
        }
        b.append('"');
    }

    /** Python's repr of a float: the shortest decimal that reads back as {@code d}. */
    static String pyRepr(final double d) {
        if (Double.isNaN(d)) return "NaN";
        if (Double.isInfinite(d)) return d > 0 ? "Infinity" : "-Infinity";
        if (d == 0) return (1 / d < 0) ? "-0.0" : "0.0";
        final BigDecimal exact = new BigDecimal(d);
        BigDecimal r = exact;
        for (int p = 1; p <= 17; p++) {
            r = exact.round(new MathContext(p, RoundingMode.HALF_EVEN));
            if (r.doubleValue() == d) break;
        }
        r = r.stripTrailingZeros();
        final String digits = r.unscaledValue().abs().toString();
        final int decpt = digits.length() - r.scale();  // value = 0.digits * 10^decpt
        final StringBuilder b = new StringBuilder(d < 0 ? "-" : "");
        if (decpt > -4 && decpt <= 16) {
            if (decpt <= 0) {
                b.append("0.").append("0".repeat(-decpt)).append(digits);
            } else if (decpt >= digits.length()) {
                b.append(digits).append("0".repeat(decpt - digits.length())).append(".0");
            } else {
                b.append(digits, 0, decpt).append('.').append(digits.substring(decpt));
            }
        } else {
            b.append(digits.charAt(0));
            if (digits.length() > 1) b.append('.').append(digits.substring(1));
            final int exp = decpt - 1;
            b.append('e').append(exp < 0 ? '-' : '+').append(String.format("%02d", Math.abs(exp)));
        }
        return b.toString();
    }

    /** Python's round(x, n) on a float: the exact value rounded half-even to n decimals. */
    static double round(final double x, final int n) {
        if (Double.isNaN(x) || Double.isInfinite(x)) return x;
        return new BigDecimal(x).setScale(n, RoundingMode.HALF_EVEN).doubleValue();
    }

    /** Event time of a price = its snapshot_ts (ISO 8601 with offset), in ms. */
    static final class SnapshotTimestampExtractor implements TimestampExtractor {
        @Override
        @SuppressWarnings("unchecked")
        public long extract(final ConsumerRecord<Object, Object> record, final long partitionTime) {
            final String iso = (String) ((Map<String, Object>) record.value()).get("snapshot_ts");
            return OffsetDateTime.parse(iso).toInstant().toEpochMilli();
        }
    }

    static Map<String, Object> realtimeValuation(final Map<String, Object> price, final Map<String, Object> val) {
        final double close = Double.parseDouble((String) price.get("close"));
        final double eps = Double.parseDouble((String) val.get("eps"));
        final double bps = Double.parseDouble((String) val.get("bps"));
        final Map<String, Object> out = new LinkedHashMap<>();
        out.put("code", price.get("code"));
        out.put("name", price.get("name"));
        out.put("trade_date", price.get("trade_date"));
        out.put("snapshot_ts", price.get("snapshot_ts"));
        out.put("close", close);
        out.put("valuation_date", val.get("date"));
        out.put("per_prev", Double.parseDouble((String) val.get("per")));
        out.put("pbr_prev", Double.parseDouble((String) val.get("pbr")));
        out.put("per_now", eps > 0 ? round(close / eps, 4) : null);
        out.put("pbr_now", bps > 0 ? round(close / bps, 4) : null);
        return out;
    }

    static Map<String, Object> withCompany(final Map<String, Object> v, final Map<String, Object> company) {
        final Map<String, Object> out = new LinkedHashMap<>(v);
        out.put("name", company.get("name"));
        out.put("sector", company.get("sector"));
        return out;
    }

    /** Forwards the first candidate of a company on a trading day; the store remembers the day. */
    static final class SignalOncePerDay extends ContextualProcessor<String, Map<String, Object>, String, Map<String, Object>> {
        private KeyValueStore<String, String> store;

        @Override
        public void init(final org.apache.kafka.streams.processor.api.ProcessorContext<String, Map<String, Object>> context) {
            super.init(context);
            store = context.getStateStore(SIGNAL_STORE);
        }

        @Override
        public void process(final Record<String, Map<String, Object>> record) {
            final String day = (String) record.value().get("trade_date");
            if (day.equals(store.get(record.key()))) return;
            store.put(record.key(), day);
            final Map<String, Object> v = new LinkedHashMap<>(record.value());
            v.put("per_drop_pct", round(100 * (1 - (Double) v.get("per_now") / (Double) v.get("per_prev")), 2));
            context().forward(record.withValue(v));
        }
    }

    static Topology topology(final Map<String, String> args) {
        final double threshold = Double.parseDouble(args.getOrDefault("threshold", "0.05"));
        final StreamsBuilder builder = new StreamsBuilder();
        builder.addStateStore(Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore(SIGNAL_STORE), Serdes.String(), Serdes.String()));
        final KTable<String, Map<String, Object>> table = builder
                .stream(args.getOrDefault("valuations", "valuations"), Consumed.with(Serdes.String(), JSON))
                .repartition(Repartitioned.<String, Map<String, Object>>as("valuations-by-code")
                        .withKeySerde(Serdes.String()).withValueSerde(JSON).withNumberOfPartitions(5))
                .toTable(Materialized.<String, Map<String, Object>, KeyValueStore<Bytes, byte[]>>as("valuations-in-force")
                        .withKeySerde(Serdes.String()).withValueSerde(JSON));
        final GlobalKTable<String, Map<String, Object>> companies = builder.globalTable(
                args.getOrDefault("companies", "companies"), Consumed.with(Serdes.String(), JSON),
                Materialized.<String, Map<String, Object>, KeyValueStore<Bytes, byte[]>>as("company-master")
                        .withKeySerde(Serdes.String()).withValueSerde(JSON));
        builder.stream(args.getOrDefault("prices", "prices"),
                        Consumed.with(Serdes.String(), JSON).withTimestampExtractor(new SnapshotTimestampExtractor()))
                .join(table, Flagship::realtimeValuation, Joined.with(Serdes.String(), JSON, JSON).withName("join-valuation"))
                .join(companies, (code, v) -> (String) v.get("code"), Flagship::withCompany, Named.as("join-company-master"))
                .filter((code, v) -> v.get("per_now") != null && (Double) v.get("per_prev") > 0
                        && (Double) v.get("per_now") <= (Double) v.get("per_prev") * (1 - threshold),
                        Named.as("per-below-threshold"))
                .process(SignalOncePerDay::new, Named.as("once-per-company-per-day"), SIGNAL_STORE)
                .to(args.getOrDefault("signals", "signals"), Produced.with(Serdes.String(), JSON));
        return builder.build();
    }

    public static void main(final String[] argv) throws Exception {
        final Map<String, String> args = java.util.Arrays.stream(argv)
                .map(a -> a.split("=", 2)).collect(Collectors.toMap(a -> a[0], a -> a[1]));
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args.get("appId"));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
        props.put(StreamsConfig.STATE_DIR_CONFIG, args.get("stateDir"));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args.getOrDefault("threads", "2")));
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, Long.parseLong(args.getOrDefault("idleMs", "5000")));
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        if (args.containsKey("sessionTimeoutMs")) {  // a test that hands the group over waits for it to expire
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG),
                      Integer.parseInt(args.get("sessionTimeoutMs")));
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 500);
        }
        final KafkaStreams streams = new KafkaStreams(topology(args), props);
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("STREAMS FAILED");
            e.printStackTrace(System.out);
            System.out.flush();
            Runtime.getRuntime().halt(1);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        final Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
        try (Admin admin = Admin.create(adminProps)) {
            final Map<TopicPartition, Long> ends = new HashMap<>();
            for (final String topic : List.of(args.getOrDefault("prices", "prices"),
                    args.getOrDefault("valuations", "valuations"))) {
                ends.putAll(Offsets.endOffsets(admin, topic));
            }
            final long records = ends.values().stream().mapToLong(Long::longValue).sum();
            final double cpu0 = SessionCount.cpuSeconds();
            final long t0 = System.nanoTime();
            streams.start();
            if ("live".equals(args.getOrDefault("mode", "backlog"))) {
                while (streams.state() != KafkaStreams.State.RUNNING) {
                    TimeUnit.MILLISECONDS.sleep(20);
                }
                System.out.println("RUNNING");
                System.out.flush();
                while (System.in.read() >= 0) {
                    // until the benchmark closes our standard input
                }
            } else {
                while (!Offsets.caughtUp(admin, args.get("appId"), ends)) {
                    TimeUnit.MILLISECONDS.sleep(20);
                }
            }
            final double seconds = (System.nanoTime() - t0) / 1e9;
            final double cpu = SessionCount.cpuSeconds() - cpu0;
            streams.close();
            System.out.printf("{\"records\": %d, \"seconds\": %.3f, \"cpu_seconds\": %.2f, \"peak_rss_mb\": %d}%n",
                    records, seconds, cpu, SessionCount.peakRssMb());
            System.out.flush();
        }
    }
}
