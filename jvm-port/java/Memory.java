import java.util.ArrayList;
import java.util.List;

/**
 * What the JVM learns about the machine: Runtime.availableProcessors on
 * stdout, Runtime.maxMemory (MiB) on stderr (it depends on the machine's or
 * partition's memory). With the argument `oom` it allocates until
 * OutOfMemoryError, catches it and exits normally.
 *
 * Usage: java Memory [oom]   (run oom with a small heap, e.g. -Xmx64m)
 */
public class Memory {
    public static void main(String[] args) {
        Runtime rt = Runtime.getRuntime();
        if (args.length > 0 && args[0].equals("oom")) {
            List<byte[]> hoard = new ArrayList<>();
            long mib = 0;
            try {
                while (true) {
                    hoard.add(new byte[1 << 20]);
                    mib++;
                }
            } catch (OutOfMemoryError e) {
                int held = hoard.size();
                hoard = null;
                System.out.println("OOM caught");
                System.err.println("Memory: OutOfMemoryError after " + mib + " MiB (" + held + " arrays): " + e.getMessage());
            }
            // The heap is usable again.
            byte[] again = new byte[4 << 20];
            System.out.println("allocated again=" + again.length);
            return;
        }
        System.err.println("Memory: maxMemory=" + (rt.maxMemory() >> 20) + " MiB totalMemory="
                + (rt.totalMemory() >> 20) + " MiB");
        System.out.println("processors=" + rt.availableProcessors());
    }
}
