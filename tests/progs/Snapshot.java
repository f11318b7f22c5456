// A JVM that snapshots its partition (reading /dev/astraea-snapshot) and
// then goes on: classes it never loaded before, lambdas, a file, threads
// and the clocks, in the partition it ran in and in every one restored
// from the snapshot. tests/tests/snapshot.rs runs it.
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.Executors;
import java.util.stream.IntStream;

public class Snapshot {
    public static void main(String[] args) throws Exception {
        long mono0 = System.nanoTime();
        long wall0 = System.currentTimeMillis();
        System.out.println("before: " + IntStream.range(0, 1000).sum());
        // "taken", or "restored" and the restoring command's arguments.
        String said = Files.readString(Path.of("/dev/astraea-snapshot")).lines().findFirst().orElse("");
        System.out.println("snapshot: " + said);
        var map = new ConcurrentSkipListMap<String, Integer>();
        for (int i = 0; i < 100; i++) map.put("k" + i, i);
        System.out.println("classes: " + map.size() + " " + map.firstKey() + " " + map.lastKey());
        var pool = Executors.newFixedThreadPool(2);
        long sum = pool.submit(() -> IntStream.range(0, 100_000).asLongStream().sum()).get();
        pool.shutdown();
        System.out.println("threads: " + sum);
        System.out.println("file: " + Files.readString(Path.of(args[0])).trim());
        System.out.println("clocks: " + (System.nanoTime() > mono0) + " " + (System.currentTimeMillis() >= wall0));
        System.exit(said.equals("restored") ? 42 : 0);
    }
}
