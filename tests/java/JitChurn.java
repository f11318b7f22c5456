import java.util.HashMap;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * Work for the JIT compilers (C1 and C2), the garbage collector and several
 * threads at once, with one deterministic line of output: the stress test
 * runs it in many partitions at once and compares every line with the host's.
 */
public class JitChurn {
    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        long sum = IntStream.range(0, 4).parallel().mapToLong(t -> {
            long s = 0;
            for (int i = 0; i < 1_500_000; i++) {
                s += Integer.toString(i * n + t).hashCode() % 7;
            }
            return s;
        }).sum();
        Map<String, Integer> m = new HashMap<>();
        for (int i = 0; i < 200_000; i++) {
            m.merge("k" + (i % 1000), i, Integer::sum);
        }
        double d = 0;
        for (int i = 1; i < 2_000_000; i++) {
            d += Math.sqrt(i) / (i + n);
        }
        System.out.printf("jitchurn %d %d %d %.6f%n", n, sum, m.get("k7"), d);
    }
}
