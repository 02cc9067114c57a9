// A ZooKeeper Java client configured by the test's system properties: TLS
// (zookeeper.client.secure, zookeeper.clientCnxnSocket, zookeeper.ssl.*) or SASL (a JAAS
// Client section). Connects, creates a
// node under the given path, reads it back, asks whoAmI, and prints one line for each:
//   CONNECTED | NOT CONNECTED <state>
//   CREATE <path> | CREATE ERROR <code>
//   WHOAMI scheme:id ...
// then exits 0 (the test judges the lines). A third argument: seconds to wait for the
// connection (15 unless given), for a test that expects a refusal.
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ClientInfo;

public class TlsClient {
  public static void main(String[] args) throws Exception {
    String hosts = args[0];
    String path = args[1];
    int waitSeconds = args.length > 2 ? Integer.parseInt(args[2]) : 15;
    CountDownLatch connected = new CountDownLatch(1);
    final String[] last = {"none"};
    ZooKeeper zk = new ZooKeeper(hosts, 10000, e -> {
      last[0] = e.getState().toString();
      if (e.getState() == org.apache.zookeeper.Watcher.Event.KeeperState.SyncConnected) connected.countDown();
    });
    if (!connected.await(waitSeconds, TimeUnit.SECONDS)) {
      System.out.println("NOT CONNECTED " + last[0]);
      zk.close();
      return;
    }
    System.out.println("CONNECTED");
    try {
      String made = zk.create(path, "tls".getBytes(), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT_SEQUENTIAL);
      byte[] data = zk.getData(made, false, null);
      System.out.println("CREATE " + new String(data));
    } catch (KeeperException e) {
      System.out.println("CREATE ERROR " + e.code());
    }
    StringBuilder ids = new StringBuilder("WHOAMI");
    List<ClientInfo> infos = zk.whoAmI();
    for (ClientInfo i : infos) ids.append(' ').append(i.getAuthScheme()).append(':').append(i.getUser());
    System.out.println(ids);
    zk.close();
  }
}
