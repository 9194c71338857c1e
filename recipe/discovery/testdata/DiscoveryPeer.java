import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.UriSpec;

/**
 * Service instances registered and found with Apache Curator's
 * ServiceDiscovery (curator-x-discovery) and its default serializer, with a
 * payload of the class Details, driven line by line from standard input so
 * that a test can check them against another implementation on the same
 * base path. The arguments are the connect string and the base path. Every
 * command is answered with one line on standard output, "error ..." when it
 * fails:
 *
 * <pre>
 * register NAME ID ADDRESS PORT SSLPORT|- TYPE ZONE WEIGHT SPEC
 *                            register an instance whose payload is
 *                            Details(ZONE, WEIGHT), its URI spec SPEC     ok
 * update NAME ID ZONE WEIGHT give it a new payload (updateService)       ok
 * unregister NAME ID         unregister it (unregisterService)          ok
 * names                      queryForNames, sorted, joined by ","
 * query NAME                 queryForInstances, sorted by id, each
 *                            described as below, joined by " ; "
 * instance NAME ID           queryForInstance, described as below     ... | none
 * provider NAME N            N instances from a round-robin
 *                            ServiceProvider, their ids joined by ","
 * quit                       close everything and exit
 * </pre>
 *
 * An instance is described as "ID ADDRESS PORT SSLPORT TYPE ENABLED
 * PAYLOAD TIME URI", with "null" for what is unset, the payload as
 * "CLASS:ZONE:WEIGHT" and the URI as buildUriSpec() makes it.
 */
public class DiscoveryPeer {
    /** The payload of the instances: a plain Java class, as services use. */
    public static class Details {
        public String zone;
        public int weight;

        public Details() {
        }

        Details(String zone, int weight) {
            this.zone = zone;
            this.weight = weight;
        }
    }

    public static void main(String[] args) throws Exception {
        // Jackson looks payload classes up through the context class
        // loader; in source-file mode, Details is only in this class's.
        Thread.currentThread().setContextClassLoader(DiscoveryPeer.class.getClassLoader());
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .sessionTimeoutMs(10_000)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        client.start();
        if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
            System.out.println("error not connected");
            System.exit(1);
        }
        ServiceDiscovery<Details> discovery = ServiceDiscoveryBuilder.builder(Details.class)
                .client(client)
                .basePath(args[1])
                .build();
        discovery.start();
        Map<String, ServiceInstance<Details>> mine = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.trim().split(" ");
            if (f[0].equals("quit")) {
                break;
            }
            String answer;
            try {
                answer = run(discovery, mine, f);
            } catch (Exception e) {
                answer = "error " + e;
            }
            System.out.println(answer);
            System.out.flush();
        }
        discovery.close();
        client.close();
    }

    static String run(ServiceDiscovery<Details> discovery, Map<String, ServiceInstance<Details>> mine, String[] f)
            throws Exception {
        switch (f[0]) {
            case "register": {
                ServiceInstance<Details> instance = ServiceInstance.<Details>builder()
                        .name(f[1])
                        .id(f[2])
                        .address(f[3])
                        .port(Integer.parseInt(f[4]))
                        .sslPort(f[5].equals("-") ? null : Integer.valueOf(f[5]))
                        .serviceType(ServiceType.valueOf(f[6]))
                        .payload(new Details(f[7], Integer.parseInt(f[8])))
                        .uriSpec(new UriSpec(f[9]))
                        .build();
                discovery.registerService(instance);
                mine.put(f[1] + "/" + f[2], instance);
                return "ok";
            }
            case "update": {
                ServiceInstance<Details> old = mine.get(f[1] + "/" + f[2]);
                ServiceInstance<Details> instance = new ServiceInstance<>(old.getName(), old.getId(), old.getAddress(),
                        old.getPort(), old.getSslPort(), new Details(f[3], Integer.parseInt(f[4])),
                        old.getRegistrationTimeUTC(), old.getServiceType(), old.getUriSpec());
                discovery.updateService(instance);
                mine.put(f[1] + "/" + f[2], instance);
                return "ok";
            }
            case "unregister":
                discovery.unregisterService(mine.remove(f[1] + "/" + f[2]));
                return "ok";
            case "names": {
                List<String> names = new ArrayList<>(discovery.queryForNames());
                names.sort(null);
                return String.join(",", names);
            }
            case "query": {
                List<ServiceInstance<Details>> all = new ArrayList<>(discovery.queryForInstances(f[1]));
                all.sort(Comparator.comparing(ServiceInstance::getId));
                List<String> out = new ArrayList<>();
                for (ServiceInstance<Details> i : all) {
                    out.add(describe(i));
                }
                return String.join(" ; ", out);
            }
            case "instance": {
                ServiceInstance<Details> i = discovery.queryForInstance(f[1], f[2]);
                return i == null ? "none" : describe(i);
            }
            case "provider": {
                ServiceProvider<Details> provider = discovery.serviceProviderBuilder().serviceName(f[1]).build();
                provider.start();
                try {
                    List<String> ids = new ArrayList<>();
                    for (int n = Integer.parseInt(f[2]); n > 0; n--) {
                        ServiceInstance<Details> i = provider.getInstance();
                        ids.add(i == null ? "null" : i.getId());
                    }
                    return String.join(",", ids);
                } finally {
                    provider.close();
                }
            }
            default:
                return "error unknown command " + f[0];
        }
    }

    static String describe(ServiceInstance<Details> i) {
        Details d = i.getPayload();
        String payload = d == null ? "null" : d.getClass().getName() + ":" + d.zone + ":" + d.weight;
        return i.getId() + " " + i.getAddress() + " " + i.getPort() + " " + i.getSslPort() + " "
                + i.getServiceType() + " " + i.isEnabled() + " " + payload + " " + i.getRegistrationTimeUTC() + " "
                + i.buildUriSpec();
    }
}
