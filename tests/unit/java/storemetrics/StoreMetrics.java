package storemetrics;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * Kafka Streams' own store-level metrics (group stream-state-metrics) as its TopologyTestDriver
 * reports them, for kspark's to be checked against (tests/unit/test_store_metrics.py).
 *
 * <p>Prints one JSON object: per scenario and recording level, every stream-state-metrics metric
 * (name, tags, value) after a fixed input; the mock wall clock stays at NOW, so a rate is the
 * count of calls over 30 s (2 samples of 30 s) and a latency is 0 ns.
 */
public final class StoreMetrics {
    static final long NOW = 1_000_000L;

    /**
     * Reads store "st" for every record, writes it for every value but "x"; puts every record in
     * "mem". Value "x" also calls the other metered operations of a key-value store once each.
     */
    static final class StoreUser implements Processor<String, String, String, String> {
        private KeyValueStore<String, String> st;
        private KeyValueStore<String, String> mem;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            st = context.getStateStore("st");
            mem = context.getStateStore("mem");
        }

        @Override
        public void process(final Record<String, String> record) {
            st.get(record.key());
            if (!"x".equals(record.value())) {
                st.put(record.key(), record.value());
            }
            mem.put(record.key(), record.value());
            if ("x".equals(record.value())) {
                mem.delete("a");
                mem.putIfAbsent("z", "x");
                st.putAll(List.of(KeyValue.pair("p", "1"), KeyValue.pair("q", "2")));
                try (KeyValueIterator<String, String> it = st.range("a", "c")) {
                    it.forEachRemaining(kv -> { });
                }
                try (KeyValueIterator<String, String> it = st.all()) {
                    it.forEachRemaining(kv -> { });
                }
                try (KeyValueIterator<String, String> it = st.prefixScan("p", new StringSerializer())) {
                    it.forEachRemaining(kv -> { });
                }
            }
        }
    }

    public static void main(final String[] args) throws Exception {
        final ObjectNode out = JsonNodeFactory.instance.objectNode();
        for (final String level : new String[] {"DEBUG", "INFO"}) {
            final ObjectNode byScenario = out.putObject(level);
            run(byScenario, "processor", processorTopology(), level, true);
            run(byScenario, "count", countTopology(), level, true);
            run(byScenario, "count-nocache", countTopology(), level, false);
        }
        System.out.println(new ObjectMapper().writeValueAsString(out));
    }

    static Topology processorTopology() {
        final StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("st"), Serdes.String(), Serdes.String()));
        b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("mem"), Serdes.String(), Serdes.String()));
        b.stream("in", Consumed.with(Serdes.String(), Serdes.String())).process(StoreUser::new, "st", "mem");
        return b.build();
    }

    static Topology countTopology() {
        final StreamsBuilder b = new StreamsBuilder();
        final var grouped = b.stream("in", Consumed.with(Serdes.String(), Serdes.String())).groupByKey();
        grouped.count(Materialized.as("counts"));
        grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(100))).count(Materialized.as("wcounts"));
        grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(10), Duration.ofMillis(100))).count(Materialized.as("scounts"));
        return b.build();
    }

    static void run(final ObjectNode out, final String scenario, final Topology topology, final String level,
                    final boolean caching) {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "sm");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:9092");
        props.put(StreamsConfig.METRICS_RECORDING_LEVEL_CONFIG, level);
        if (!caching) {
            props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        }
        final ArrayNode metrics = out.putArray(scenario);
        try (TopologyTestDriver d = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(NOW))) {
            final TestInputTopic<String, String> in =
                d.createInputTopic("in", new StringSerializer(), new StringSerializer());
            in.pipeInput("a", "1", 5);
            in.pipeInput("b", "x", 20);
            in.pipeInput("a", "2", 30);
            in.pipeInput("c", "3", 40);
            in.pipeInput("a", "4", 35);  // merges with a's session [30, 30]: a remove
            final Map<String, ObjectNode> sorted = new TreeMap<>();
            for (final Map.Entry<MetricName, ? extends Metric> e : d.metrics().entrySet()) {
                final MetricName n = e.getKey();
                if (!n.group().equals("stream-state-metrics")) {
                    continue;
                }
                final ObjectNode m = JsonNodeFactory.instance.objectNode();
                m.put("name", n.name());
                final ArrayNode tags = m.putArray("tags");
                for (final Map.Entry<String, String> t : n.tags().entrySet()) {
                    tags.addArray().add(t.getKey()).add(t.getValue());
                }
                final Object v = e.getValue().metricValue();
                if (v instanceof Number) {
                    m.put("value", ((Number) v).doubleValue());
                } else {
                    m.put("value", String.valueOf(v));
                }
                sorted.put(n.name() + n.tags(), m);
            }
            sorted.values().forEach(metrics::add);
        }
    }
}
