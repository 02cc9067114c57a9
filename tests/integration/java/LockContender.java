// One process contending for a Curator InterProcessMutex on Warden.
//   java LockContender CONNECT LOCKPATH ROUNDS MARKER   contend ROUNDS times; the MARKER file
//       is created exclusively while the lock is held, so two holders at once fail loudly
//   java LockContender CONNECT LOCKPATH hold            take the lock, say HOLDING, wait forever
//   java LockContender CONNECT LOCKPATH wait            say WAITING, take the lock, say ACQUIRED
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class LockContender {
  public static void main(String[] args) throws Exception {
    CuratorFramework client = CuratorFrameworkFactory.newClient(
        args[0], 4000, 10000, new ExponentialBackoffRetry(100, 10));
    client.start();
    if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
      System.out.println("NOT-CONNECTED");
      System.exit(3);
    }
    InterProcessMutex mutex = new InterProcessMutex(client, args[1]);
    String mode = args[2];
    if (mode.equals("hold")) {
      mutex.acquire();
      System.out.println("HOLDING");
      System.out.flush();
      Thread.sleep(Long.MAX_VALUE);
    } else if (mode.equals("wait")) {
      System.out.println("WAITING");
      System.out.flush();
      long start = System.nanoTime();
      if (mutex.acquire(60, TimeUnit.SECONDS)) {
        System.out.println("ACQUIRED " + (System.nanoTime() - start) / 1000000);
        mutex.release();
      } else {
        System.out.println("TIMED-OUT");
      }
    } else {
      int rounds = Integer.parseInt(mode);
      Path marker = Path.of(args[3]);
      int violations = 0;
      for (int i = 0; i < rounds; i++) {
        mutex.acquire();
        try {
          try {
            Files.createFile(marker);
          } catch (FileAlreadyExistsException e) {
            violations++;
          }
          Thread.sleep(5);
          Files.deleteIfExists(marker);
        } finally {
          mutex.release();
        }
      }
      System.out.println("DONE " + rounds + " VIOLATIONS " + violations);
    }
    client.close();
  }
}
