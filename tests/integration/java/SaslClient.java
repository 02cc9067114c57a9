// A ZooKeeper Java client configured for SASL (a JAAS "Client" section, given by the test),
// connecting to a server that offers none. Prints each connection state it is told of, one per
// line, and stops at the first AuthFailed or after the given number of seconds.
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

public class SaslClient {
  public static void main(String[] args) throws Exception {
    String hosts = args[0];
    int seconds = Integer.parseInt(args[1]);
    CountDownLatch failed = new CountDownLatch(1);
    long start = System.nanoTime();
    Watcher w = (WatchedEvent e) -> {
      if (e.getType() != Watcher.Event.EventType.None) return;
      long ms = (System.nanoTime() - start) / 1000000;
      System.out.println("STATE " + e.getState() + " " + ms);
      System.out.flush();
      if (e.getState() == Watcher.Event.KeeperState.AuthFailed) failed.countDown();
    };
    ZooKeeper zk = new ZooKeeper(hosts, 10000, w);
    boolean done = failed.await(seconds, TimeUnit.SECONDS);
    zk.close();
    System.out.println(done ? "DONE AuthFailed" : "DONE no AuthFailed");
  }
}
