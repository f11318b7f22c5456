import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The H2 database (2.x, MVStore file store) as an embedded SQL database.
 *
 * <ul>
 * <li>{@code full DB}: creates a table, inserts ROWS rows in transactions of
 *     1000 (one rolled back), queries aggregates, closes, reopens and checks
 *     the same aggregates again, then updates and deletes in a transaction.
 * <li>{@code crash DB}: commits COMMITTED rows, then in an open transaction
 *     inserts more, updates and deletes committed ones; a checkpoint from a
 *     second connection writes all of it to the file; prints READY and waits
 *     to be killed.
 * <li>{@code verify DB}: after {@code crash}, reopens and checks that exactly
 *     the committed rows are there, unchanged.
 * </ul>
 * Output is deterministic (no timings).
 */
public class H2Db {
    static final int ROWS = 100_000;
    static final int COMMITTED = 50_000;
    static final int BATCH = 1000;

    static Connection open(String db) throws SQLException {
        return DriverManager.getConnection("jdbc:h2:file:" + db, "sa", "");
    }

    /** The value column of row id. */
    static long value(int id) {
        return (id * 2_654_435_761L) % 1_000_003;
    }

    static String name(int id) {
        return "row-" + Integer.toString(id * 7919, 36);
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String db = args[1];
        switch (mode) {
            case "full": full(db); break;
            case "crash": crash(db); break;
            case "verify": verify(db); break;
            default: throw new IllegalArgumentException(mode);
        }
    }

    static void create(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, "
                    + "grp INT NOT NULL, val BIGINT NOT NULL, note VARCHAR(200))");
            s.execute("CREATE INDEX t_grp ON t(grp)");
        }
    }

    /** Inserts ids [from, to), committing every BATCH rows when commit. */
    static void insert(Connection c, int from, int to, boolean commit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO t VALUES (?, ?, ?, ?, ?)")) {
            for (int id = from; id < to; id++) {
                ps.setInt(1, id);
                ps.setString(2, name(id));
                ps.setInt(3, id % 97);
                ps.setLong(4, value(id));
                ps.setString(5, id % 3 == 0 ? null : "note " + id + " " + "x".repeat(id % 50));
                ps.addBatch();
                if ((id + 1) % BATCH == 0 || id + 1 == to) {
                    ps.executeBatch();
                    if (commit) c.commit();
                }
            }
        }
    }

    static void aggregates(Connection c, String label) throws SQLException {
        try (Statement s = c.createStatement()) {
            try (ResultSet r = s.executeQuery(
                    "SELECT COUNT(*), SUM(val), MIN(val), MAX(val), COUNT(note), "
                    + "SUM(LENGTH(name)), MIN(id), MAX(id) FROM t")) {
                r.next();
                System.out.println(label + ": count=" + r.getLong(1) + " sum=" + r.getLong(2)
                        + " min=" + r.getLong(3) + " max=" + r.getLong(4) + " notes=" + r.getLong(5)
                        + " namelen=" + r.getLong(6) + " ids=" + r.getLong(7) + ".." + r.getLong(8));
            }
            try (ResultSet r = s.executeQuery(
                    "SELECT grp, COUNT(*), SUM(val) FROM t WHERE grp IN (0, 13, 96) GROUP BY grp ORDER BY grp")) {
                StringBuilder sb = new StringBuilder(label + ": groups");
                while (r.next()) sb.append(' ').append(r.getInt(1)).append(':').append(r.getLong(2))
                        .append('/').append(r.getLong(3));
                System.out.println(sb);
            }
            try (ResultSet r = s.executeQuery(
                    "SELECT id, name, val FROM t WHERE val > 999000 ORDER BY val DESC, id LIMIT 3")) {
                StringBuilder sb = new StringBuilder(label + ": top");
                while (r.next()) sb.append(' ').append(r.getInt(1)).append('/').append(r.getString(2))
                        .append('/').append(r.getLong(3));
                System.out.println(sb);
            }
        }
    }

    static void full(String db) throws SQLException {
        try (Connection c = open(db)) {
            c.setAutoCommit(false);
            create(c);
            c.commit();
            insert(c, 0, ROWS, true);
            // A transaction that is rolled back leaves nothing.
            insert(c, ROWS, ROWS + 5000, false);
            c.rollback();
            aggregates(c, "before close");
        }
        try (Connection c = open(db)) {
            aggregates(c, "after reopen");
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                int up = s.executeUpdate("UPDATE t SET val = val + 1 WHERE grp = 13");
                int del = s.executeUpdate("DELETE FROM t WHERE MOD(id, 10) = 7");
                c.commit();
                System.out.println("updated=" + up + " deleted=" + del);
            }
            aggregates(c, "after update");
        }
        try (Connection c = open(db)) {
            aggregates(c, "reopened again");
        }
    }

    static void crash(String db) throws Exception {
        Connection c = open(db);
        c.setAutoCommit(false);
        create(c);
        c.commit();
        insert(c, 0, COMMITTED, true);
        aggregates(c, "committed");
        // The transaction the kill interrupts.
        insert(c, COMMITTED, COMMITTED + 20_000, false);
        try (Statement s = c.createStatement()) {
            s.executeUpdate("UPDATE t SET val = -1, name = 'changed' WHERE id < " + COMMITTED + " AND grp = 5");
            s.executeUpdate("DELETE FROM t WHERE id < " + COMMITTED + " AND MOD(id, 4) = 1");
        }
        aggregates(c, "uncommitted");
        // Everything, uncommitted changes included, goes to the file.
        try (Connection other = open(db); Statement s = other.createStatement()) {
            s.execute("CHECKPOINT SYNC");
        }
        System.out.println("READY");
        System.out.flush();
        Thread.sleep(600_000);
        System.out.println("not killed");
        System.exit(1);
    }

    static void verify(String db) throws SQLException {
        try (Connection c = open(db)) {
            aggregates(c, "recovered");
            long bad = 0;
            long n = 0;
            try (Statement s = c.createStatement();
                 ResultSet r = s.executeQuery("SELECT id, name, grp, val FROM t ORDER BY id")) {
                int expect = 0;
                while (r.next()) {
                    int id = r.getInt(1);
                    if (id != expect || !r.getString(2).equals(name(id)) || r.getInt(3) != id % 97
                            || r.getLong(4) != value(id)) {
                        bad++;
                    }
                    expect = id + 1;
                    n++;
                }
            }
            System.out.println("rows=" + n + " mismatched=" + bad
                    + (n == COMMITTED && bad == 0 ? " consistent" : " INCONSISTENT"));
            // The database still works.
            c.setAutoCommit(false);
            insert(c, COMMITTED, COMMITTED + 100, true);
            aggregates(c, "after insert");
        }
    }
}
