import java.net.InetAddress;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;

/**
 * The host's network interfaces through java.net.NetworkInterface (the
 * JDK asks SIOCGIFCONF, SIOCGIFFLAGS, SIOCGIFINDEX, SIOCGIFNETMASK,
 * SIOCGIFBRDADDR, SIOCGIFHWADDR, SIOCGIFMTU and reads /proc/net/if_inet6):
 * names, indexes, flags, MTUs, hardware and IPv4/IPv6 addresses, sorted.
 * A partition must print exactly what the host prints.
 */
public class Ifaces {
    public static void main(String[] args) throws Exception {
        List<NetworkInterface> all = Collections.list(NetworkInterface.getNetworkInterfaces());
        all.sort(Comparator.comparing(NetworkInterface::getName));
        for (NetworkInterface n : all) {
            byte[] mac = n.getHardwareAddress();
            StringBuilder m = new StringBuilder();
            if (mac != null) {
                for (byte b : mac) {
                    m.append(String.format("%02x", b));
                }
            }
            System.out.println(n.getName() + " index " + n.getIndex() + " up " + n.isUp()
                    + " loopback " + n.isLoopback() + " p2p " + n.isPointToPoint()
                    + " multicast " + n.supportsMulticast() + " virtual " + n.isVirtual()
                    + " mtu " + n.getMTU() + " mac " + (mac == null ? "null" : m));
            List<String> addrs = new ArrayList<>();
            for (InterfaceAddress ia : n.getInterfaceAddresses()) {
                addrs.add(ia.getAddress().getHostAddress() + "/" + ia.getNetworkPrefixLength()
                        + " broadcast " + ia.getBroadcast());
            }
            Collections.sort(addrs);
            for (String s : addrs) {
                System.out.println("  " + s);
            }
        }
        System.out.println("by name lo: " + NetworkInterface.getByName("lo").getName());
        System.out.println("by 127.0.0.1: "
                + NetworkInterface.getByInetAddress(InetAddress.getByName("127.0.0.1")).getName());
        System.out.println("by index 1: " + NetworkInterface.getByIndex(1).getName());
        System.out.println("by name nope0: " + NetworkInterface.getByName("nope0"));
    }
}
