import java.io.BufferedReader;
import java.io.InputStreamReader;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;

/**
 * Prints its arguments, one a line, then answers every line of standard
 * input with "echo " and the line, until "quit". With the argument
 * "curator" it first builds (without starting) a Curator client, to show
 * that Curator is on the class path.
 */
public class Echo {
    public static void main(String[] args) throws Exception {
        for (String arg : args) {
            if (arg.equals("curator")) {
                CuratorFramework client = CuratorFrameworkFactory.newClient("127.0.0.1:1", new RetryOneTime(1));
                client.close();
            }
            System.out.println(arg);
        }
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null && !line.equals("quit"); ) {
            System.out.println("echo " + line);
            System.out.flush();
        }
    }
}
