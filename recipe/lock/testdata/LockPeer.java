import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * Holders of Apache Curator's InterProcessMutex, InterProcessReadWriteLock
 * and InterProcessSemaphoreV2, driven line by line from standard input so
 * that a test can interleave them with another implementation on the same
 * paths; and a benchmark of InterProcessMutex under contention. The only
 * argument is the connect string. Every holder has a name and a thread of
 * its own (Curator's locks belong to the thread that took them, and an
 * InterProcessMutex is reentrant per thread); holders share one session,
 * but each holder's lock creates nodes of its own. A command that takes a
 * lock starts the taking in that thread and answers at once, and "await"
 * waits for it. Every command is answered with one line on standard
 * output, "error ..." when it fails:
 *
 * <pre>
 * mutex NAME PATH DATA           a mutex with node data DATA              ok
 * rwlock NAME PATH DATA          a read/write lock with node data DATA    ok
 * semaphore NAME PATH MAX DATA   a semaphore of MAX leases                ok
 * lock NAME                      start taking the mutex                   ok
 * write NAME | read NAME         start taking the write or read lock      ok
 * acquire NAME N                 start acquiring N leases                 ok
 * contend NAME COUNTER ROUNDS    start taking the mutex ROUNDS times,
 *                                each time adding one to the integer in
 *                                COUNTER by a read and a write
 *                                conditional on the version read, then
 *                                releasing it                             ok
 * await NAME                     wait for the taking to end               acquired | timeout
 *                                (contend: done ROUNDS, or badversion     done ROUNDS | timeout
 *                                when a write was refused because         | badversion
 *                                someone else wrote COUNTER while the
 *                                mutex was held)
 * state NAME                     whether it has ended                     as await | waiting
 * unlock NAME                    release the mutex                        ok
 * unwrite NAME | unread NAME     release the write or read lock           ok
 * return NAME                    return every lease held                  ok
 * bench PATH THREADS TOTAL       TOTAL acquisitions and releases of an
 *                                InterProcessMutex on PATH by THREADS
 *                                threads, each with a session of its     NANOS HANDOFF_NANOS
 *                                own: the time taken, and the times       HANDOFFS
 *                                from a release to the next acquisition
 * quit                           close everything and exit
 * </pre>
 */
public class LockPeer {
    /** Bounds every wait, so that a lost wakeup answers "timeout". */
    static final long WAIT_SECONDS = 15;

    static final class Holder {
        final ExecutorService thread = Executors.newSingleThreadExecutor();
        InterProcessMutex mutex;
        InterProcessReadWriteLock rw;
        InterProcessSemaphoreV2 semaphore;
        final List<Lease> leases = new ArrayList<>();
        Future<String> taking;
    }

    static final Map<String, Holder> holders = new HashMap<>();
    static final List<CuratorFramework> benchClients = new ArrayList<>();
    static String connect;

    public static void main(String[] args) throws Exception {
        connect = args[0];
        CuratorFramework client = newClient();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] words = line.trim().split(" ");
            if (words[0].equals("quit")) {
                break;
            }
            String answer;
            try {
                answer = run(client, words);
            } catch (Exception e) {
                answer = "error " + e;
            }
            System.out.println(answer);
            System.out.flush();
        }
        for (Holder h : holders.values()) {
            h.thread.shutdownNow();
        }
        for (CuratorFramework c : benchClients) {
            c.close();
        }
        client.close();
        System.exit(0);
    }

    static CuratorFramework newClient() throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(10_000)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        client.start();
        if (!client.blockUntilConnected((int) WAIT_SECONDS, TimeUnit.SECONDS)) {
            throw new IllegalStateException("not connected");
        }
        return client;
    }

    static String run(CuratorFramework client, String[] words) throws Exception {
        if (words[0].equals("bench")) {
            return bench(words[1], Integer.parseInt(words[2]), Integer.parseInt(words[3]));
        }
        Holder h = holders.computeIfAbsent(words[1], k -> new Holder());
        switch (words[0]) {
            case "mutex":
                byte[] data = words[3].getBytes(StandardCharsets.UTF_8);
                h.mutex = new InterProcessMutex(client, words[2]) {
                    @Override
                    protected byte[] getLockNodeBytes() {
                        return data;
                    }
                };
                return "ok";
            case "rwlock":
                h.rw = new InterProcessReadWriteLock(client, words[2], words[3].getBytes(StandardCharsets.UTF_8));
                return "ok";
            case "semaphore":
                h.semaphore = new InterProcessSemaphoreV2(client, words[2], Integer.parseInt(words[3]));
                h.semaphore.setNodeData(words[4].getBytes(StandardCharsets.UTF_8));
                return "ok";
            case "lock":
                h.taking = h.thread.submit(() -> h.mutex.acquire(WAIT_SECONDS, TimeUnit.SECONDS) ? "acquired" : "timeout");
                return "ok";
            case "contend":
                String counter = words[2];
                int rounds = Integer.parseInt(words[3]);
                h.taking = h.thread.submit(() -> {
                    for (int i = 0; i < rounds; i++) {
                        if (!h.mutex.acquire(WAIT_SECONDS, TimeUnit.SECONDS)) {
                            return "timeout";
                        }
                        try {
                            if (increment(client, counter).equals("badversion")) {
                                return "badversion";
                            }
                        } finally {
                            h.mutex.release();
                        }
                    }
                    return "done " + rounds;
                });
                return "ok";
            case "write":
                h.taking = h.thread.submit(() -> h.rw.writeLock().acquire(WAIT_SECONDS, TimeUnit.SECONDS) ? "acquired" : "timeout");
                return "ok";
            case "read":
                h.taking = h.thread.submit(() -> h.rw.readLock().acquire(WAIT_SECONDS, TimeUnit.SECONDS) ? "acquired" : "timeout");
                return "ok";
            case "acquire":
                int n = Integer.parseInt(words[2]);
                h.taking = h.thread.submit(() -> {
                    Collection<Lease> got = h.semaphore.acquire(n, WAIT_SECONDS, TimeUnit.SECONDS);
                    if (got == null) {
                        return "timeout";
                    }
                    h.leases.addAll(got);
                    return "acquired";
                });
                return "ok";
            case "await":
                try {
                    return h.taking.get(WAIT_SECONDS + 1, TimeUnit.SECONDS);
                } catch (TimeoutException e) {
                    return "timeout";
                }
            case "state":
                return h.taking.isDone() ? h.taking.get() : "waiting";
            case "unlock":
                h.thread.submit(() -> { h.mutex.release(); return null; }).get();
                return "ok";
            case "unwrite":
                h.thread.submit(() -> { h.rw.writeLock().release(); return null; }).get();
                return "ok";
            case "unread":
                h.thread.submit(() -> { h.rw.readLock().release(); return null; }).get();
                return "ok";
            case "return":
                h.thread.submit(() -> { h.semaphore.returnAll(h.leases); h.leases.clear(); return null; }).get();
                return "ok";
            default:
                return "error unknown command " + words[0];
        }
    }

    /**
     * Adds one to the integer in path by a read and a write conditional on
     * the version read, and returns the new value, or "badversion" when
     * someone else wrote path in between.
     */
    static String increment(CuratorFramework client, String path) throws Exception {
        Stat stat = new Stat();
        byte[] data = client.getData().storingStatIn(stat).forPath(path);
        int n = Integer.parseInt(new String(data, StandardCharsets.UTF_8)) + 1;
        try {
            client.setData().withVersion(stat.getVersion()).forPath(path, Integer.toString(n).getBytes(StandardCharsets.UTF_8));
        } catch (KeeperException.BadVersionException e) {
            return "badversion";
        }
        return Integer.toString(n);
    }

    /**
     * Runs total acquisitions by threads contenders and returns the
     * nanoseconds they took, the sum of the nanoseconds from a release to
     * the next acquisition, and how many such handoffs there were.
     */
    static String bench(String path, int threads, int total) throws Exception {
        while (benchClients.size() < threads) {
            benchClients.add(newClient());
        }
        AtomicInteger left = new AtomicInteger(total);
        AtomicLong released = new AtomicLong();
        AtomicLong handoffNanos = new AtomicLong();
        AtomicLong handoffs = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Void>> done = new ArrayList<>();
        long start = System.nanoTime();
        for (int i = 0; i < threads; i++) {
            InterProcessMutex mutex = new InterProcessMutex(benchClients.get(i), path);
            done.add(pool.submit(() -> {
                while (left.getAndDecrement() > 0) {
                    mutex.acquire();
                    long at = released.get();
                    if (at != 0) {
                        handoffNanos.addAndGet(System.nanoTime() - at);
                        handoffs.incrementAndGet();
                    }
                    released.set(System.nanoTime());
                    mutex.release();
                }
                return null;
            }));
        }
        for (Future<Void> f : done) {
            f.get();
        }
        long took = System.nanoTime() - start;
        pool.shutdown();
        return took + " " + handoffNanos.get() + " " + handoffs.get();
    }
}
