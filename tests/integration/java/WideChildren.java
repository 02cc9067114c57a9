// ZooKeeper's Java client (its jute.maxbuffer bounds the replies it takes): one getChildren of
// the path given, printed as one line, then exits 0:
//   CHILDREN <count>     the list came whole
//   ERROR <code>         the KeeperException's code (CONNECTIONLOSS for a reply it refused)
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooKeeper;

public class WideChildren {
  public static void main(String[] args) throws Exception {
    CountDownLatch connected = new CountDownLatch(1);
    ZooKeeper zk = new ZooKeeper(args[0], 10000, e -> {
      if (e.getState() == KeeperState.SyncConnected) connected.countDown();
    });
    if (!connected.await(30, TimeUnit.SECONDS)) {
      System.out.println("ERROR NOT CONNECTED");
    } else {
      try {
        System.out.println("CHILDREN " + zk.getChildren(args[1], false).size());
      } catch (KeeperException e) {
        System.out.println("ERROR " + e.code());
      }
    }
    System.out.flush();
    zk.close();
  }
}
