import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * One participant in leader elections, run with Apache Curator's LeaderLatch
 * and LeaderSelector and driven line by line from standard input, so that a
 * test can interleave it with another implementation on the same path. The
 * only argument is the connect string. Every command is answered with one
 * line on standard output, "error ..." when it fails:
 *
 * <pre>
 * latch PATH ID            start a LeaderLatch                      ok
 * await                    wait for the latch to lead               leader | timeout
 * leader latch|selector    hasLeadership                            true | false
 * participants latch|selector   getParticipants, in order,
 *                          the leader marked with *                 id*,id,...
 * close                    close the latch                          ok
 * select PATH ID           start a LeaderSelector whose
 *                          takeLeadership waits for release         ok
 * selected                 wait for takeLeadership to begin         selected | timeout
 * release                  let takeLeadership return                ok
 * requeue                  queue the selector again                 ok
 * quit                     close everything and exit
 * </pre>
 */
public class ElectionPeer {
    /** Bounds every wait, so that a lost wakeup answers "timeout". */
    static final long WAIT_SECONDS = 15;

    static LeaderLatch latch;
    static LeaderSelector selector;
    static final Semaphore selected = new Semaphore(0);
    static final Semaphore releases = new Semaphore(0);

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .sessionTimeoutMs(10_000)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        client.start();
        if (!client.blockUntilConnected((int) WAIT_SECONDS, TimeUnit.SECONDS)) {
            System.out.println("error not connected");
            System.exit(1);
        }
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
        if (latch != null && latch.getState() == LeaderLatch.State.STARTED) {
            latch.close();
        }
        if (selector != null) {
            selector.close();
        }
        client.close();
        System.exit(0);
    }

    static String run(CuratorFramework client, String[] words) throws Exception {
        switch (words[0]) {
            case "latch":
                latch = new LeaderLatch(client, words[1], words[2]);
                latch.start();
                return "ok";
            case "await":
                return latch.await(WAIT_SECONDS, TimeUnit.SECONDS) ? "leader" : "timeout";
            case "leader":
                return String.valueOf(words[1].equals("latch") ? latch.hasLeadership() : selector.hasLeadership());
            case "participants":
                return describe(words[1].equals("latch") ? latch.getParticipants() : selector.getParticipants());
            case "close":
                latch.close();
                return "ok";
            case "select":
                selector = new LeaderSelector(client, words[1], new LeaderSelectorListenerAdapter() {
                    @Override
                    public void takeLeadership(CuratorFramework c) throws Exception {
                        selected.release();
                        releases.acquire();
                    }
                });
                selector.setId(words[2]);
                selector.start();
                return "ok";
            case "selected":
                return selected.tryAcquire(WAIT_SECONDS, TimeUnit.SECONDS) ? "selected" : "timeout";
            case "release":
                releases.release();
                return "ok";
            case "requeue":
                selector.requeue();
                return "ok";
            default:
                return "error unknown command " + words[0];
        }
    }

    static String describe(Collection<Participant> participants) {
        List<String> ids = new ArrayList<>();
        for (Participant p : participants) {
            ids.add(p.getId() + (p.isLeader() ? "*" : ""));
        }
        return String.join(",", ids);
    }
}
