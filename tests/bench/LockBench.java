// Lock hand-off, Curator's InterProcessMutex: the same measurement as warden-lockbench.
//   java LockBench HOSTS PATH CONTENDERS SECONDS
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class LockBench {
  public static void main(String[] args) throws Exception {
    String hosts = args[0], path = args[1];
    int n = Integer.parseInt(args[2]);
    double seconds = Double.parseDouble(args[3]);
    List<CuratorFramework> clients = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      CuratorFramework c = CuratorFrameworkFactory.newClient(hosts, 30000, 15000, new ExponentialBackoffRetry(100, 5));
      c.start();
      c.blockUntilConnected(30, TimeUnit.SECONDS);
      clients.add(c);
    }
    long end = System.nanoTime() + (long) (seconds * 1e9);
    List<long[]> holds = Collections.synchronizedList(new ArrayList<>());
    List<Thread> ts = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      final CuratorFramework c = clients.get(i);
      Thread t = new Thread(() -> {
        try {
          InterProcessMutex m = new InterProcessMutex(c, path);
          while (System.nanoTime() < end) {
            m.acquire();
            long got = System.nanoTime();
            long released = System.nanoTime();
            m.release();
            holds.add(new long[] {got, released});
          }
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      t.start();
      ts.add(t);
    }
    for (Thread t : ts) t.join();
    List<long[]> sorted = new ArrayList<>(holds);
    sorted.sort((a, b) -> Long.compare(a[0], b[0]));
    List<Double> handoff = new ArrayList<>();
    for (int i = 1; i < sorted.size(); i++) handoff.add((sorted.get(i)[0] - sorted.get(i - 1)[1]) / 1000.0);
    Collections.sort(handoff);
    double p50 = handoff.isEmpty() ? 0 : handoff.get(Math.min(handoff.size() - 1, (int) (0.5 * handoff.size())));
    double p99 = handoff.isEmpty() ? 0 : handoff.get(Math.min(handoff.size() - 1, (int) (0.99 * handoff.size())));
    System.out.printf("acquisitions=%d per_s=%.1f handoff_p50_us=%.0f handoff_p99_us=%.0f%n", sorted.size(),
        sorted.size() / seconds, p50, p99);
    for (CuratorFramework c : clients) c.close();
  }
}
