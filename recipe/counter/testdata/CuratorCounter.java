import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

/**
 * Shares counters with the Go counter package through the server whose
 * connect string is the first argument. It reads the SharedCount at the
 * second argument, printing "count VALUE", and adds one to it with
 * trySetCount, retrying over newer values, printing "set VALUE". Then it
 * increments the DistributedAtomicLong at the third argument as many times
 * as the fourth argument says, and prints "incremented N". It ends with
 * "done", or with "FAIL reason" and exit status 1.
 */
public class CuratorCounter {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new ExponentialBackoffRetry(100, 5));
        client.start();
        try (SharedCount count = new SharedCount(client, args[1], -1)) {
            if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
                throw new IllegalStateException("no connection");
            }
            count.start();
            System.out.println("count " + count.getCount());
            for (;;) {
                VersionedValue<Integer> seen = count.getVersionedValue();
                if (count.trySetCount(seen, seen.getValue() + 1)) {
                    System.out.println("set " + (seen.getValue() + 1));
                    break;
                }
            }

            DistributedAtomicLong atomic = new DistributedAtomicLong(client, args[2], new RetryNTimes(1000, 1));
            int n = Integer.parseInt(args[3]);
            for (int i = 0; i < n; i++) {
                AtomicValue<Long> result = atomic.increment();
                if (!result.succeeded()) {
                    throw new IllegalStateException("increment " + i + " gave up");
                }
            }
            System.out.println("incremented " + n);
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
