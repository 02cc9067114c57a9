// Curator over whatever the test's system properties configure (TLS: zookeeper.client.secure
// and the zookeeper.ssl.* keys): creates a node, takes and releases an InterProcessMutex on it,
// and prints one line per step ("CREATED path", "LOCKED", "RELEASED") or "FAILED reason".
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

public class CuratorTls {
  public static void main(String[] args) throws Exception {
    CuratorFramework c = CuratorFrameworkFactory.builder()
        .connectString(args[0]).retryPolicy(new RetryNTimes(1, 200))
        .connectionTimeoutMs(8000).sessionTimeoutMs(10000).build();
    c.start();
    try {
      if (!c.blockUntilConnected(15, TimeUnit.SECONDS)) {
        System.out.println("FAILED not connected");
        return;
      }
      String path = c.create().creatingParentsIfNeeded().forPath("/curator-tls/node", "x".getBytes());
      System.out.println("CREATED " + path);
      InterProcessMutex m = new InterProcessMutex(c, "/curator-tls/lock");
      if (!m.acquire(10, TimeUnit.SECONDS)) {
        System.out.println("FAILED lock");
        return;
      }
      System.out.println("LOCKED");
      m.release();
      System.out.println("RELEASED");
    } catch (Exception e) {
      System.out.println("FAILED " + e);
    } finally {
      c.close();
    }
  }
}
