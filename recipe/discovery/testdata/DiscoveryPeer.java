import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.UriSpec;

/**
 * A service registered and discovered with Apache Curator's
 * ServiceDiscovery (curator-x-discovery), its default JSON serializer and
 * a Map payload, driven line by line from standard input so that a test can
 * check it against another implementation on the same base path. The
 * arguments are the connect string and the base path. Every command is
 * answered with one line on standard output, "error ..." when it fails:
 *
 * <pre>
 * register NAME ID ADDRESS PORT KEY=VALUE   register a DYNAMIC instance
 *                          whose payload maps KEY to VALUE, with the
 *                          UriSpec "{scheme}://{address}:{port}/api"      ok
 * query NAME               queryForInstances, sorted by id, each as
 *                          id,address,port,ssl,type,enabled,payload,uri
 *                          joined by ";"                                 ...
 * names                    queryForNames, sorted, joined by ","          ...
 * unregister NAME ID       unregister the instance registered here      ok
 * quit                     close everything and exit
 * </pre>
 */
public class DiscoveryPeer {
    public static void main(String[] args) throws Exception {
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
        @SuppressWarnings({"unchecked", "rawtypes"})
        ServiceDiscovery<Map> discovery = ServiceDiscoveryBuilder.builder(Map.class)
                .client(client)
                .basePath(args[1])
                .build();
        discovery.start();
        Map<String, ServiceInstance<Map>> mine = new LinkedHashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.trim().split(" ");
            try {
                switch (f[0]) {
                    case "register": {
                        Map<String, String> payload = new LinkedHashMap<>();
                        String[] kv = f[5].split("=", 2);
                        payload.put(kv[0], kv[1]);
                        @SuppressWarnings("unchecked")
                        ServiceInstance<Map> instance = ServiceInstance.<Map>builder()
                                .name(f[1])
                                .id(f[2])
                                .address(f[3])
                                .port(Integer.parseInt(f[4]))
                                .payload(payload)
                                .uriSpec(new UriSpec("{scheme}://{address}:{port}/api"))
                                .build();
                        discovery.registerService(instance);
                        mine.put(f[1] + "/" + f[2], instance);
                        System.out.println("ok");
                        break;
                    }
                    case "query": {
                        List<String> out = new ArrayList<>();
                        Collection<ServiceInstance<Map>> all = discovery.queryForInstances(f[1]);
                        for (ServiceInstance<Map> i : all) {
                            out.add(i.getId() + "," + i.getAddress() + "," + i.getPort() + "," + i.getSslPort()
                                    + "," + i.getServiceType() + "," + i.isEnabled() + "," + i.getPayload()
                                    + "," + i.buildUriSpec());
                        }
                        out.sort(null);
                        System.out.println(String.join(";", out));
                        break;
                    }
                    case "names": {
                        List<String> names = new ArrayList<>(discovery.queryForNames());
                        names.sort(null);
                        System.out.println(String.join(",", names));
                        break;
                    }
                    case "unregister":
                        discovery.unregisterService(mine.remove(f[1] + "/" + f[2]));
                        System.out.println("ok");
                        break;
                    case "quit":
                        discovery.close();
                        client.close();
                        return;
                    default:
                        System.out.println("error unknown command " + f[0]);
                }
            } catch (Exception e) {
                System.out.println("error " + e);
            }
            System.out.flush();
        }
    }
}
