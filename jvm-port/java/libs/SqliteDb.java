import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * SQLite (xerial sqlite-jdbc: the C library through JNI) with two connections
 * to one database file in one JVM, in the rollback-journal mode, where SQLite
 * keeps the process's POSIX locks of the file itself and relies on Linux's
 * rules for them (two descriptors of one file never conflict; closing one
 * drops them all): a reader holding a shared lock while the other
 * connection writes and commits, interleaved transactions, a busy writer
 * seen as SQLITE_BUSY by the other, then WAL mode. Prints deterministic
 * lines (the host's and a partition's must be equal).
 *
 * Usage: java -cp sqlite-jdbc.jar:. SqliteDb DIR
 */
public class SqliteDb {
    static long count(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet r = s.executeQuery("select count(*), coalesce(sum(v), 0) from t")) {
            r.next();
            return r.getLong(1) * 1_000_000L + r.getLong(2);
        }
    }

    static void insert(Connection c, int from, int n) throws SQLException {
        try (PreparedStatement p = c.prepareStatement("insert into t(k, v) values (?, ?)")) {
            for (int i = from; i < from + n; i++) {
                p.setInt(1, i);
                p.setInt(2, i % 97);
                p.executeUpdate();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        Files.createDirectories(dir);
        for (String mode : new String[] {"delete", "wal"}) {
            Path db = dir.resolve("db-" + mode + ".sqlite");
            Files.deleteIfExists(db);
            String url = "jdbc:sqlite:" + db + "?busy_timeout=0";
            try (Connection a = DriverManager.getConnection(url);
                    Connection b = DriverManager.getConnection(url)) {
                try (Statement s = a.createStatement()) {
                    s.execute("pragma journal_mode=" + mode);
                    s.execute("create table t(k integer primary key, v integer)");
                }
                insert(a, 0, 1000);
                System.out.println(mode + ": a inserted, b sees " + count(b));
                // b reads inside a transaction (a shared lock), a writes.
                b.setAutoCommit(false);
                long seen = count(b);
                a.setAutoCommit(false);
                insert(a, 1000, 500);
                String commit;
                try {
                    a.commit();
                    commit = "committed";
                } catch (SQLException e) {
                    commit = "busy (" + e.getErrorCode() + ")";
                    a.rollback();
                }
                System.out.println(mode + ": b read " + seen + " in its transaction; a's commit meanwhile: " + commit);
                b.commit();
                a.setAutoCommit(true);
                b.setAutoCommit(true);
                System.out.println(mode + ": after, a sees " + count(a) + ", b sees " + count(b));
                // Interleaved: a holds a write transaction, b's write must wait (busy).
                a.setAutoCommit(false);
                insert(a, 5000, 10);
                String bw;
                try {
                    insert(b, 6000, 1);
                    bw = "written";
                } catch (SQLException e) {
                    bw = "busy (" + e.getErrorCode() + ")";
                }
                a.commit();
                a.setAutoCommit(true);
                System.out.println(mode + ": b's write during a's transaction: " + bw);
                insert(b, 6000, 1);
                System.out.println(mode + ": then b writes; a sees " + count(a));
                // Many short transactions from both, alternating.
                for (int i = 0; i < 60; i++) {
                    Connection c = (i % 2 == 0) ? a : b;
                    c.setAutoCommit(false);
                    insert(c, 10_000 + i * 5, 5);
                    c.commit();
                    c.setAutoCommit(true);
                }
                try (Statement s = b.createStatement()) {
                    s.execute("delete from t where k % 3 = 0");
                }
                System.out.println(mode + ": alternating, a sees " + count(a) + ", b sees " + count(b));
                try (Statement s = a.createStatement();
                        ResultSet r = s.executeQuery("pragma integrity_check")) {
                    r.next();
                    System.out.println(mode + ": integrity " + r.getString(1));
                }
            }
            // Reopened alone: everything committed is there.
            try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db)) {
                System.out.println(mode + ": reopened, " + count(c));
            }
        }
    }
}
