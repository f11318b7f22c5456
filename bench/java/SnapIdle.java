// An idle JVM for `astraea-bench snapshot`'s memory rows: it snapshots its
// partition when run with `snap` (reading /dev/astraea-snapshot), says
// "ready", and sleeps until killed. On the host it only says "ready".
public class SnapIdle {
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("snap")) {
            try (var in = new java.io.FileInputStream("/dev/astraea-snapshot")) {
                in.readAllBytes();
            }
        }
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
