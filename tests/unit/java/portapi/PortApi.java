package portapi;

import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Issue 36 items 9 and 10 on Kafka Streams itself: when bootstrap.servers is validated, and the
 * TopologyTestDriver's wall clock and input topics' start time without an explicit one; a global
 * store's name passed to process(). Prints one JSON object: {case: result}.
 */
public final class PortApi {
    private static String quote(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    private static String error(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null) root = root.getCause();
        return "{\"class\":" + quote(e.getClass().getSimpleName()) + ",\"message\":" + quote(e.getMessage())
            + ",\"rootClass\":" + quote(root.getClass().getSimpleName()) + ",\"rootMessage\":" + quote(root.getMessage()) + "}";
    }

    private static Properties props(String servers) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "portapi");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        p.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("portapi").toString());
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        return p;
    }

    private static Topology upper() {
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("in").mapValues(v -> v.toUpperCase()).to("out");
        return b.build();
    }

    /** A processor that forwards (key, "now=<currentSystemTimeMs>") and, on a 1 s wall-clock
     * punctuation, ("tick", "<punctuation timestamp>"). */
    private static Topology clocks() {
        Topology t = new Topology();
        t.addSource("src", "in");
        t.addProcessor("clock", () -> new Processor<String, String, String, String>() {
            private ProcessorContext<String, String> context;

            @Override
            public void init(ProcessorContext<String, String> context) {
                this.context = context;
                context.schedule(Duration.ofSeconds(1), PunctuationType.WALL_CLOCK_TIME,
                    ts -> context.forward(new Record<>("tick", Long.toString(ts), ts)));
            }

            @Override
            public void process(Record<String, String> record) {
                context.forward(record.withValue(Long.toString(context.currentSystemTimeMs())));
            }
        }, "src");
        t.addSink("sink", "out", "clock");
        return t;
    }

    public static void main(String[] args) throws Exception {
        List<String> out = new ArrayList<>();
        for (String servers : new String[] {"dummy config", "dummy:1234", "", "localhost:99999", "a:1,,b:2"}) {
            String name = quote(servers);
            try {
                new StreamsConfig(props(servers));
                out.add("\"streamsConfig " + name.substring(1) + ":\"ok\"");
            } catch (Exception e) {
                out.add("\"streamsConfig " + name.substring(1) + ":" + error(e));
            }
            try (TopologyTestDriver driver = new TopologyTestDriver(upper(), props(servers))) {
                TestInputTopic<String, String> in = driver.createInputTopic("in", Serdes.String().serializer(), Serdes.String().serializer());
                TestOutputTopic<String, String> o = driver.createOutputTopic("out", Serdes.String().deserializer(), Serdes.String().deserializer());
                in.pipeInput("k", "v", 5L);
                out.add("\"driver " + name.substring(1) + ":" + quote(o.readKeyValuesToList().toString()));
            } catch (Exception e) {
                out.add("\"driver " + name.substring(1) + ":" + error(e));
            }
            if (!servers.equals("dummy:1234")) {  // a valid address: the client would try to connect
                try (KafkaStreams streams = new KafkaStreams(upper(), props(servers))) {
                    out.add("\"kafkaStreams " + name.substring(1) + ":\"ok\"");
                } catch (Exception e) {
                    out.add("\"kafkaStreams " + name.substring(1) + ":" + error(e));
                }
            }
        }
        // item 10: the wall clock and an input topic's start time are now, not 0
        long before = System.currentTimeMillis();
        try (TopologyTestDriver driver = new TopologyTestDriver(clocks(), props("dummy:1234"))) {
            TestInputTopic<String, String> in = driver.createInputTopic("in", Serdes.String().serializer(), Serdes.String().serializer());
            TestOutputTopic<String, String> o = driver.createOutputTopic("out", Serdes.String().deserializer(), Serdes.String().deserializer());
            long created = System.currentTimeMillis();
            in.pipeInput("k", "v");
            driver.advanceWallClockTime(Duration.ofSeconds(1));
            long after = System.currentTimeMillis();
            List<String> records = new ArrayList<>();
            for (TestRecord<String, String> r : o.readRecordsToList()) {
                records.add("[" + quote(r.key()) + "," + r.value() + "," + r.timestamp() + "]");
            }
            out.add("\"clock\":{\"before\":" + before + ",\"created\":" + created + ",\"after\":" + after
                + ",\"records\":" + records + "}");
        }
        // a global store's name passed to process(): refused when the topology is built
        try {
            StreamsBuilder b = new StreamsBuilder();
            b.addGlobalStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("seen"), Serdes.String(),
                    Serdes.Long()).withLoggingDisabled(), "global", Consumed.with(Serdes.String(), Serdes.String()),
                () -> new Processor<String, String, Void, Void>() {
                    public void process(Record<String, String> record) { }
                });
            b.<String, String>stream("orders").process(
                () -> new Processor<String, String, String, String>() {
                    public void process(Record<String, String> record) { }
                }, "seen");
            b.build();
            out.add("\"globalStorePassed\":\"ok\"");
        } catch (Exception e) {
            out.add("\"globalStorePassed\":" + error(e));
        }
        System.out.println("{" + String.join(",", out) + "}");
    }
}
