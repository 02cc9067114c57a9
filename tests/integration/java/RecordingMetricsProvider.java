// A ZooKeeper MetricsProvider (metricsProvider.className) for tests: it records every metric
// ZooKeeper registers, with the Prometheus type that ZooKeeper's PrometheusMetricsProvider gives
// it (a Counter or CounterSet: counter; a Gauge or GaugeSet: gauge; a Summary or SummarySet:
// summary), and writes them as "name type" lines to DIR/metrics-PID.txt on every registration
// (DIR: metricsProvider.recordDir). So a test learns the names and types a running ZooKeeper
// serves from ZooKeeper itself, not from a list written by hand; Debian's ZooKeeper lacks the
// Prometheus provider. Values are kept only as far as ZooKeeper reads them back (counters).
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import org.apache.zookeeper.metrics.Counter;
import org.apache.zookeeper.metrics.CounterSet;
import org.apache.zookeeper.metrics.Gauge;
import org.apache.zookeeper.metrics.GaugeSet;
import org.apache.zookeeper.metrics.MetricsContext;
import org.apache.zookeeper.metrics.MetricsProvider;
import org.apache.zookeeper.metrics.Summary;
import org.apache.zookeeper.metrics.SummarySet;

public class RecordingMetricsProvider implements MetricsProvider {
    private final Map<String, String> types = new TreeMap<>();
    private Path file;

    private synchronized void record(String name, String type) {
        if (type.equals(types.put(name, type)) || file == null) return;
        StringBuilder out = new StringBuilder();
        types.forEach((n, t) -> out.append(n).append(' ').append(t).append('\n'));
        try {
            Path tmp = Paths.get(file + ".tmp");
            Files.write(tmp, out.toString().getBytes(StandardCharsets.UTF_8));
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            System.err.println("RecordingMetricsProvider: " + e);
        }
    }

    private final MetricsContext root = new MetricsContext() {
        public MetricsContext getContext(String name) { return this; }
        public Counter getCounter(String name) {
            record(name, "counter");
            AtomicLong v = new AtomicLong();
            return new Counter() {
                public void add(long delta) { v.addAndGet(delta); }
                public long get() { return v.get(); }
            };
        }
        public CounterSet getCounterSet(String name) {
            record(name, "counter");
            return (key, delta) -> { };
        }
        public void registerGauge(String name, Gauge gauge) { record(name, "gauge"); }
        public void unregisterGauge(String name) { }
        public void registerGaugeSet(String name, GaugeSet set) { record(name, "gauge"); }
        public void unregisterGaugeSet(String name) { }
        public Summary getSummary(String name, DetailLevel level) {
            record(name, "summary");
            return v -> { };
        }
        public SummarySet getSummarySet(String name, DetailLevel level) {
            record(name, "summary");
            return (key, v) -> { };
        }
    };

    public void configure(Properties p) {
        String dir = p.getProperty("recordDir");
        if (dir != null) file = Paths.get(dir, "metrics-" + ProcessHandle.current().pid() + ".txt");
    }
    public void start() { }
    public MetricsContext getRootContext() { return root; }
    public void stop() { }
    public void dump(BiConsumer<String, Object> sink) { }
    public void resetAllValues() { }
}
