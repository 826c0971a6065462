// Prints the configuration keys Spark knows, one per line: "entry <key>" for every registered
// ConfigEntry (and its alternative names), "literal <key>" for every other string constant of the
// form spark.x.y (or spark.x.y. -- a prefix) in the jars' class files, which covers keys Spark reads
// as plain strings (spark.master, spark.app.name, spark.local.dir...). Dev-time only:
// jvm/configkeys/generate.py runs it with pyspark's jars on the class path and writes
// src/kspark/_config_keys_spark.py; no SparkContext or session is started.
//
// Spark registers a key when the Scala object that defines it is initialised, so every Scala
// object (class name ending in '$') of the given jars whose byte code uses ConfigBuilder is
// initialised first; an object that fails to initialise is reported on stderr and skipped.
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Enumeration;
import java.util.List;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

public class SparkConfigKeys {
    public static void main(String[] jars) throws Exception {
        List<byte[]> classes = new ArrayList<>();
        List<String> objects = new ArrayList<>();
        for (String jar : jars) {
            try (JarFile jf = new JarFile(jar)) {
                for (Enumeration<JarEntry> en = jf.entries(); en.hasMoreElements(); ) {
                    JarEntry e = en.nextElement();
                    if (!e.getName().endsWith(".class")) continue;
                    byte[] bytes;
                    try (InputStream in = jf.getInputStream(e)) { bytes = in.readAllBytes(); }
                    classes.add(bytes);
                    if (e.getName().endsWith("$.class")
                        && new String(bytes, StandardCharsets.ISO_8859_1).contains("org/apache/spark/internal/config/ConfigBuilder"))
                        objects.add(e.getName().replace('/', '.').substring(0, e.getName().length() - ".class".length()));
                }
            }
        }
        for (String name : objects) {
            try {
                Class.forName(name, true, SparkConfigKeys.class.getClassLoader());
            } catch (Throwable t) {
                System.err.println("skipped " + name + ": " + t);
            }
        }
        Class<?> entryObject = Class.forName("org.apache.spark.internal.config.ConfigEntry$");
        Object module = entryObject.getField("MODULE$").get(null);
        TreeSet<String> keys = new TreeSet<>();
        for (Object entry : (Collection<?>) entryObject.getMethod("listAllEntries").invoke(module)) {
            keys.add((String) entry.getClass().getMethod("key").invoke(entry));
            Object alternatives = entry.getClass().getMethod("alternatives").invoke(entry);  // scala List[String]
            for (scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) alternatives).iterator(); it.hasNext(); )
                keys.add((String) it.next());
        }
        // CONSTANT_Utf8 entries: tag 1, u2 length, bytes
        TreeSet<String> literals = new TreeSet<>();
        for (byte[] b : classes) {
            for (int i = 3; i + 6 <= b.length; i++) {
                if (b[i] != 's' || b[i - 3] != 1 || !new String(b, i, 6, StandardCharsets.ISO_8859_1).equals("spark.")) continue;
                int len = ((b[i - 2] & 0xff) << 8) | (b[i - 1] & 0xff);
                if (i + len > b.length) continue;
                String s = new String(b, i, len, StandardCharsets.UTF_8);
                if (s.matches("spark(\\.[A-Za-z0-9_-]+)+\\.?") && !keys.contains(s)) literals.add(s);
            }
        }
        for (String k : keys) System.out.println("entry " + k);
        for (String k : literals) System.out.println("literal " + k);
    }
}
