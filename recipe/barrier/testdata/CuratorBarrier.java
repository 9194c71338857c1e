import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * Shares barriers with the Go barrier package through the server whose
 * connect string is the first argument. It waits on Curator's
 * DistributedBarrier at the second argument, printing "gate true" once it
 * is removed; then it is a member of Curator's DistributedDoubleBarrier at
 * the third argument, of the size given as fourth argument, and prints
 * "entered true" and "left true" as enter and leave return. It ends with
 * "done", or with "FAIL reason" and exit status 1. Every wait gives up
 * after 15 seconds (printing false).
 */
public class CuratorBarrier {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new ExponentialBackoffRetry(100, 5));
        client.start();
        try {
            if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
                throw new IllegalStateException("no connection");
            }
            System.out.println("gate " + new DistributedBarrier(client, args[1]).waitOnBarrier(15, TimeUnit.SECONDS));
            DistributedDoubleBarrier barrier = new DistributedDoubleBarrier(client, args[2], Integer.parseInt(args[3]));
            System.out.println("entered " + barrier.enter(15, TimeUnit.SECONDS));
            System.out.println("left " + barrier.leave(15, TimeUnit.SECONDS));
            System.out.println("done");
        } catch (Exception e) {
            System.out.println("FAIL " + e);
            e.printStackTrace();
            System.exit(1);
        } finally {
            client.close();
        }
    }
}
