import static java.nio.charset.StandardCharsets.UTF_8;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.BackgroundCallback;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.CuratorWatcher;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.SharedCountReader;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.recipes.watch.PersistentWatcher;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryUntilElapsed;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

/**
 * Runs Apache Curator recipes against the ZooKeeper-compatible server whose
 * connect string is the first argument, and prints "PASS name" or
 * "FAIL name: reason" for each scenario. The other arguments name the
 * scenarios to run (all of them when there are none). The exit status is 0
 * only when every scenario passed.
 *
 * Each scenario works under its own path below /curator, so the scenarios
 * are independent of each other and of the order they run in. The
 * "ttl" scenario needs TTL nodes enabled on the server and a container
 * check interval well under a second.
 */
public class CuratorInterop {
    /** Bounds one scenario, so a hang becomes a FAIL line with a thread dump. */
    static final long SCENARIO_TIMEOUT_SECONDS = 40;
    /** Bounds every wait for a condition or an event inside a scenario. */
    static final long WAIT_SECONDS = 15;

    interface Scenario {
        void run(String connect) throws Exception;
    }

    static final Map<String, Scenario> SCENARIOS = new LinkedHashMap<>();

    static {
        SCENARIOS.put("mutex", CuratorInterop::mutex);
        SCENARIOS.put("leaderlatch", CuratorInterop::leaderLatch);
        SCENARIOS.put("cache", CuratorInterop::cache);
        SCENARIOS.put("transaction", CuratorInterop::transaction);
        SCENARIOS.put("sharedcount", CuratorInterop::sharedCount);
        SCENARIOS.put("atomiclong", CuratorInterop::atomicLong);
        SCENARIOS.put("persistentwatcher", CuratorInterop::persistentWatcher);
        SCENARIOS.put("persistentnode", CuratorInterop::persistentNode);
        SCENARIOS.put("ttl", CuratorInterop::ttl);
        SCENARIOS.put("sessionloss", CuratorInterop::sessionLoss);
        SCENARIOS.put("background", CuratorInterop::background);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: CuratorInterop connect-string [scenario...]; scenarios: " + SCENARIOS.keySet());
            System.exit(2);
        }
        String connect = args[0];
        List<String> names = args.length > 1 ? Arrays.asList(args).subList(1, args.length) : new ArrayList<>(SCENARIOS.keySet());
        int failed = 0;
        for (String name : names) {
            Scenario s = SCENARIOS.get(name);
            if (s == null) {
                System.out.println("FAIL " + name + ": no such scenario; known: " + SCENARIOS.keySet());
                failed++;
                continue;
            }
            if (runScenario(name, s, connect)) {
                System.out.println("PASS " + name);
            } else {
                failed++;
            }
            System.out.flush();
        }
        // Exit rather than return: a scenario that timed out may have left
        // threads behind.
        System.exit(failed == 0 ? 0 : 1);
    }

    /** Runs s on its own thread, printing why it failed if it did. */
    static boolean runScenario(String name, Scenario s, String connect) {
        ExecutorService runner = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "scenario-" + name);
            t.setDaemon(true);
            return t;
        });
        Future<?> done = runner.submit(() -> {
            s.run(connect);
            return null;
        });
        runner.shutdown();
        try {
            done.get(SCENARIO_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            return true;
        } catch (ExecutionException e) {
            System.out.println("FAIL " + name + ": " + e.getCause());
            e.getCause().printStackTrace(System.out);
        } catch (TimeoutException e) {
            System.out.println("FAIL " + name + ": not done after " + SCENARIO_TIMEOUT_SECONDS + "s; threads:");
            Thread.getAllStackTraces().forEach((t, stack) -> {
                System.out.println("  thread " + t.getName());
                for (StackTraceElement el : stack) {
                    System.out.println("    at " + el);
                }
            });
        } catch (InterruptedException e) {
            System.out.println("FAIL " + name + ": interrupted");
        }
        return false;
    }

    // ---- helpers ----

    static CuratorFramework connect(String connect) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(10_000)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        c.start();
        if (!c.blockUntilConnected((int) WAIT_SECONDS, TimeUnit.SECONDS)) {
            c.close();
            throw new AssertionError("no connection to " + connect + " after " + WAIT_SECONDS + "s");
        }
        return c;
    }

    /** Brings c's server up to date with every write committed before now. */
    static void syncPath(CuratorFramework c, String path) throws Exception {
        CountDownLatch synced = new CountDownLatch(1);
        c.sync().inBackground((client, e) -> synced.countDown()).forPath(path);
        check(synced.await(WAIT_SECONDS, TimeUnit.SECONDS), "sync of %s did not return", path);
    }

    static void check(boolean ok, String format, Object... args) {
        if (!ok) {
            throw new AssertionError(String.format(format, args));
        }
    }

    /**
     * The children of path, none when it is gone: an empty container, such
     * as a lock's parent once the last holder left, is reaped by the server.
     */
    static List<String> childrenOf(CuratorFramework c, String path) throws Exception {
        try {
            return c.getChildren().forPath(path);
        } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
            return List.of();
        }
    }

    static void checkEqual(Object want, Object got, String what) {
        if (!want.equals(got)) {
            throw new AssertionError(what + ": want " + want + ", got " + got);
        }
    }

    /** Polls cond until it holds, failing after WAIT_SECONDS. */
    static void waitFor(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("waited " + WAIT_SECONDS + "s for " + what);
            }
            Thread.sleep(10);
        }
    }

    static <T> T next(BlockingQueue<T> q, String what) throws InterruptedException {
        T v = q.poll(WAIT_SECONDS, TimeUnit.SECONDS);
        if (v == null) {
            throw new AssertionError("no " + what + " within " + WAIT_SECONDS + "s");
        }
        return v;
    }

    /** Takes n items from q and returns them sorted, for events whose order is not defined. */
    static List<String> nextSorted(BlockingQueue<String> q, int n, String what) throws InterruptedException {
        List<String> got = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            got.add(next(q, what + " " + (i + 1) + " of " + n + " (so far " + got + ")"));
        }
        got.sort(null);
        return got;
    }

    static String str(byte[] b) {
        return b == null ? "" : new String(b, UTF_8);
    }

    static byte[] bytes(String s) {
        return s.getBytes(UTF_8);
    }

    static boolean exists(CuratorFramework c, String path) {
        try {
            return c.checkExists().forPath(path) != null;
        } catch (Exception e) {
            throw new RuntimeException("exists " + path, e);
        }
    }

    static <T> void joinAll(List<Future<T>> futures) throws Exception {
        for (Future<T> f : futures) {
            try {
                f.get(WAIT_SECONDS * 2, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof Exception) {
                    throw (Exception) e.getCause();
                }
                throw new AssertionError(e.getCause());
            }
        }
    }

    static void closeAll(List<? extends AutoCloseable> all) throws Exception {
        for (AutoCloseable c : all) {
            c.close();
        }
    }

    // ---- scenarios ----

    /**
     * Six contenders on two sessions take one InterProcessMutex in turn; at
     * no moment may two of them hold it. Then: reentrancy, a second session
     * timing out while the lock is held, and no lock nodes left behind.
     */
    static void mutex(String connect) throws Exception {
        String path = "/curator/mutex";
        int sessions = 2, threadsPerSession = 3, rounds = 5;
        List<CuratorFramework> clients = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(sessions * threadsPerSession);
        try {
            for (int i = 0; i < sessions; i++) {
                clients.add(connect(connect));
            }
            AtomicInteger holders = new AtomicInteger();
            AtomicInteger maxHolders = new AtomicInteger();
            AtomicInteger acquisitions = new AtomicInteger();
            List<Future<Void>> contenders = new ArrayList<>();
            for (CuratorFramework c : clients) {
                for (int t = 0; t < threadsPerSession; t++) {
                    contenders.add(pool.submit(() -> {
                        InterProcessMutex m = new InterProcessMutex(c, path);
                        for (int r = 0; r < rounds; r++) {
                            check(m.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "acquire timed out");
                            try {
                                maxHolders.accumulateAndGet(holders.incrementAndGet(), Math::max);
                                check(m.isOwnedByCurrentThread(), "lock acquired but not owned by this thread");
                                // Hold the lock a moment so that a second holder, if the
                                // lock let one in, would overlap with this one.
                                Thread.sleep(2);
                                holders.decrementAndGet();
                                acquisitions.incrementAndGet();
                            } finally {
                                m.release();
                            }
                        }
                        return null;
                    }));
                }
            }
            joinAll(contenders);
            checkEqual(1, maxHolders.get(), "most holders at once");
            checkEqual(sessions * threadsPerSession * rounds, acquisitions.get(), "acquisitions");

            InterProcessMutex a = new InterProcessMutex(clients.get(0), path);
            InterProcessMutex b = new InterProcessMutex(clients.get(1), path);
            check(a.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "first acquire by a");
            check(a.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "reentrant acquire by a");
            checkEqual(1, a.getParticipantNodes().size(), "participants while a holds the lock twice");
            check(!b.acquire(200, TimeUnit.MILLISECONDS), "b acquired the lock that a holds");
            a.release();
            check(a.isAcquiredInThisProcess(), "a lost the lock after releasing one of two holds");
            // b withdrew through its own server; a reads through another.
            syncPath(clients.get(0), path);
            checkEqual(1, a.getParticipantNodes().size(), "participants after b gave up");
            a.release();
            check(!a.isAcquiredInThisProcess(), "a still holds the lock after releasing both holds");
            check(b.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "b cannot acquire the released lock");
            b.release();
            syncPath(clients.get(0), path);
            checkEqual(List.of(), childrenOf(clients.get(0), path), "lock nodes left behind");
        } finally {
            pool.shutdownNow();
            closeAll(clients);
        }
    }

    /**
     * Three LeaderLatches on three sessions: exactly one leads and all agree
     * who; when the leader closes its latch, and then when the next leader's
     * session closes, leadership moves on.
     */
    static void leaderLatch(String connect) throws Exception {
        String path = "/curator/leader";
        List<CuratorFramework> clients = new ArrayList<>();
        List<LeaderLatch> latches = new ArrayList<>();
        List<String> tookLead = new CopyOnWriteArrayList<>();
        Set<LeaderLatch> closed = new HashSet<>();
        try {
            for (int i = 0; i < 3; i++) {
                CuratorFramework c = connect(connect);
                clients.add(c);
                String id = "latch" + i;
                LeaderLatch l = new LeaderLatch(c, path, id);
                l.addListener(new LeaderLatchListener() {
                    @Override
                    public void isLeader() {
                        tookLead.add(id);
                    }

                    @Override
                    public void notLeader() {
                    }
                });
                latches.add(l);
            }
            for (LeaderLatch l : latches) {
                l.start();
            }
            List<LeaderLatch> running = new ArrayList<>(latches);
            List<String> leaders = new ArrayList<>();
            for (int round = 0; round < 3; round++) {
                LeaderLatch leader = awaitSoleLeader(running);
                leaders.add(leader.getId());
                waitFor("every latch to see " + leader.getId() + " lead", () -> running.stream().allMatch(l -> {
                    try {
                        return l.getLeader().getId().equals(leader.getId()) && l.getParticipants().size() == running.size();
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }));
                running.remove(leader);
                int i = latches.indexOf(leader);
                if (round == 0) {
                    leader.close();
                    closed.add(leader);
                } else if (round == 1) {
                    // A process that dies loses its session; the server
                    // deletes the latch's ephemeral node.
                    clients.get(i).close();
                    closed.add(leader);
                }
            }
            waitFor("three leadership callbacks", () -> tookLead.size() >= 3);
            checkEqual(leaders, tookLead, "isLeader callbacks");
            checkEqual(3, new HashSet<>(leaders).size(), "distinct leaders");
        } finally {
            for (LeaderLatch l : latches) {
                if (!closed.contains(l)) {
                    l.close();
                }
            }
            closeAll(clients);
        }
    }

    static LeaderLatch awaitSoleLeader(List<LeaderLatch> latches) throws InterruptedException {
        waitFor("a leader among " + latches.size() + " latches", () -> latches.stream().anyMatch(LeaderLatch::hasLeadership));
        List<LeaderLatch> leading = latches.stream().filter(LeaderLatch::hasLeadership).collect(Collectors.toList());
        check(leading.size() == 1, "%d latches lead at once: %s", leading.size(),
                leading.stream().map(LeaderLatch::getId).collect(Collectors.toList()));
        return leading.get(0);
    }

    /**
     * A CuratorCache of a subtree loads what exists, then reports every
     * create, change and delete below it, and its content equals the tree.
     */
    static void cache(String connect) throws Exception {
        String root = "/curator/cache";
        try (CuratorFramework c = connect(connect); CuratorFramework writer = connect(connect)) {
            c.create().creatingParentsIfNeeded().forPath(root + "/pre", bytes("p"));
            BlockingQueue<String> events = new LinkedBlockingQueue<>();
            CuratorCacheListener listener = CuratorCacheListener.builder()
                    .forCreates(n -> events.add("create " + n.getPath() + " " + str(n.getData())))
                    .forChanges((old, n) -> events.add("change " + n.getPath() + " " + str(old.getData()) + "->" + str(n.getData())))
                    .forDeletes(old -> events.add("delete " + old.getPath() + " " + str(old.getData())))
                    .forInitialized(() -> events.add("initialized"))
                    .build();
            try (CuratorCache cache = CuratorCache.build(c, root)) {
                cache.listenable().addListener(listener);
                cache.start();
                checkEqual(List.of("create /curator/cache ", "create /curator/cache/pre p"),
                        nextSorted(events, 2, "initial create event"), "initial events");
                checkEqual("initialized", next(events, "initialized event"), "event after the initial load");

                // The writer is another session: the cache must learn of
                // changes through watches alone.
                String[][] steps = {
                    {"create " + root + "/a 1"},
                    {"create " + root + "/a/b 2"},
                    {"set " + root + "/a 3", "change " + root + "/a 1->3"},
                    {"set " + root + "/a/b 4", "change " + root + "/a/b 2->4"},
                    {"create " + root + "/a/b/c 5"},
                    {"set " + root + " r", "change " + root + " ->r"},
                    {"delete " + root + "/a/b/c", "delete " + root + "/a/b/c 5"},
                    {"delete " + root + "/pre", "delete " + root + "/pre p"},
                };
                for (String[] step : steps) {
                    String[] op = step[0].split(" ");
                    switch (op[0]) {
                        case "create":
                            writer.create().forPath(op[1], bytes(op[2]));
                            break;
                        case "set":
                            writer.setData().forPath(op[1], bytes(op[2]));
                            break;
                        case "delete":
                            writer.delete().forPath(op[1]);
                            break;
                        default:
                            throw new IllegalStateException(op[0]);
                    }
                    String want = step.length > 1 ? step[1] : step[0];
                    checkEqual(want, next(events, "event of " + step[0]), "event of " + step[0]);
                }
                checkCacheMatchesTree(cache, writer, root);

                writer.delete().deletingChildrenIfNeeded().forPath(root + "/a");
                checkEqual(List.of("delete " + root + "/a 3", "delete " + root + "/a/b 4"),
                        nextSorted(events, 2, "delete event"), "events of a recursive delete");
                // A last create proves that no other event came before it.
                writer.create().forPath(root + "/last", bytes("z"));
                checkEqual("create " + root + "/last z", next(events, "last create event"), "event after the recursive delete");
                checkCacheMatchesTree(cache, writer, root);
            }
        }
    }

    static void checkCacheMatchesTree(CuratorCache cache, CuratorFramework c, String root) throws Exception {
        Map<String, String> cached = new TreeMap<>();
        cache.stream().forEach(d -> cached.put(d.getPath(), describe(d.getData(), d.getStat())));
        Map<String, String> tree = new TreeMap<>();
        walk(c, root, tree);
        checkEqual(tree, cached, "cache content (path -> data, version, mzxid)");
    }

    static void walk(CuratorFramework c, String path, Map<String, String> out) throws Exception {
        Stat st = new Stat();
        byte[] data = c.getData().storingStatIn(st).forPath(path);
        out.put(path, describe(data, st));
        for (String child : c.getChildren().forPath(path)) {
            walk(c, path + "/" + child, out);
        }
    }

    static String describe(byte[] data, Stat st) {
        return str(data) + " v" + st.getVersion() + " mzxid=" + st.getMzxid();
    }

    /**
     * client.transaction().forOperations: a transaction that succeeds
     * reports a result per operation; transactions that fail report the
     * failing operation's error, change nothing, and leave no trace in the
     * sequence numbers of later creates.
     */
    static void transaction(String connect) throws Exception {
        String root = "/curator/tx";
        try (CuratorFramework c = connect(connect)) {
            c.create().creatingParentsIfNeeded().forPath(root);
            List<CuratorOp> ops = List.of(
                    c.transactionOp().create().forPath(root + "/a", bytes("a")),
                    c.transactionOp().create().forPath(root + "/b", bytes("b")),
                    c.transactionOp().create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath(root + "/s-", bytes("s")),
                    c.transactionOp().setData().forPath(root + "/a", bytes("a2")),
                    c.transactionOp().check().withVersion(0).forPath(root + "/b"),
                    c.transactionOp().delete().forPath(root + "/b"));
            List<String> results = new ArrayList<>();
            for (CuratorTransactionResult r : c.transaction().forOperations(ops)) {
                String line = r.getType() + " " + r.getForPath() + " -> " + r.getResultPath() + " err=" + r.getError();
                if (r.getResultStat() != null) {
                    line += " version=" + r.getResultStat().getVersion();
                }
                results.add(line);
            }
            checkEqual(List.of(
                    "CREATE /curator/tx/a -> /curator/tx/a err=0",
                    "CREATE /curator/tx/b -> /curator/tx/b err=0",
                    "CREATE /curator/tx/s- -> /curator/tx/s-0000000002 err=0",
                    "SET_DATA /curator/tx/a -> null err=0 version=1",
                    "CHECK /curator/tx/b -> null err=0",
                    "DELETE /curator/tx/b -> null err=0"), results, "results of the committed transaction");
            String committed = snapshot(c, root);
            checkEqual("/curator/tx v0 cv4 children=[a, s-0000000002]; a=a2 v1; s-0000000002=s v0", committed, "tree after the commit");

            Object[][] failing = {
                // name, operations, error code, per-operation result codes
                {"setData with a stale version", List.of(
                    c.transactionOp().create().forPath(root + "/c", bytes("c")),
                    c.transactionOp().setData().withVersion(0).forPath(root + "/a", bytes("a3")),
                    c.transactionOp().create().forPath(root + "/d")),
                    KeeperException.Code.BADVERSION, List.of(0, -103, -2)},
                {"check with a wrong version", List.of(
                    c.transactionOp().delete().forPath(root + "/s-0000000002"),
                    c.transactionOp().setData().forPath(root + "/a", bytes("a4")),
                    c.transactionOp().check().withVersion(7).forPath(root + "/a")),
                    KeeperException.Code.BADVERSION, List.of(0, 0, -103)},
                {"create of an existing node", List.of(
                    c.transactionOp().create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath(root + "/s-"),
                    c.transactionOp().create().forPath(root + "/a"),
                    c.transactionOp().delete().forPath(root + "/a")),
                    KeeperException.Code.NODEEXISTS, List.of(0, -110, -2)},
                {"setData of a missing node", List.of(
                    c.transactionOp().delete().forPath(root + "/a"),
                    c.transactionOp().setData().forPath(root + "/missing", bytes("x"))),
                    KeeperException.Code.NONODE, List.of(0, -101)},
                {"delete of a node with children", List.of(
                    c.transactionOp().delete().forPath(root)),
                    KeeperException.Code.NOTEMPTY, List.of(-111)},
            };
            for (Object[] f : failing) {
                String name = (String) f[0];
                @SuppressWarnings("unchecked")
                List<CuratorOp> failOps = (List<CuratorOp>) f[1];
                try {
                    c.transaction().forOperations(failOps);
                    throw new AssertionError(name + ": transaction committed");
                } catch (KeeperException e) {
                    checkEqual(f[2], e.code(), name + ": error");
                    List<Integer> codes = new ArrayList<>();
                    for (OpResult r : e.getResults()) {
                        check(r instanceof OpResult.ErrorResult, "%s: result %s is not an error result", name, r);
                        codes.add(((OpResult.ErrorResult) r).getErr());
                    }
                    checkEqual(f[3], codes, name + ": per-operation result codes");
                }
                checkEqual(committed, snapshot(c, root), name + ": tree after the rollback");
            }
            // Sequence numbers count the parent's child creations, three so
            // far; the rolled-back creates must not count.
            checkEqual(root + "/s-0000000003",
                    c.create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath(root + "/s-"),
                    "sequential create after the rollbacks");
        }
    }

    /** Renders root and its children (one level) with data and versions. */
    static String snapshot(CuratorFramework c, String root) throws Exception {
        Stat st = c.checkExists().forPath(root);
        List<String> children = new ArrayList<>(c.getChildren().forPath(root));
        children.sort(null);
        StringBuilder b = new StringBuilder(root + " v" + st.getVersion() + " cv" + st.getCversion() + " children=" + children);
        for (String child : children) {
            Stat cs = new Stat();
            byte[] data = c.getData().storingStatIn(cs).forPath(root + "/" + child);
            b.append("; ").append(child).append('=').append(str(data)).append(" v").append(cs.getVersion());
        }
        return b.toString();
    }

    /**
     * SharedCount on two sessions: a change made through one is seen by the
     * other's listener, and trySetCount with a stale version fails.
     */
    static void sharedCount(String connect) throws Exception {
        String path = "/curator/sharedcount";
        try (CuratorFramework c1 = connect(connect); CuratorFramework c2 = connect(connect);
             SharedCount one = new SharedCount(c1, path, 10); SharedCount two = new SharedCount(c2, path, 20)) {
            BlockingQueue<Integer> seenByTwo = new LinkedBlockingQueue<>();
            two.addListener(new SharedCountListener() {
                @Override
                public void countHasChanged(SharedCountReader reader, int newCount) {
                    seenByTwo.add(newCount);
                }

                @Override
                public void stateChanged(CuratorFramework client, ConnectionState state) {
                }
            });
            one.start();
            two.start();
            // The first to start creates the node with its seed.
            checkEqual(10, one.getCount(), "count after start of the first");
            checkEqual(10, two.getCount(), "count seen by the second");
            VersionedValue<Integer> v = one.getVersionedValue();
            checkEqual(0, v.getVersion(), "version of the seeded count");
            check(one.trySetCount(v, 11), "trySetCount with the current version failed");
            checkEqual(11, next(seenByTwo, "change notification"), "count in the listener of the second");
            check(!two.trySetCount(v, 12), "trySetCount with a stale version succeeded");
            checkEqual(11, two.getCount(), "count after the failed trySetCount");
            two.setCount(13);
            waitFor("the first to see 13", () -> one.getCount() == 13);
            checkEqual(2, one.getVersionedValue().getVersion(), "version after two updates");
        }
    }

    /**
     * DistributedAtomicLong incremented concurrently from two sessions: every
     * increment succeeds exactly once, so the values handed out are 1..n.
     */
    static void atomicLong(String connect) throws Exception {
        String path = "/curator/atomiclong";
        int threads = 4, increments = 10;
        List<CuratorFramework> clients = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            clients.add(connect(connect));
            clients.add(connect(connect));
            Set<Long> handedOut = ConcurrentHashMap.newKeySet();
            List<Future<Void>> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                CuratorFramework c = clients.get(t % clients.size());
                workers.add(pool.submit(() -> {
                    DistributedAtomicLong counter = new DistributedAtomicLong(c, path, new RetryUntilElapsed((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS), 1));
                    for (int i = 0; i < increments; i++) {
                        AtomicValue<Long> r = counter.increment();
                        check(r.succeeded(), "increment gave up");
                        checkEqual(r.preValue() + 1, (long) r.postValue(), "post value of an increment");
                        check(handedOut.add(r.postValue()), "value %d handed out twice", r.postValue());
                    }
                    return null;
                }));
            }
            joinAll(workers);
            long n = threads * increments;
            // The last increment may have gone through the other client's
            // server; a read is only as fresh as its own server, so catch it
            // up first, as a ZooKeeper user must.
            syncPath(clients.get(0), path);
            AtomicValue<Long> end = new DistributedAtomicLong(clients.get(0), path, new RetryUntilElapsed(1000, 10)).get();
            check(end.succeeded(), "get failed");
            checkEqual(n, (long) end.postValue(), "final value");
            Set<Long> want = new HashSet<>();
            for (long i = 1; i <= n; i++) {
                want.add(i);
            }
            checkEqual(want, handedOut, "values handed out");
        } finally {
            pool.shutdownNow();
            closeAll(clients);
        }
    }

    /**
     * PersistentWatcher (addWatch): a recursive watch reports creates,
     * changes and deletes anywhere below its path, over and over; a
     * non-recursive one reports its node's changes and child-list changes.
     */
    static void persistentWatcher(String connect) throws Exception {
        String root = "/curator/pw";
        try (CuratorFramework c = connect(connect); CuratorFramework writer = connect(connect)) {
            c.create().creatingParentsIfNeeded().forPath(root + "/tree");
            c.create().forPath(root + "/flat");
            BlockingQueue<String> recursive = new LinkedBlockingQueue<>();
            BlockingQueue<String> flat = new LinkedBlockingQueue<>();
            try (PersistentWatcher rw = new PersistentWatcher(c, root + "/tree", true);
                 PersistentWatcher fw = new PersistentWatcher(c, root + "/flat", false)) {
                CountDownLatch registered = new CountDownLatch(2);
                rw.getResetListenable().addListener(registered::countDown);
                fw.getResetListenable().addListener(registered::countDown);
                rw.getListenable().addListener(e -> recursive.add(e.getType() + " " + e.getPath()));
                fw.getListenable().addListener(e -> flat.add(e.getType() + " " + e.getPath()));
                rw.start();
                fw.start();
                check(registered.await(WAIT_SECONDS, TimeUnit.SECONDS), "watches not registered");

                String t = root + "/tree";
                writer.create().forPath(t + "/a");
                checkEqual("NodeCreated " + t + "/a", next(recursive, "event"), "recursive: create child");
                writer.create().forPath(t + "/a/b");
                checkEqual("NodeCreated " + t + "/a/b", next(recursive, "event"), "recursive: create grandchild");
                writer.setData().forPath(t + "/a", bytes("x"));
                checkEqual("NodeDataChanged " + t + "/a", next(recursive, "event"), "recursive: set child");
                writer.setData().forPath(t + "/a/b", bytes("y"));
                checkEqual("NodeDataChanged " + t + "/a/b", next(recursive, "event"), "recursive: set grandchild");
                writer.setData().forPath(t, bytes("z"));
                checkEqual("NodeDataChanged " + t, next(recursive, "event"), "recursive: set the watched node");
                writer.delete().forPath(t + "/a/b");
                checkEqual("NodeDeleted " + t + "/a/b", next(recursive, "event"), "recursive: delete grandchild");
                writer.delete().forPath(t + "/a");
                checkEqual("NodeDeleted " + t + "/a", next(recursive, "event"), "recursive: delete child");

                String f = root + "/flat";
                writer.create().forPath(f + "/x");
                checkEqual("NodeChildrenChanged " + f, next(flat, "event"), "flat: create child");
                writer.setData().forPath(f + "/x", bytes("1"));
                writer.create().forPath(f + "/x/deep");
                writer.setData().forPath(f, bytes("2"));
                // Changes below the children fire nothing, so the next event
                // is the data change of the watched node itself.
                checkEqual("NodeDataChanged " + f, next(flat, "event"), "flat: set the watched node");
                writer.delete().forPath(f + "/x/deep");
                writer.delete().forPath(f + "/x");
                checkEqual("NodeChildrenChanged " + f, next(flat, "event"), "flat: delete child");
                writer.delete().forPath(f);
                checkEqual("NodeDeleted " + f, next(flat, "event"), "flat: delete the watched node");
                writer.create().forPath(f);
                checkEqual("NodeCreated " + f, next(flat, "event"), "flat: create the watched node again");
                check(recursive.isEmpty(), "recursive watch saw changes outside its subtree: %s", recursive);
            }
        }
    }

    /**
     * PersistentNode keeps an ephemeral node in place: it is owned by the
     * recipe's session, recreated when someone deletes it, updated by
     * setData, and deleted on close.
     */
    static void persistentNode(String connect) throws Exception {
        String path = "/curator/pn/node";
        try (CuratorFramework c = connect(connect); CuratorFramework other = connect(connect)) {
            c.create().creatingParentsIfNeeded().forPath("/curator/pn");
            long session = c.getZookeeperClient().getZooKeeper().getSessionId();
            try (PersistentNode node = new PersistentNode(c, CreateMode.EPHEMERAL, false, path, bytes("v1"))) {
                node.start();
                check(node.waitForInitialCreate(WAIT_SECONDS, TimeUnit.SECONDS), "node not created");
                checkEqual(path, node.getActualPath(), "actual path");
                Stat st = new Stat();
                syncPath(other, path);
                checkEqual("v1", str(other.getData().storingStatIn(st).forPath(path)), "data seen by another session");
                checkEqual(session, st.getEphemeralOwner(), "ephemeral owner");

                other.delete().forPath(path);
                waitFor("the node to be recreated", () -> exists(other, path));
                Stat again = other.checkExists().forPath(path);
                check(again.getCzxid() > st.getCzxid(), "recreated node has czxid %d, not after %d", again.getCzxid(), st.getCzxid());
                checkEqual(session, again.getEphemeralOwner(), "ephemeral owner of the recreated node");

                node.setData(bytes("v2"));
                waitFor("the new data", () -> {
                    try {
                        return str(other.getData().forPath(path)).equals("v2");
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
            }
            syncPath(other, "/curator/pn");
            check(!exists(other, path), "node still exists after close");
        }
    }

    /**
     * TTL nodes (CreateMode.PERSISTENT_WITH_TTL and its sequential form,
     * directly and in a transaction): clients see no ephemeral owner, a childless
     * node expires after its TTL, and a node with children does not until
     * they are gone.
     */
    static void ttl(String connect) throws Exception {
        String root = "/curator/ttl";
        long ttlMs = 300;
        try (CuratorFramework c = connect(connect)) {
            c.create().creatingParentsIfNeeded().forPath(root);
            String lone = c.create().withTtl(ttlMs).withMode(CreateMode.PERSISTENT_WITH_TTL).forPath(root + "/lone", bytes("x"));
            checkEqual(root + "/lone", lone, "created path");
            String seq = c.create().withTtl(ttlMs).withMode(CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL).forPath(root + "/seq-");
            checkEqual(root + "/seq-0000000001", seq, "sequential TTL path");
            List<CuratorTransactionResult> tx = c.transaction().forOperations(List.of(
                    c.transactionOp().create().withTtl(ttlMs).withMode(CreateMode.PERSISTENT_WITH_TTL).forPath(root + "/parent"),
                    c.transactionOp().create().forPath(root + "/parent/child")));
            checkEqual(2, tx.size(), "results of the TTL transaction");

            // ZooKeeper keeps the TTL in the node's ephemeralOwner but shows
            // clients 0 there, as for any node that no session owns.
            for (String p : List.of(lone, seq, root + "/parent", root + "/parent/child")) {
                Stat st = c.checkExists().forPath(p);
                check(st != null, "%s missing right after create", p);
                checkEqual(0L, st.getEphemeralOwner(), "ephemeralOwner of " + p);
            }

            waitFor(lone + " to expire", () -> !exists(c, lone));
            waitFor(seq + " to expire", () -> !exists(c, seq));
            check(exists(c, root + "/parent"), "a TTL node with a child expired");
            c.delete().forPath(root + "/parent/child");
            waitFor(root + "/parent to expire once childless", () -> !exists(c, root + "/parent"));
            check(exists(c, root), "the plain parent of the TTL nodes is gone");
        }
    }

    /**
     * A lock holder whose session ends (another handle attaches to the
     * session with its id and password and closes it, as a server ends an
     * expired session) loses the lock to the next in line; Curator reports
     * the loss and continues on a new session.
     */
    static void sessionLoss(String connect) throws Exception {
        String path = "/curator/sessionloss";
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (CuratorFramework a = connect(connect); CuratorFramework b = connect(connect)) {
            BlockingQueue<ConnectionState> states = new LinkedBlockingQueue<>();
            a.getConnectionStateListenable().addListener((client, state) -> states.add(state));
            InterProcessMutex held = new InterProcessMutex(a, path);
            InterProcessMutex waiting = new InterProcessMutex(b, path);
            check(held.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "first acquire");
            Future<Boolean> acquired = pool.submit(() -> waiting.acquire(WAIT_SECONDS, TimeUnit.SECONDS));
            waitFor("the second contender to queue", () -> {
                try {
                    return waiting.getParticipantNodes().size() == 2;
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });

            ZooKeeper zk = a.getZookeeperClient().getZooKeeper();
            long session = zk.getSessionId();
            CountDownLatch attached = new CountDownLatch(1);
            ZooKeeper killer = new ZooKeeper(connect, 10_000, e -> {
                if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    attached.countDown();
                }
            }, session, zk.getSessionPasswd());
            try {
                check(attached.await(WAIT_SECONDS, TimeUnit.SECONDS), "no connection with the session's id and password");
                checkEqual(session, killer.getSessionId(), "session of the second handle");
            } finally {
                killer.close();
            }

            check(acquired.get(WAIT_SECONDS, TimeUnit.SECONDS), "the second contender did not get the lock after the holder's session ended");
            List<ConnectionState> seen = new ArrayList<>();
            while (seen.isEmpty() || seen.get(seen.size() - 1) != ConnectionState.RECONNECTED) {
                seen.add(next(states, "connection state after the session ended (so far " + seen + ")"));
            }
            check(seen.contains(ConnectionState.LOST), "connection states %s do not report the lost session", seen);
            long now = a.getZookeeperClient().getZooKeeper().getSessionId();
            check(now != session, "still on session 0x%x", session);
            checkEqual(path + "-after", a.create().withMode(CreateMode.EPHEMERAL).forPath(path + "-after"), "create on the new session");
            checkEqual(now, a.checkExists().forPath(path + "-after").getEphemeralOwner(), "owner of an ephemeral made on the new session");
            // A mutex is released by the thread that holds it.
            pool.submit(() -> {
                waiting.release();
                return null;
            }).get(WAIT_SECONDS, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Pipelined background operations on one session, as Curator's
     * asynchronous users send them: a dozen requests go out without
     * waiting (reads that set watches, writes that fire them, a write with
     * a wrong version, sync, a transaction, delete), and every callback and
     * watch event is recorded in the order the client delivers them: its
     * event thread takes replies and events in the order they arrive on
     * the connection. Every round must give ZooKeeper's record: each read
     * shows the session's earlier writes and none of its later ones, and
     * each event comes just before the reply of the write that fired it.
     */
    static void background(String connect) throws Exception {
        String root = "/curator/background";
        int rounds = 100;
        try (CuratorFramework c = connect(connect)) {
            c.create().creatingParentsIfNeeded().forPath(root);
            for (int round = 0; round < rounds; round++) {
                String parent = root + "/r" + round;
                String q = parent + "/q";
                c.create().forPath(parent);
                List<String> record = new CopyOnWriteArrayList<>();
                CountDownLatch replies = new CountDownLatch(12);
                BackgroundCallback cb = (client, e) -> {
                    record.add(describe(e));
                    replies.countDown();
                };
                CuratorWatcher watcher = (WatchedEvent e) -> record.add("event " + e.getType());
                c.checkExists().usingWatcher(watcher).inBackground(cb).forPath(q);
                c.create().inBackground(cb).forPath(q, bytes("x"));
                c.getData().usingWatcher(watcher).inBackground(cb).forPath(q);
                c.getChildren().usingWatcher(watcher).inBackground(cb).forPath(parent);
                c.setData().inBackground(cb).forPath(q, bytes("y"));
                c.setData().withVersion(0).inBackground(cb).forPath(q, bytes("z"));
                c.checkExists().inBackground(cb).forPath(q);
                c.sync().inBackground(cb).forPath(q);
                c.transaction().inBackground(cb).forOperations(List.of(
                        c.transactionOp().check().withVersion(1).forPath(q),
                        c.transactionOp().setData().forPath(q, bytes("t"))));
                c.getData().inBackground(cb).forPath(q);
                c.delete().inBackground(cb).forPath(q);
                c.checkExists().inBackground(cb).forPath(q);
                check(replies.await(WAIT_SECONDS, TimeUnit.SECONDS), "round %d: replies missing; got %s", round, record);
                c.delete().forPath(parent);
                checkEqual(List.of(
                        "EXISTS " + q + " NONODE",
                        "event NodeCreated",
                        "CREATE " + q + " OK",
                        "GET_DATA " + q + " OK x v0",
                        "CHILDREN " + parent + " OK [q]",
                        "event NodeDataChanged",
                        "SET_DATA " + q + " OK v1",
                        "SET_DATA " + q + " BADVERSION",
                        "EXISTS " + q + " OK v1",
                        "SYNC " + q + " OK",
                        "TRANSACTION null OK",
                        "GET_DATA " + q + " OK t v2",
                        "event NodeChildrenChanged",
                        "DELETE " + q + " OK",
                        "EXISTS " + q + " NONODE"), record, "round " + round + ": replies and events in the order delivered");
            }
            c.delete().forPath(root);
        }
    }

    /** One background callback as a short line: operation, path, result. */
    static String describe(CuratorEvent e) {
        String line = e.getType() + " " + e.getPath() + " " + KeeperException.Code.get(e.getResultCode());
        if (e.getResultCode() != 0) {
            return line;
        }
        switch (e.getType()) {
            case GET_DATA:
                return line + " " + str(e.getData()) + " v" + e.getStat().getVersion();
            case EXISTS:
            case SET_DATA:
                return line + " v" + e.getStat().getVersion();
            case CHILDREN:
                List<String> children = new ArrayList<>(e.getChildren());
                children.sort(null);
                return line + " " + children;
            default:
                return line;
        }
    }
}
