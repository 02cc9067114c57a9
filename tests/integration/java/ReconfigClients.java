// ZooKeeper's Java client (ZooKeeperAdmin) and Curator reconfigure an ensemble: each, as the
// super user, reads the configuration, removes server LEAVE and adds it back with JOIN (a
// server.N line), printing one line a step for the test to judge:
//   <CLIENT> CONFIG <last line>       getConfig's version line
//   <CLIENT> REMOVED <ids>            the members after the removal, comma-separated
//   <CLIENT> ADDED <ids>              and after the addition
//   <CLIENT> ERROR <what>             a step failed
// Arguments: HOSTS PASSWORD LEAVE JOIN
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.admin.ZooKeeperAdmin;
import org.apache.zookeeper.data.Stat;

public class ReconfigClients {
  static String ids(byte[] config) {
    List<String> out = new ArrayList<>();
    for (String line : new String(config, StandardCharsets.UTF_8).split("\n"))
      if (line.startsWith("server.")) out.add(line.substring(7, line.indexOf('=')));
    return String.join(",", out);
  }

  static String last(byte[] config) {
    String[] lines = new String(config, StandardCharsets.UTF_8).split("\n");
    return lines[lines.length - 1];
  }

  public static void main(String[] args) throws Exception {
    String hosts = args[0], password = args[1], leave = args[2], join = args[3];
    byte[] auth = ("super:" + password).getBytes(StandardCharsets.UTF_8);
    CountDownLatch connected = new CountDownLatch(1);
    ZooKeeperAdmin admin = new ZooKeeperAdmin(hosts, 15000, e -> {
      if (e.getState() == KeeperState.SyncConnected) connected.countDown();
    });
    try {
      if (!connected.await(30, TimeUnit.SECONDS)) throw new IllegalStateException("no session");
      admin.addAuthInfo("digest", auth);
      System.out.println("JAVA CONFIG " + last(admin.getConfig(false, new Stat())));
      System.out.println("JAVA REMOVED " + ids(admin.reconfigure(null, leave, null, -1, new Stat())));
      System.out.println("JAVA ADDED " + ids(admin.reconfigure(join, null, null, -1, new Stat())));
    } catch (Exception e) {
      System.out.println("JAVA ERROR " + e);
    } finally {
      admin.close();
    }
    CuratorFramework curator = CuratorFrameworkFactory.builder().connectString(hosts)
        .retryPolicy(new RetryNTimes(20, 500)).authorization("digest", auth).build();
    curator.start();
    try {
      if (!curator.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("no session");
      System.out.println("CURATOR CONFIG " + last(curator.getConfig().forEnsemble()));
      System.out.println("CURATOR REMOVED " + ids(curator.reconfig().leaving(leave).forEnsemble()));
      System.out.println("CURATOR ADDED " + ids(curator.reconfig().joining(join).forEnsemble()));
    } catch (Exception e) {
      System.out.println("CURATOR ERROR " + e);
    } finally {
      curator.close();
    }
  }
}
