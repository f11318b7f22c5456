// Run by `astraea run --warm` in tests/tests/snapshot.rs: the main class
// and arguments of each run, whether it started from a snapshot or not.
public class WarmGreet {
    public static void main(String[] args) {
        System.out.println("greet: " + String.join(" ", args));
        if (args.length > 0 && args[0].equals("exit")) {
            System.exit(Integer.parseInt(args[1]));
        }
        if (args.length > 0 && args[0].equals("nofile")) {
            // The JVM's view of RLIMIT_NOFILE (it raises the soft limit to
            // the hard one at start).
            var os = (com.sun.management.UnixOperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean();
            System.out.println("nofile " + os.getMaxFileDescriptorCount());
        }
    }
}
