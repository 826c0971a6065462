// Prints, as JSON, the configuration keys of Kafka's StreamsConfig, ConsumerConfig, ProducerConfig
// and AdminClientConfig (name, type, default, validator, internal), StreamsConfig's public String
// constants (deprecated ones apart) and TopicConfig's *_CONFIG names. Dev-time only: jvm/configkeys/generate.py compiles and runs it
// against the jars of `make jvm` and writes src/kspark/_config_keys_kafka.py.
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.streams.StreamsConfig;

public class KafkaConfigKeys {
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder("{\n");
        out.append("\"version\": ").append(str(org.apache.kafka.common.utils.AppInfoParser.getVersion())).append(",\n");
        out.append("\"streams\": ").append(keys(StreamsConfig.configDef())).append(",\n");
        out.append("\"consumer\": ").append(keys(ConsumerConfig.configDef())).append(",\n");
        out.append("\"producer\": ").append(keys(ProducerConfig.configDef())).append(",\n");
        out.append("\"admin\": ").append(keys(AdminClientConfig.configDef())).append(",\n");
        out.append("\"streamsConstants\": ").append(publicStrings(StreamsConfig.class, false)).append(",\n");
        out.append("\"streamsDeprecatedConstants\": ").append(publicStrings(StreamsConfig.class, true)).append(",\n");
        out.append("\"topic\": ").append(json(new ArrayList<>(configConstants(TopicConfig.class).values()))).append("\n}\n");
        System.out.print(out);
    }

    static String keys(ConfigDef def) throws Exception {
        Map<String, ConfigDef.ConfigKey> sorted = new TreeMap<>(def.configKeys());
        StringBuilder sb = new StringBuilder("{");
        String sep = "\n";
        for (ConfigDef.ConfigKey k : sorted.values()) {
            sb.append(sep).append("  ").append(str(k.name)).append(": [").append(str(k.type.name())).append(", ")
              .append(k.hasDefault() ? value(k.defaultValue) : "\"<required>\"").append(", ")
              .append(validator(k.validator)).append(", ").append(k.internalConfig).append("]");
            sep = ",\n";
        }
        return sb.append("\n}").toString();
    }

    // [kind, args...]: ["range", min, max], ["in", [...]], ["in-ci", [...]], ["list-in", [...], emptyAllowed],
    // ["non-empty"], ["other", toString] or null
    static String validator(ConfigDef.Validator v) throws Exception {
        if (v == null) return "null";
        if (v instanceof ConfigDef.Range)
            return "[\"range\", " + value(get(v, "min")) + ", " + value(get(v, "max")) + "]";
        if (v instanceof ConfigDef.ValidString)
            return "[\"in\", " + json(get(v, "validStrings")) + "]";
        if (v instanceof ConfigDef.CaseInsensitiveValidString)
            return "[\"in-ci\", " + json(get(v, "validStrings")) + "]";  // Kafka's (HashSet) order, as in its messages
        if (v instanceof ConfigDef.ValidList) {
            Object vs = get(v, "validString");
            return "[\"list-in\", " + json(get(vs, "validStrings")) + ", " + get(v, "isEmptyAllowed") + "]";
        }
        if (v instanceof ConfigDef.NonEmptyString) return "[\"non-empty\"]";
        return "[\"other\", " + str(String.valueOf(v)) + "]";
    }

    static Object get(Object o, String field) throws Exception {
        Field f = o.getClass().getDeclaredField(field);
        f.setAccessible(true);
        return f.get(o);
    }

    static Map<String, String> configConstants(Class<?> c) throws Exception {
        Map<String, String> m = new TreeMap<>();
        for (Field f : c.getFields())
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == String.class && f.getName().endsWith("_CONFIG"))
                m.put(f.getName(), (String) f.get(null));
        return m;
    }

    static String publicStrings(Class<?> c, boolean deprecated) throws Exception {
        Map<String, String> m = new TreeMap<>();
        for (Field f : c.getFields())
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == String.class && !f.getName().endsWith("_DOC")
                && (f.getAnnotation(Deprecated.class) != null) == deprecated)
                m.put(f.getName(), (String) f.get(null));
        StringBuilder sb = new StringBuilder("{");
        String sep = "\n";
        for (Map.Entry<String, String> e : m.entrySet()) {
            sb.append(sep).append("  ").append(str(e.getKey())).append(": ").append(str(e.getValue()));
            sep = ",\n";
        }
        return sb.append("\n}").toString();
    }

    static String value(Object v) {
        if (v == null) return "null";
        if (v instanceof Boolean || v instanceof Integer || v instanceof Long || v instanceof Short) return v.toString();
        if (v instanceof Double) {
            double d = (Double) v;
            return Double.isInfinite(d) || Double.isNaN(d) ? str(v.toString()) : v.toString();
        }
        if (v instanceof Class) return str(((Class<?>) v).getName());
        if (v instanceof Password) return str(((Password) v).value());
        if (v instanceof List) return json(v);
        return str(v.toString());
    }

    static String json(Object list) {
        StringBuilder sb = new StringBuilder("[");
        String sep = "";
        for (Object o : (Collection<?>) list) {
            sb.append(sep).append(value(o));
            sep = ", ";
        }
        return sb.append("]").toString();
    }

    static String str(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') sb.append('\\').append(ch);
            else if (ch < 0x20) sb.append(String.format("\\u%04x", (int) ch));
            else sb.append(ch);
        }
        return sb.append('"').toString();
    }
}
