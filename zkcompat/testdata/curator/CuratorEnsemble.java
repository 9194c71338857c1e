import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * Runs Curator's InterProcessMutex and LeaderLatch on an ensemble whose
 * leader the test kills: three clients, connected to the whole ensemble,
 * take the mutex in turn and hold one LeaderLatch. After "READY" the test
 * kills the ensemble's leader and answers with a line on standard input;
 * the mutex must go on being taken, never by two holders at once, and the
 * latch must have exactly one leader again. Prints "PASS" and exits 0, or
 * "FAIL reason" and exits 1.
 */
public class CuratorEnsemble {
    static final int BEFORE = 20, AFTER = 20;

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        List<CuratorFramework> clients = new ArrayList<>();
        List<LeaderLatch> latches = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            CuratorFramework c = CuratorFrameworkFactory.builder().connectString(connect)
                    .sessionTimeoutMs(10000).connectionTimeoutMs(5000)
                    .retryPolicy(new ExponentialBackoffRetry(50, 20, 500)).build();
            c.start();
            if (!c.blockUntilConnected(10, TimeUnit.SECONDS)) {
                fail("client " + i + " did not connect");
            }
            clients.add(c);
            LeaderLatch latch = new LeaderLatch(c, "/curator-ensemble/latch", "c" + i);
            latch.start();
            latches.add(latch);
        }
        AtomicInteger holders = new AtomicInteger(), overlaps = new AtomicInteger(), taken = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> threads = new ArrayList<>();
        for (CuratorFramework c : clients) {
            Thread t = new Thread(() -> {
                InterProcessMutex mutex = new InterProcessMutex(c, "/curator-ensemble/mutex");
                while (!stop.get()) {
                    try {
                        if (!mutex.acquire(30, TimeUnit.SECONDS)) {
                            continue;
                        }
                    } catch (Exception e) {
                        sleep(50);
                        continue;
                    }
                    try {
                        if (holders.incrementAndGet() > 1) {
                            overlaps.incrementAndGet();
                        }
                        sleep(5);
                        holders.decrementAndGet();
                        taken.incrementAndGet();
                    } finally {
                        try {
                            mutex.release();
                        } catch (Exception e) {
                            // The node goes with the session if it must.
                        }
                    }
                }
            });
            t.setDaemon(true);
            t.start();
            threads.add(t);
        }
        waitFor("" + BEFORE + " acquisitions before the kill", () -> taken.get() >= BEFORE);
        waitFor("one latch leader before the kill", () -> leaders(latches) == 1);
        int before = taken.get();
        System.out.println("READY");
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        waitFor("" + AFTER + " more acquisitions after the kill", () -> taken.get() >= before + AFTER);
        waitFor("one latch leader after the kill", () -> leaders(latches) == 1);
        stop.set(true);
        for (Thread t : threads) {
            t.join(30000);
        }
        if (overlaps.get() != 0) {
            fail(overlaps.get() + " times two holders of the mutex at once");
        }
        for (LeaderLatch l : latches) {
            l.close();
        }
        for (CuratorFramework c : clients) {
            c.close();
        }
        System.out.println("PASS");
        System.exit(0);
    }

    static int leaders(List<LeaderLatch> latches) {
        int n = 0;
        for (LeaderLatch l : latches) {
            if (l.hasLeadership()) {
                n++;
            }
        }
        return n;
    }

    interface Cond {
        boolean holds();
    }

    static void waitFor(String what, Cond cond) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!cond.holds()) {
            if (System.nanoTime() > deadline) {
                fail("no " + what + " within 30s");
            }
            sleep(10);
        }
        System.out.println("ok: " + what);
        System.out.flush();
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void fail(String reason) {
        System.out.println("FAIL " + reason);
        System.out.flush();
        System.exit(1);
    }
}
