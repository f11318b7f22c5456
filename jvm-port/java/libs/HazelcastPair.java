import com.hazelcast.config.Config;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import java.util.TreeMap;

/**
 * One member of a two-member Hazelcast 5.5 cluster joined over TCP on the
 * loopback (one member on the host, the other in a partition: their
 * sockets meet on the host's network). Each member puts its 1000 entries
 * into a partitioned map, waits for the other's, and prints the map's
 * digest, which both must agree on; then the members wait for each other
 * before leaving, so neither's data is lost mid-check.
 *
 * Arguments: CLUSTER NAME MY_PORT OTHER_PORT
 */
public class HazelcastPair {
    public static void main(String[] args) throws Exception {
        String cluster = args[0];
        String name = args[1];
        int mine = Integer.parseInt(args[2]);
        int other = Integer.parseInt(args[3]);
        Config c = new Config();
        c.setClusterName(cluster);
        c.setProperty("hazelcast.phone.home.enabled", "false");
        c.setProperty("hazelcast.logging.type", "none");
        c.getNetworkConfig().setPort(mine).setPortAutoIncrement(false);
        c.getNetworkConfig().getJoin().getMulticastConfig().setEnabled(false);
        c.getNetworkConfig().getJoin().getTcpIpConfig().setEnabled(true)
                .addMember("127.0.0.1:" + mine).addMember("127.0.0.1:" + other);
        c.getNetworkConfig().getInterfaces().setEnabled(true).addInterface("127.0.0.1");
        HazelcastInstance h = Hazelcast.newHazelcastInstance(c);
        try {
            long deadline = System.currentTimeMillis() + 120_000;
            while (h.getCluster().getMembers().size() < 2) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("the other member never joined");
                }
                Thread.sleep(50);
            }
            IMap<String, Integer> m = h.getMap("pair");
            for (int i = 0; i < 1000; i++) {
                m.put(name + "-" + i, i * i);
            }
            // The other member's "done" mark may already be there.
            while (m.keySet().stream().filter(k -> !k.startsWith("done-")).count() < 2000) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("only " + m.size() + " entries arrived");
                }
                Thread.sleep(50);
            }
            long digest = 0;
            int entries = 0;
            for (var e : new TreeMap<>(m).entrySet()) {
                if (!e.getKey().startsWith("done-")) {
                    digest = digest * 31 + e.getKey().hashCode() * 17L + e.getValue();
                    entries++;
                }
            }
            System.out.println("members 2, entries " + entries + ", digest " + Long.toHexString(digest));
            // Both have read everything before either leaves.
            m.put("done-" + name, 1);
            while (!m.containsKey("done-host") || !m.containsKey("done-partition")) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("the other member did not finish");
                }
                Thread.sleep(50);
            }
        } finally {
            h.shutdown();
        }
    }
}
