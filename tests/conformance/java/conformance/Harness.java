package conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Runs the conformance catalogue on Kafka's TopologyTestDriver.
 *
 * <p>Usage: {@code java conformance.Harness requests.jsonl results.jsonl}. One JSON object per
 * line in each file; one JVM runs every request (JVM start-up costs about a second). A request:
 * {@code {"id", "scenario", "params", "config", "steps", "outputs", "stores"}}; a step pipes one
 * record ({@code {"pipe": topic, "k": hex|null, "v": hex|null, "ts": ms, "h": [[name, hex|null]]}},
 * optionally with a {@code "form"} naming a TestInputTopic overload) or advances the wall clock
 * ({@code {"advance": ms}}). The result holds describe(), per step the records read from every
 * output topic (bytes as hex), the first error (class and message of each cause) and the store
 * contents rendered canonically (see {@link #canon}); tests/conformance/harness.py reads it.
 */
public final class Harness {
    static final ObjectMapper JSON = new ObjectMapper();
    static final JsonNodeFactory F = JsonNodeFactory.instance;

    /** Kafka's state.dir for this JVM only: the default /tmp/kafka-streams is shared with every
     *  other Kafka Streams test on the machine, and a driver's close() deletes it. */
    static Path stateDir;

    public static void main(final String[] args) throws Exception {
        final Map<String, Scenario> catalogue = Catalogue.all();
        stateDir = Files.createTempDirectory("kspark-conformance-state-");
        try (BufferedReader in = Files.newBufferedReader(Path.of(args[0]), StandardCharsets.UTF_8);
             BufferedWriter out = Files.newBufferedWriter(Path.of(args[1]), StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                final JsonNode request = JSON.readTree(line);
                out.write(JSON.writeValueAsString(run(catalogue, request)));
                out.newLine();
            }
        } finally {
            try (java.util.stream.Stream<Path> paths = Files.walk(stateDir)) {
                paths.sorted(java.util.Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
            }
        }
    }

    static ObjectNode run(final Map<String, Scenario> catalogue, final JsonNode request) {
        final ObjectNode result = F.objectNode();
        result.put("id", request.get("id").asText());
        final String name = request.get("scenario").asText();
        final Scenario scenario = catalogue.get(name);
        if (scenario == null) {
            result.set("error", errorNode("build", new IllegalArgumentException("no Java scenario " + name)));
            return result;
        }
        final Map<String, String> params = new HashMap<>();
        request.path("params").properties().forEach(e -> params.put(e.getKey(), e.getValue().asText()));
        final Path tmpdir;  // for files a topology writes (Printed.toFile): compared after the run
        try {
            tmpdir = Files.createTempDirectory("kspark-conformance-");
        } catch (final java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        params.put("tmpdir", tmpdir.toString());
        try {
            return run(scenario, request, params, result);
        } finally {
            final ObjectNode files = F.objectNode();
            try (java.util.stream.Stream<Path> paths = Files.list(tmpdir)) {
                for (final Path path : (Iterable<Path>) paths.sorted()::iterator) {
                    files.put(path.getFileName().toString(), Files.readString(path, StandardCharsets.UTF_8));
                    Files.delete(path);
                }
                Files.delete(tmpdir);
            } catch (final java.io.IOException e) {
                files.put("(error)", e.toString());
            }
            result.set("files", files);
        }
    }

    static ObjectNode run(final Scenario scenario, final JsonNode request, final Map<String, String> params,
                          final ObjectNode result) {
        final Properties props = new Properties();
        props.put("application.id", "app");
        props.put("bootstrap.servers", "dummy:1234");
        props.put("state.dir", stateDir.toString());
        request.path("config").properties().forEach(e -> props.put(e.getKey(), e.getValue().asText()));
        final Topology topology;
        try {
            topology = scenario.build(params);
            result.put("describe", topology.describe().toString());
        } catch (final Throwable e) {
            result.set("error", errorNode("build", e));
            return result;
        }
        final ArrayNode steps = result.putArray("steps");
        final TopologyTestDriver driver;
        try {
            driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0));
        } catch (final Throwable e) {
            result.set("error", errorNode("init", e));
            return result;
        }
        try {
            final Map<String, TestInputTopic<byte[], byte[]>> inputs = new HashMap<>();
            final Map<String, TestOutputTopic<byte[], byte[]>> outputs = new java.util.LinkedHashMap<>();
            for (final JsonNode topic : request.path("outputs")) {
                outputs.put(topic.asText(), driver.createOutputTopic(topic.asText(), new ByteArrayDeserializer(), new ByteArrayDeserializer()));
            }
            int index = 0;
            for (final JsonNode step : request.path("steps")) {
                Throwable failure = null;
                try {
                    step(driver, inputs, step);
                } catch (final Throwable e) {
                    failure = e;
                }
                final ArrayNode produced = F.arrayNode();
                for (final Map.Entry<String, TestOutputTopic<byte[], byte[]>> topic : outputs.entrySet()) {
                    for (final TestRecord<byte[], byte[]> r : topic.getValue().readRecordsToList()) {
                        produced.add(recordNode(topic.getKey(), r));
                    }
                }
                steps.add(produced);
                if (failure != null) {
                    result.set("error", errorNode(Integer.toString(index), failure));
                    break;
                }
                index++;
            }
            final ObjectNode stores = result.putObject("stores");
            for (final JsonNode store : request.path("stores")) {
                stores.set(store.get("name").asText(), dumpStore(driver, store));
            }
        } finally {
            try {
                driver.close();
            } catch (final Throwable e) {
                if (!result.has("error")) {
                    result.set("error", errorNode("close", e));
                }
            }
        }
        return result;
    }

    static void step(final TopologyTestDriver driver, final Map<String, TestInputTopic<byte[], byte[]>> inputs,
                     final JsonNode step) {
        if (step.has("advance")) {
            driver.advanceWallClockTime(Duration.ofMillis(step.get("advance").asLong()));
            return;
        }
        final String topic = step.get("pipe").asText();
        final String form = step.path("form").asText("record");
        if (!form.equals("record")) {
            pipeForm(driver, topic, form, step);
            return;
        }
        final TestInputTopic<byte[], byte[]> input = inputs.computeIfAbsent(
            topic, t -> driver.createInputTopic(t, new ByteArraySerializer(), new ByteArraySerializer()));
        final RecordHeaders headers = new RecordHeaders();
        for (final JsonNode h : step.path("h")) {
            headers.add(new RecordHeader(h.get(0).asText(), h.get(1).isNull() ? null : unhex(h.get(1).asText())));
        }
        input.pipeInput(new TestRecord<>(bytes(step.get("k")), bytes(step.get("v")), headers, step.get("ts").asLong()));
    }

    /** The TestInputTopic overloads a Java test calls with String serializers (the value is UTF-8). */
    static void pipeForm(final TopologyTestDriver driver, final String topic, final String form, final JsonNode step) {
        final TestInputTopic<String, String> input = driver.createInputTopic(
            topic, new StringSerializer(), new StringSerializer(), Instant.ofEpochMilli(step.path("start").asLong(0)),
            Duration.ofMillis(step.path("autoAdvance").asLong(0)));
        final List<String> values = new ArrayList<>();
        for (final JsonNode v : step.path("values")) {
            values.add(v.isNull() ? null : v.asText());
        }
        final List<KeyValue<String, String>> keyValues = new ArrayList<>();
        for (final JsonNode kv : step.path("keyValues")) {
            keyValues.add(KeyValue.pair(kv.get(0).isNull() ? null : kv.get(0).asText(), kv.get(1).isNull() ? null : kv.get(1).asText()));
        }
        final String value = step.path("value").isNull() ? null : step.path("value").asText();
        final String key = step.path("key").isNull() ? null : step.path("key").asText();
        switch (form) {
            case "value":
                input.pipeInput(value);
                break;
            case "keyValue":
                input.pipeInput(key, value);
                break;
            case "valueInstant":
                input.pipeInput(value, Instant.ofEpochMilli(step.get("ts").asLong()));
                break;
            case "keyValueInstant":
                input.pipeInput(key, value, Instant.ofEpochMilli(step.get("ts").asLong()));
                break;
            case "keyValueLong":
                input.pipeInput(key, value, step.get("ts").asLong());
                break;
            case "valueList":
                input.pipeValueList(values);
                break;
            case "valueListTimed":
                input.pipeValueList(values, Instant.ofEpochMilli(step.get("ts").asLong()), Duration.ofMillis(step.get("advanceMs").asLong()));
                break;
            case "keyValueList":
                input.pipeKeyValueList(keyValues);
                break;
            case "keyValueListTimed":
                input.pipeKeyValueList(keyValues, Instant.ofEpochMilli(step.get("ts").asLong()), Duration.ofMillis(step.get("advanceMs").asLong()));
                break;
            default:
                throw new IllegalArgumentException("unknown pipe form " + form);
        }
    }

    static JsonNode dumpStore(final TopologyTestDriver driver, final JsonNode spec) {
        final String name = spec.get("name").asText();
        final String kind = spec.get("kind").asText();
        final ArrayNode rows = F.arrayNode();
        try {
            final Object store;
            switch (kind) {
                case "kv":
                case "kv-iter":  // the Python side reads it with hasNext()/next()/close()
                    store = driver.getKeyValueStore(name);
                    break;
                case "tkv":
                    store = driver.getTimestampedKeyValueStore(name);
                    break;
                case "window":
                    store = driver.getWindowStore(name);
                    break;
                case "twindow":
                    store = driver.getTimestampedWindowStore(name);
                    break;
                case "session":
                case "session-ops":
                    store = driver.getSessionStore(name);
                    break;
                case "versioned":
                    store = driver.getVersionedKeyValueStore(name);
                    break;
                case "kv-ops":
                    store = driver.getKeyValueStore(name);
                    break;
                case "window-ops":
                    store = driver.getWindowStore(name);
                    break;
                default:
                    throw new IllegalArgumentException("unknown store kind " + kind);
            }
            if (store == null) {
                return missing();
            }
            if (kind.endsWith("-ops") || kind.equals("versioned")) {
                Queries.dump(kind, store, spec, rows);
            } else if (store instanceof org.apache.kafka.streams.state.SessionStore) {
                for (final JsonNode key : spec.path("probe")) {
                    addAll(rows, ((org.apache.kafka.streams.state.SessionStore<Object, ?>) store).fetch(key.asText()));
                }
            } else if (store instanceof org.apache.kafka.streams.state.WindowStore) {
                addAll(rows, ((org.apache.kafka.streams.state.WindowStore<?, ?>) store).all());
            } else {
                addAll(rows, ((org.apache.kafka.streams.state.KeyValueStore<?, ?>) store).all());
            }
        } catch (final Throwable e) {
            final ObjectNode error = F.objectNode();
            error.set("error", chain(e));
            return error;
        }
        return rows;
    }

    private static JsonNode missing() {
        final ObjectNode node = F.objectNode();
        node.put("missing", true);
        return node;
    }

    static <K, V> void addAll(final ArrayNode rows, final KeyValueIterator<K, V> it) {
        try (it) {
            while (it.hasNext()) {
                final KeyValue<K, V> kv = it.next();
                final ArrayNode row = rows.addArray();
                row.add(canon(kv.key));
                row.add(canon(kv.value));
            }
        }
    }

    /** Store keys and values as JSON, the same on both sides (tests/conformance/harness.py canon). */
    static JsonNode canon(final Object o) {
        if (o == null) {
            return F.nullNode();
        }
        if (o instanceof String) {
            return F.textNode((String) o);
        }
        if (o instanceof Long || o instanceof Integer || o instanceof Short || o instanceof Byte) {
            return F.numberNode(((Number) o).longValue());
        }
        if (o instanceof Boolean) {
            return F.booleanNode((Boolean) o);
        }
        if (o instanceof Double || o instanceof Float) {
            final ObjectNode n = F.objectNode();
            n.put("f", String.format("%016x", Double.doubleToRawLongBits(((Number) o).doubleValue())));
            return n;
        }
        if (o instanceof byte[]) {
            final ObjectNode n = F.objectNode();
            n.put("b", hex((byte[]) o));
            return n;
        }
        if (o instanceof Windowed) {
            final Windowed<?> w = (Windowed<?>) o;
            final ObjectNode n = F.objectNode();
            final ArrayNode a = n.putArray("w");
            a.add(canon(w.key()));
            a.add(w.window().start());
            a.add(w.window().end());
            return n;
        }
        if (o instanceof ValueAndTimestamp) {
            final ValueAndTimestamp<?> vt = (ValueAndTimestamp<?>) o;
            final ObjectNode n = F.objectNode();
            final ArrayNode a = n.putArray("vt");
            a.add(canon(vt.value()));
            a.add(vt.timestamp());
            return n;
        }
        if (o instanceof List) {
            final ArrayNode a = F.arrayNode();
            for (final Object e : (List<?>) o) {
                a.add(canon(e));
            }
            return a;
        }
        if (o instanceof java.util.UUID) {
            final ObjectNode n = F.objectNode();
            n.put("u", o.toString());
            return n;
        }
        final ObjectNode n = F.objectNode();
        n.put("o", o.getClass().getName() + ":" + o);
        return n;
    }

    static ObjectNode recordNode(final String topic, final TestRecord<byte[], byte[]> r) {
        final ObjectNode n = F.objectNode();
        n.put("t", topic);
        n.put("k", r.key() == null ? null : hex(r.key()));
        n.put("v", r.value() == null ? null : hex(r.value()));
        n.put("ts", r.timestamp());
        final ArrayNode headers = n.putArray("h");
        for (final Header h : r.headers()) {
            final ArrayNode pair = headers.addArray();
            pair.add(h.key());
            pair.add(h.value() == null ? null : hex(h.value()));
        }
        return n;
    }

    static ObjectNode errorNode(final String at, final Throwable e) {
        final ObjectNode n = F.objectNode();
        n.put("at", at);
        n.set("chain", chain(e));
        return n;
    }

    static ArrayNode chain(final Throwable e) {
        final ArrayNode chain = F.arrayNode();
        for (Throwable t = e; t != null && chain.size() < 8; t = t.getCause() == t ? null : t.getCause()) {
            final ArrayNode link = chain.addArray();
            link.add(t.getClass().getName());
            link.add(t.getMessage());
        }
        return chain;
    }

    static byte[] bytes(final JsonNode hex) {
        return hex == null || hex.isNull() ? null : unhex(hex.asText());
    }

    static String hex(final byte[] b) {
        final StringBuilder s = new StringBuilder(b.length * 2);
        for (final byte x : b) {
            s.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return s.toString();
    }

    static byte[] unhex(final String s) {
        final byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }

    /** A catalogue entry: builds the topology of a named scenario for the given parameters. */
    @FunctionalInterface
    public interface Scenario {
        Topology build(Map<String, String> params) throws Exception;
    }
}
