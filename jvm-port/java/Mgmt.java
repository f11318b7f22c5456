import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.RuntimeMXBean;
import java.net.InetAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What monitoring and frameworks ask of the platform: ProcessHandle.Info
 * (/proc/self/cmdline, exe), the OperatingSystemMXBean (/proc/self/fd,
 * /proc/meminfo, /proc/stat, /proc/loadavg), the RuntimeMXBean, the local
 * host's name (uname, /etc/hosts), a FileStore (/proc/mounts, statfs), and
 * Unix-domain socket channels. Prints only facts that hold on any Linux
 * host, so a partition must print exactly what the host prints.
 */
public class Mgmt {
    public static void main(String[] args) throws Exception {
        ProcessHandle.Info i = ProcessHandle.current().info();
        System.out.println("command is java: " + i.command().map(c -> c.endsWith("/java")).orElse(false));
        System.out.println("last argument: " + i.arguments().map(a -> a[a.length - 1]).orElse("none"));
        System.out.println("command line has Mgmt: " + i.commandLine().map(c -> c.contains("Mgmt")).orElse(false));
        System.out.println("start, cpu, user: " + i.startInstant().isPresent() + " "
                + i.totalCpuDuration().isPresent() + " " + i.user().isPresent());
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        System.out.println("memory sizes > 0: " + (os.getTotalMemorySize() > 0 && os.getFreeMemorySize() > 0));
        System.out.println("process cpu time >= 0: " + (os.getProcessCpuTime() >= 0));
        System.out.println("load average >= 0: " + (os.getSystemLoadAverage() >= 0));
        os.getProcessCpuLoad();
        os.getCpuLoad();
        Thread.sleep(100);
        double pl = os.getProcessCpuLoad();
        double cl = os.getCpuLoad();
        System.out.println("cpu loads in [0,1]: " + (pl >= 0 && pl <= 1 && cl >= 0 && cl <= 1));
        com.sun.management.UnixOperatingSystemMXBean u = (com.sun.management.UnixOperatingSystemMXBean) os;
        long fds = u.getOpenFileDescriptorCount();
        System.out.println("open descriptors > 2: " + (fds > 2) + ", at most the limit: "
                + (fds <= u.getMaxFileDescriptorCount()));
        RuntimeMXBean rt = ManagementFactory.getRuntimeMXBean();
        System.out.println("input arguments: " + rt.getInputArguments());
        System.out.println("runtime name has pid: " + rt.getName().startsWith(ProcessHandle.current().pid() + "@"));
        System.out.println("thread cpu time >= 0: " + (ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() >= 0));
        long gcs = ManagementFactory.getGarbageCollectorMXBeans().stream().map(GarbageCollectorMXBean::getName).count();
        System.out.println("collectors: " + (gcs >= 2));
        InetAddress local = InetAddress.getLocalHost();
        System.out.println("local host resolves: " + local.getHostName().equals(
                InetAddress.getByName(local.getHostName()).getHostName()));
        FileStore store = Files.getFileStore(Path.of("."));
        System.out.println("file store: type named " + !store.type().isEmpty() + ", writable "
                + !store.isReadOnly() + ", space " + (store.getTotalSpace() > 0 && store.getUsableSpace() > 0));
        Path sock = Path.of("mgmt.sock");
        Files.deleteIfExists(sock);
        try (ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            s.bind(UnixDomainSocketAddress.of(sock));
            System.out.println("unix bound: " + s.getLocalAddress() + ", file is there: " + Files.exists(sock));
            try (SocketChannel c1 = SocketChannel.open(UnixDomainSocketAddress.of(sock));
                    SocketChannel c2 = s.accept()) {
                c1.write(ByteBuffer.wrap("über unix".getBytes(StandardCharsets.UTF_8)));
                c1.shutdownOutput();
                ByteBuffer b = ByteBuffer.allocate(64);
                while (c2.read(b) >= 0) {
                }
                System.out.println("unix got: " + new String(b.array(), 0, b.position(), StandardCharsets.UTF_8)
                        + ", remote " + c1.getRemoteAddress() + ", accepted local " + c2.getLocalAddress());
            }
        }
        Files.delete(sock);
        System.out.println("done");
    }
}
