import java.io.FileInputStream;
import java.io.IOException;

/**
 * The Libra paper's Figure 5: read throughput of one file with
 * FileInputStream.read(byte[]) for buffer sizes from 64 B to 64 KiB.
 *
 * <pre>java ReadBench FILE [MAX_CALLS]</pre>
 *
 * First one unmeasured pass over the whole file with 64 KiB reads (it warms
 * whatever cache there is); then, for each size, a fresh stream from the
 * start of the file read until its end or MAX_CALLS reads (default:
 * unlimited), timed as a whole. Prints "size=BYTES calls=N bytes=B
 * ms=T mbps=X" per size (MB = 10^6 bytes).
 */
public class ReadBench {
    static final int[] SIZES = {64, 256, 1024, 4096, 16384, 65536};

    public static void main(String[] args) throws IOException {
        String file = args[0];
        long maxCalls = args.length > 1 ? Long.parseLong(args[1]) : Long.MAX_VALUE;
        long sink = pass(file, 65536, Long.MAX_VALUE)[1];
        for (int size : SIZES) {
            long t0 = System.nanoTime();
            long[] r = pass(file, size, maxCalls);
            long ns = System.nanoTime() - t0;
            sink += r[1];
            System.out.printf("size=%d calls=%d bytes=%d ms=%.1f mbps=%.1f%n",
                    size, r[0], r[1], ns / 1e6, r[1] * 1e3 / ns);
        }
        if (sink == 42) {
            System.out.println();
        }
    }

    /** Reads `file` with `size`-byte reads: {calls, bytes}. */
    static long[] pass(String file, int size, long maxCalls) throws IOException {
        byte[] buf = new byte[size];
        long calls = 0, bytes = 0;
        try (FileInputStream in = new FileInputStream(file)) {
            while (calls < maxCalls) {
                int n = in.read(buf);
                calls++;
                if (n < 0) {
                    break;
                }
                bytes += n;
            }
        }
        return new long[] {calls, bytes};
    }
}
