package interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * The Java side of tests/kafka/test_java_interop.py: two Kafka Streams applications in one JVM,
 * exactly_once_v2, caches off.
 *
 * <ul>
 *   <li>{@code serdeApp}: for each serde, reads {@code <in><name>} with Kafka's serde and writes
 *       every record back through the same serde to {@code <out><name>} (JSON: read as String,
 *       parsed and written again by Jackson), and what it decoded, rendered by {@link #canon}, to
 *       {@code seen} (key: the serde's name; value: {@code [key, value]} as JSON).
 *   <li>{@code changeApp}: {@code table(tableIn).groupBy((user, v) -> (region of v, v)).count()},
 *       the KTable re-grouping whose repartition topic carries Change records.
 * </ul>
 *
 * <p>Arguments are {@code key=value}. It runs until its standard input closes, then closes both
 * applications and exits 0; any exception in either (a record its serde cannot read included)
 * prints "INTEROP FAILED" and the stack trace and exits 1; so does running longer than
 * {@code maxSeconds}.
 */
public final class Interop {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final long START = System.nanoTime();

    private Interop() {}

    public static void main(final String[] args) throws Exception {
        final Map<String, String> a = new HashMap<>();
        for (final String arg : args) {
            final int eq = arg.indexOf('=');
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        final KafkaStreams serdes = new KafkaStreams(serdeTopology(a), props(a, a.get("serdeApp")));
        final KafkaStreams change = new KafkaStreams(
            changeTopology(a.get("tableIn"), a.get("changeOut")), props(a, a.get("changeApp")));
        final CompletableFuture<Throwable> stop = new CompletableFuture<>();
        for (final KafkaStreams streams : List.of(serdes, change)) {
            final String name = streams == serdes ? "serdeApp" : "changeApp";
            streams.setStateListener((now, before) -> log(name + " " + before + " -> " + now));
            streams.setUncaughtExceptionHandler(e -> {
                stop.complete(new RuntimeException(name + " failed", e));
                return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
        }
        final Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() != -1) {
                    // wait for the end of input: the test's signal to stop
                }
            } catch (final IOException ignored) {
                // a closed pipe is a stop too
            }
            stop.complete(null);
        });
        stdin.setDaemon(true);
        stdin.start();
        serdes.start();
        change.start();
        Throwable failure;
        try {
            failure = stop.get(Long.parseLong(a.get("maxSeconds")), TimeUnit.SECONDS);
        } catch (final TimeoutException e) {
            failure = new IllegalStateException("not stopped within maxSeconds=" + a.get("maxSeconds"));
        }
        log("closing");
        serdes.close(Duration.ofSeconds(15));
        change.close(Duration.ofSeconds(15));
        if (failure != null) {
            System.err.println("INTEROP FAILED");
            failure.printStackTrace();
            System.exit(1);
        }
        log("closed");
        System.exit(0);
    }

    private static void log(final String line) {
        System.out.println((System.nanoTime() - START) / 1_000_000 + " ms " + line);
        System.out.flush();
    }

    private static Properties props(final Map<String, String> a, final String applicationId) {
        final Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, a.get("stateDir"));
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        // keep the repartition records (Kafka Streams deletes those it has committed) for the test to read
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, Long.MAX_VALUE);
        return p;
    }

    private static Topology serdeTopology(final Map<String, String> a) {
        final StreamsBuilder b = new StreamsBuilder();
        final String in = a.get("in");
        final String out = a.get("out");
        final String seen = a.get("seen");
        final long windowSize = Long.parseLong(a.get("windowSize"));
        passThrough(b, in, out, seen, "string", Serdes.String(), Serdes.String());
        passThrough(b, in, out, seen, "long", Serdes.Long(), Serdes.Long());
        passThrough(b, in, out, seen, "integer", Serdes.Integer(), Serdes.Integer());
        passThrough(b, in, out, seen, "short", Serdes.Short(), Serdes.Short());
        passThrough(b, in, out, seen, "double", Serdes.Double(), Serdes.Double());
        passThrough(b, in, out, seen, "float", Serdes.Float(), Serdes.Float());
        passThrough(b, in, out, seen, "boolean", Serdes.Boolean(), Serdes.Boolean());
        passThrough(b, in, out, seen, "bytes", Serdes.ByteArray(), Serdes.ByteArray());
        passThrough(b, in, out, seen, "uuid", Serdes.UUID(), Serdes.UUID());
        passThrough(b, in, out, seen, "void", Serdes.Void(), Serdes.Void());
        passThrough(b, in, out, seen, "twin",
            WindowedSerdes.timeWindowedSerdeFrom(String.class, windowSize), Serdes.Long());
        passThrough(b, in, out, seen, "swin", WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long());
        // Kafka has no JSON serde: read as String, parsed and written again by Jackson
        final KStream<String, String> json = b.stream(in + "json", Consumed.with(Serdes.String(), Serdes.String()));
        json.map((k, v) -> KeyValue.pair("json", render(parse(k), parse(v))))
            .to(seen, Produced.with(Serdes.String(), Serdes.String()));
        json.map((k, v) -> KeyValue.pair(write(parse(k)), write(parse(v))))
            .to(out + "json", Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    private static <K, V> void passThrough(final StreamsBuilder b, final String in, final String out,
                                           final String seen, final String name, final Serde<K> keySerde,
                                           final Serde<V> valueSerde) {
        final KStream<K, V> stream = b.stream(in + name, Consumed.with(keySerde, valueSerde));
        stream.map((k, v) -> KeyValue.pair(name, render(k, v)))
            .to(seen, Produced.with(Serdes.String(), Serdes.String()));
        stream.to(out + name, Produced.with(keySerde, valueSerde));
    }

    private static Topology changeTopology(final String tableIn, final String changeOut) {
        final StreamsBuilder b = new StreamsBuilder();
        b.table(tableIn, Consumed.with(Serdes.String(), Serdes.String()))
            .groupBy((user, v) -> KeyValue.pair(v.split(":")[0], v), Grouped.with(Serdes.String(), Serdes.String()))
            .count()
            .toStream()
            .to(changeOut, Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    private static JsonNode parse(final String json) {
        try {
            return json == null ? null : MAPPER.readTree(json);
        } catch (final IOException e) {
            throw new UncheckedIOException("not JSON: " + json, e);
        }
    }

    private static String write(final JsonNode tree) {
        try {
            return tree == null ? null : MAPPER.writeValueAsString(tree);
        } catch (final IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String render(final Object key, final Object value) {
        final ArrayNode pair = NODES.arrayNode();
        pair.add(canon(key));
        pair.add(canon(value));
        return write(pair);
    }

    /** A decoded key or value as JSON, as the test's canon() renders the Python value. */
    private static JsonNode canon(final Object o) {
        if (o == null) {
            return NODES.nullNode();
        } else if (o instanceof String s) {
            return NODES.textNode(s);
        } else if (o instanceof Long || o instanceof Integer || o instanceof Short) {
            return NODES.numberNode(((Number) o).longValue());
        } else if (o instanceof Boolean bool) {
            return NODES.booleanNode(bool);
        } else if (o instanceof Double d) {
            return tagged("f64", String.format("%016x", Double.doubleToRawLongBits(d)));
        } else if (o instanceof Float f) {
            return tagged("f32", String.format("%08x", Float.floatToRawIntBits(f)));
        } else if (o instanceof byte[] bytes) {
            return tagged("b", HexFormat.of().formatHex(bytes));
        } else if (o instanceof UUID uuid) {
            return tagged("u", uuid.toString());
        } else if (o instanceof JsonNode tree) {
            final ObjectNode node = NODES.objectNode();
            node.set("j", tree);
            return node;
        } else if (o instanceof Windowed<?> windowed) {
            final ArrayNode w = NODES.arrayNode();
            w.add(canon(windowed.key()));
            w.add(windowed.window().start());
            w.add(windowed.window().end());
            final ObjectNode node = NODES.objectNode();
            node.set("w", w);
            return node;
        }
        throw new IllegalArgumentException("no rendering for " + o.getClass());
    }

    private static JsonNode tagged(final String tag, final String text) {
        final ObjectNode node = NODES.objectNode();
        node.put(tag, text);
        return node;
    }
}
