import static java.nio.charset.StandardCharsets.UTF_8;

import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.DistributedPriorityQueue;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * Shares queues with the Go queue package through the server whose connect
 * string is the first argument. Under the base path (second argument) it
 * consumes, with Curator's DistributedQueue of byte[], the number of items
 * given as third argument from "to-curator" and as many from "to-curator-safe"
 * (lock-safe, locks under "to-curator-locks"), printing "took QUEUE VALUE"
 * for each in the order consumed. Then it produces, for the Go side to
 * consume: "c0" to "c4" and a multi-item of "m1" and "m2" in "to-go",
 * priority items in "priority", and one item due 300ms from now in "delay",
 * printing "due MILLIS" with its due time. It ends with "done", or with
 * "FAIL reason" and exit status 1.
 */
public class CuratorQueue {
    static final long WAIT_SECONDS = 15;

    static final QueueSerializer<byte[]> BYTES = new QueueSerializer<byte[]>() {
        @Override
        public byte[] serialize(byte[] item) {
            return item;
        }

        @Override
        public byte[] deserialize(byte[] bytes) {
            return bytes;
        }
    };

    public static void main(String[] args) throws Exception {
        String base = args[1];
        int count = Integer.parseInt(args[2]);
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new ExponentialBackoffRetry(100, 5));
        client.start();
        try {
            if (!client.blockUntilConnected((int) WAIT_SECONDS, TimeUnit.SECONDS)) {
                throw new IllegalStateException("no connection");
            }
            consume(client, base + "/to-curator", null, count);
            consume(client, base + "/to-curator-safe", base + "/to-curator-locks", count);
            produce(client, base);
            System.out.println("done");
        } catch (Exception e) {
            System.out.println("FAIL " + e);
            e.printStackTrace();
            System.exit(1);
        } finally {
            client.close();
        }
    }

    static void consume(CuratorFramework client, String path, String lockPath, int count) throws Exception {
        BlockingQueue<byte[]> taken = new LinkedBlockingQueue<>();
        QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
            @Override
            public void consumeMessage(byte[] message) {
                taken.add(message);
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState newState) {
            }
        };
        QueueBuilder<byte[]> builder = QueueBuilder.builder(client, consumer, BYTES, path);
        if (lockPath != null) {
            builder = builder.lockPath(lockPath);
        }
        try (DistributedQueue<byte[]> queue = builder.buildQueue()) {
            queue.start();
            for (int i = 0; i < count; i++) {
                byte[] item = taken.poll(WAIT_SECONDS, TimeUnit.SECONDS);
                if (item == null) {
                    throw new IllegalStateException(path + ": only " + i + " items");
                }
                System.out.println("took " + path + " " + new String(item, UTF_8));
            }
        }
    }

    static void produce(CuratorFramework client, String base) throws Exception {
        try (DistributedQueue<byte[]> queue = QueueBuilder.builder(client, null, BYTES, base + "/to-go").putInBackground(false).buildQueue()) {
            queue.start();
            for (int i = 0; i < 5; i++) {
                queue.put(("c" + i).getBytes(UTF_8));
            }
            byte[][] multi = {"m1".getBytes(UTF_8), "m2".getBytes(UTF_8)};
            int[] next = {0};
            queue.putMulti(() -> next[0] < multi.length ? multi[next[0]++] : null);
        }
        try (DistributedPriorityQueue<byte[]> queue = QueueBuilder.builder(client, null, BYTES, base + "/priority").putInBackground(false).buildPriorityQueue(0)) {
            queue.start();
            int[] priorities = {5, -3, 0, Integer.MAX_VALUE, Integer.MIN_VALUE, -3};
            for (int i = 0; i < priorities.length; i++) {
                queue.put(("p" + i + ":" + priorities[i]).getBytes(UTF_8), priorities[i]);
            }
        }
        try (DistributedDelayQueue<byte[]> queue = QueueBuilder.builder(client, null, BYTES, base + "/delay").putInBackground(false).buildDelayQueue()) {
            queue.start();
            long due = System.currentTimeMillis() + 300;
            queue.put("later".getBytes(UTF_8), due);
            System.out.println("due " + due);
        }
    }
}
