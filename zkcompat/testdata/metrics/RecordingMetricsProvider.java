import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import org.apache.zookeeper.metrics.Counter;
import org.apache.zookeeper.metrics.CounterSet;
import org.apache.zookeeper.metrics.Gauge;
import org.apache.zookeeper.metrics.GaugeSet;
import org.apache.zookeeper.metrics.MetricsContext;
import org.apache.zookeeper.metrics.MetricsContext.DetailLevel;
import org.apache.zookeeper.metrics.MetricsProvider;
import org.apache.zookeeper.metrics.MetricsProviderLifeCycleException;
import org.apache.zookeeper.metrics.Summary;
import org.apache.zookeeper.metrics.SummarySet;

/**
 * A MetricsProvider for the tests that compare Collie's metrics with
 * ZooKeeper's. It records every metric ZooKeeper registers, with its kind,
 * and serves them at /metrics on httpHost:httpPort in Prometheus's text
 * format, with the names, types and labels that ZooKeeper 3.8's
 * PrometheusMetricsProvider gives each kind:
 *
 * <pre>
 * Counter            counter
 * CounterSet         counter, label key
 * Summary BASIC      summary, quantile 0.5, _count and _sum
 * Summary ADVANCED   summary, quantiles 0.5 0.9 0.99, _count and _sum
 * SummarySet         the same, label key before quantile
 * Gauge              gauge
 * GaugeSet           gauge, label key
 * </pre>
 *
 * With httpPort 0 it takes a free port and writes its number to the file
 * portFile names, relative to the working directory.
 *
 * Every family is declared (HELP, its name; TYPE) even without samples, and
 * an unregistered gauge is no longer served, as there. Debian's ZooKeeper
 * lacks that provider and the Prometheus client it needs; this stands in
 * for it with the JDK's HTTP server alone.
 */
public class RecordingMetricsProvider implements MetricsProvider {
    private static final double[] BASIC = {0.5};
    private static final double[] ADVANCED = {0.5, 0.9, 0.99};
    /** Observations a summary keeps for its quantiles. */
    private static final int KEPT = 1000;

    private final Map<String, Family> families = new ConcurrentHashMap<>();
    private final Context root = new Context();
    private String host = "0.0.0.0";
    private int port = 7000;
    private String portFile = "metrics.port";
    private HttpServer server;

    @Override
    public void configure(Properties p) {
        host = p.getProperty("httpHost", host);
        port = Integer.parseInt(p.getProperty("httpPort", String.valueOf(port)));
        portFile = p.getProperty("portFile", portFile);
    }

    @Override
    public void start() throws MetricsProviderLifeCycleException {
        try {
            server = HttpServer.create(new InetSocketAddress(host, port), 0);
        } catch (IOException e) {
            throw new MetricsProviderLifeCycleException(e);
        }
        server.createContext("/metrics", exchange -> {
            byte[] body = render().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.start();
        if (port == 0) {
            try {
                java.nio.file.Path tmp = java.nio.file.Paths.get(portFile + ".tmp");
                java.nio.file.Files.write(tmp, String.valueOf(server.getAddress().getPort()).getBytes(StandardCharsets.UTF_8));
                java.nio.file.Files.move(tmp, java.nio.file.Paths.get(portFile), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                throw new MetricsProviderLifeCycleException(e);
            }
        }
    }

    @Override
    public MetricsContext getRootContext() {
        return root;
    }

    @Override
    public void stop() {
        if (server != null) {
            server.stop(0);
        }
    }

    @Override
    public void dump(BiConsumer<String, Object> sink) {
    }

    @Override
    public void resetAllValues() {
    }

    private String render() {
        StringBuilder b = new StringBuilder();
        for (Family f : new TreeMap<>(families).values()) {
            b.append("# HELP ").append(f.name).append(' ').append(f.name).append('\n');
            b.append("# TYPE ").append(f.name).append(' ').append(f.type()).append('\n');
            f.write(b);
        }
        return b.toString();
    }

    private static String key(String k) {
        return "key=\"" + k.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + "\"";
    }

    private abstract static class Family {
        final String name;

        Family(String name) {
            this.name = name;
        }

        abstract String type();

        abstract void write(StringBuilder b);
    }

    private static final class CounterFamily extends Family implements Counter, CounterSet {
        final Map<String, AtomicLong> byKey = new ConcurrentHashMap<>();
        final boolean labelled;

        CounterFamily(String name, boolean labelled) {
            super(name);
            this.labelled = labelled;
            if (!labelled) {
                byKey.put("", new AtomicLong());
            }
        }

        String type() {
            return "counter";
        }

        public void add(long delta) {
            byKey.get("").addAndGet(delta);
        }

        public long get() {
            return byKey.get("").get();
        }

        public void add(String k, long delta) {
            byKey.computeIfAbsent(k, x -> new AtomicLong()).addAndGet(delta);
        }

        void write(StringBuilder b) {
            for (Map.Entry<String, AtomicLong> e : new TreeMap<>(byKey).entrySet()) {
                b.append(name);
                if (labelled) {
                    b.append('{').append(key(e.getKey())).append('}');
                }
                b.append(' ').append((double) e.getValue().get()).append('\n');
            }
        }
    }

    private static final class Observations {
        final List<Long> kept = new ArrayList<>();
        long count;
        long sum;

        synchronized void add(long v) {
            count++;
            sum += v;
            if (kept.size() == KEPT) {
                kept.remove(0);
            }
            kept.add(v);
        }

        synchronized void write(StringBuilder b, String name, String labels, double[] quantiles) {
            List<Long> sorted = new ArrayList<>(kept);
            Collections.sort(sorted);
            for (double q : quantiles) {
                String value = sorted.isEmpty() ? "NaN" : String.valueOf((double) sorted.get((int) Math.min(sorted.size() - 1, Math.floor(q * sorted.size()))));
                b.append(name).append('{').append(labels).append(labels.isEmpty() ? "" : ",").append("quantile=\"").append(q).append("\"} ").append(value).append('\n');
            }
            String braces = labels.isEmpty() ? "" : "{" + labels + "}";
            b.append(name).append("_count").append(braces).append(' ').append((double) count).append('\n');
            b.append(name).append("_sum").append(braces).append(' ').append((double) sum).append('\n');
        }
    }

    private static final class SummaryFamily extends Family implements Summary, SummarySet {
        final Map<String, Observations> byKey = new ConcurrentHashMap<>();
        final boolean labelled;
        final double[] quantiles;

        SummaryFamily(String name, boolean labelled, DetailLevel level) {
            super(name);
            this.labelled = labelled;
            this.quantiles = level == DetailLevel.ADVANCED ? ADVANCED : BASIC;
            if (!labelled) {
                byKey.put("", new Observations());
            }
        }

        String type() {
            return "summary";
        }

        public void add(long v) {
            byKey.get("").add(v);
        }

        public void add(String k, long v) {
            byKey.computeIfAbsent(k, x -> new Observations()).add(v);
        }

        void write(StringBuilder b) {
            for (Map.Entry<String, Observations> e : new TreeMap<>(byKey).entrySet()) {
                e.getValue().write(b, name, labelled ? key(e.getKey()) : "", quantiles);
            }
        }
    }

    private static final class GaugeFamily extends Family {
        final Gauge gauge;
        final GaugeSet set;

        GaugeFamily(String name, Gauge gauge, GaugeSet set) {
            super(name);
            this.gauge = gauge;
            this.set = set;
        }

        String type() {
            return "gauge";
        }

        void write(StringBuilder b) {
            if (gauge != null) {
                Number v = gauge.get();
                b.append(name).append(' ').append(v == null ? 0.0 : v.doubleValue()).append('\n');
                return;
            }
            for (Map.Entry<String, Number> e : new TreeMap<>(set.values()).entrySet()) {
                Number v = e.getValue();
                b.append(name).append('{').append(key(e.getKey())).append("} ").append(v == null ? 0.0 : v.doubleValue()).append('\n');
            }
        }
    }

    private final class Context implements MetricsContext {
        public MetricsContext getContext(String name) {
            return this;
        }

        public Counter getCounter(String name) {
            return (CounterFamily) families.computeIfAbsent(name, n -> new CounterFamily(n, false));
        }

        public CounterSet getCounterSet(String name) {
            return (CounterFamily) families.computeIfAbsent(name, n -> new CounterFamily(n, true));
        }

        public void registerGauge(String name, Gauge gauge) {
            families.put(name, new GaugeFamily(name, gauge, null));
        }

        public void unregisterGauge(String name) {
            families.remove(name);
        }

        public void registerGaugeSet(String name, GaugeSet set) {
            families.put(name, new GaugeFamily(name, null, set));
        }

        public void unregisterGaugeSet(String name) {
            families.remove(name);
        }

        public Summary getSummary(String name, DetailLevel level) {
            return (SummaryFamily) families.computeIfAbsent(name, n -> new SummaryFamily(n, false, level));
        }

        public SummarySet getSummarySet(String name, DetailLevel level) {
            return (SummaryFamily) families.computeIfAbsent(name, n -> new SummaryFamily(n, true, level));
        }
    }
}
