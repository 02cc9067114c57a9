// A Curator CuratorCache on Warden. Curator 5 builds it on one persistent recursive watch
// (addWatch): the cache must see every create, change and delete below its root without
// setting a watch again.
//   java CacheWatcher CONNECT ROOT   prints one line per cache event, then DONE
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CacheWatcher {
  public static void main(String[] args) throws Exception {
    CuratorFramework client = CuratorFrameworkFactory.newClient(
        args[0], 10000, 10000, new ExponentialBackoffRetry(100, 10));
    client.start();
    if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
      System.out.println("NOT-CONNECTED");
      System.exit(3);
    }
    String root = args[1];
    client.create().creatingParentsIfNeeded().forPath(root, "r".getBytes());
    BlockingQueue<String> events = new LinkedBlockingQueue<>();
    CountDownLatch initialized = new CountDownLatch(1);
    CuratorCache cache = CuratorCache.build(client, root);
    cache.listenable().addListener(CuratorCacheListener.builder()
        .forCreates(n -> events.add("CREATED " + n.getPath() + " " + new String(n.getData())))
        .forChanges((before, after) -> events.add("CHANGED " + after.getPath() + " " + new String(after.getData())))
        .forDeletes(n -> events.add("DELETED " + n.getPath()))
        .forInitialized(initialized::countDown)
        .build());
    cache.start();
    if (!initialized.await(20, TimeUnit.SECONDS)) {
      System.out.println("NOT-INITIALIZED");
      System.exit(4);
    }
    events.clear();  // the root's own CREATED from the initial load
    String a = root + "/a", b = a + "/b";
    client.create().forPath(a, "1".getBytes());
    expect(events);
    client.setData().forPath(a, "2".getBytes());
    expect(events);
    client.create().forPath(b, "3".getBytes());
    expect(events);
    client.setData().forPath(b, "4".getBytes());
    expect(events);
    client.delete().forPath(b);
    expect(events);
    client.delete().forPath(a);
    expect(events);
    System.out.println("CACHED " + cache.size());
    System.out.println("DONE");
    cache.close();
    client.close();
  }

  // Waits for the next event and prints it, or prints TIMEOUT.
  static void expect(BlockingQueue<String> events) throws InterruptedException {
    String e = events.poll(10, TimeUnit.SECONDS);
    System.out.println(e == null ? "TIMEOUT" : e);
    System.out.flush();
  }
}
