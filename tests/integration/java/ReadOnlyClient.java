// ZooKeeper's Java client with canBeReadOnly: connects to the connect string given, prints one
// line at each step for the test to judge, and exits 0:
//   RO | NOT RO <state>             connected read-only within 30 s
//   READ <data of PATH>             a read in read-only mode
//   WRITE <KeeperException code>    a create in read-only mode (NOTREADONLY expected)
//   WAITING                         the test may bring the quorum back now
//   RW | NOT RW <state>             the client found a read-write server by itself within 90 s
//   WRITE OK | WRITE <code>         a create once read-write
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public class ReadOnlyClient {
  public static void main(String[] args) throws Exception {
    String hosts = args[0];
    String path = args[1];
    CountDownLatch readOnly = new CountDownLatch(1);
    CountDownLatch readWrite = new CountDownLatch(1);
    final String[] last = {"none"};
    ZooKeeper zk = new ZooKeeper(hosts, 10000, e -> {
      last[0] = e.getState().toString();
      if (e.getState() == KeeperState.ConnectedReadOnly) readOnly.countDown();
      if (e.getState() == KeeperState.SyncConnected) readWrite.countDown();
    }, true);
    if (!readOnly.await(30, TimeUnit.SECONDS)) {
      System.out.println("NOT RO " + last[0]);
      zk.close();
      return;
    }
    System.out.println("RO");
    System.out.println("READ " + new String(zk.getData(path, false, null)));
    try {
      zk.create(path + "-java", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
      System.out.println("WRITE OK");
    } catch (KeeperException e) {
      System.out.println("WRITE " + e.code());
    }
    System.out.println("WAITING");
    System.out.flush();
    if (!readWrite.await(90, TimeUnit.SECONDS)) {
      System.out.println("NOT RW " + last[0]);
      zk.close();
      return;
    }
    System.out.println("RW");
    try {
      zk.create(path + "-java", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
      System.out.println("WRITE OK");
    } catch (KeeperException e) {
      System.out.println("WRITE " + e.code());
    }
    zk.close();
  }
}
