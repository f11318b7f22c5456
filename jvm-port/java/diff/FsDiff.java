import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.nio.file.attribute.*;
import java.util.*;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.util.zip.CRC32;

/**
 * Java-level differential checks of java.nio.file (issue 17): run on the host
 * and in a partition with a fresh scratch directory as argument; both must
 * print the same lines. Only deterministic facts are printed (no times, inode
 * numbers, owners or exception messages). Lines starting with "~" are checks
 * known to differ in a partition (docs/linux.md); the test reports them but
 * leaves them out of the comparison.
 */
public class FsDiff {
    static Path root;

    static void out(String s) {
        System.out.println(s);
    }

    static String rel(Path p) {
        if (p.startsWith(root)) {
            String r = root.relativize(p).toString();
            return r.isEmpty() ? "." : r;
        }
        return p.toString();
    }

    static String exc(Throwable t) {
        String s = t.getClass().getSimpleName();
        if ((t instanceof UncheckedIOException || t instanceof java.io.IOError) && t.getCause() != null) {
            s += "(" + t.getCause().getClass().getSimpleName() + ")";
        }
        return s;
    }

    interface Check {
        String run() throws Exception;
    }

    /** Prints "name: result" or "name: ExceptionClass". */
    static void check(String name, Check c) {
        String r;
        try {
            r = c.run();
        } catch (Throwable t) {
            r = exc(t);
        }
        out(name + ": " + r);
    }

    static String type(BasicFileAttributes a) {
        return (a.isRegularFile() ? "f" : "-") + (a.isDirectory() ? "d" : "-")
                + (a.isSymbolicLink() ? "l" : "-") + (a.isOther() ? "o" : "-");
    }

    static String attrs(Path p, LinkOption... opts) {
        StringBuilder sb = new StringBuilder();
        try {
            BasicFileAttributes b = Files.readAttributes(p, BasicFileAttributes.class, opts);
            sb.append("basic ").append(type(b));
            if (!b.isDirectory()) sb.append(" size=").append(b.size());
        } catch (Throwable t) {
            sb.append("basic ").append(exc(t));
        }
        try {
            PosixFileAttributes x = Files.readAttributes(p, PosixFileAttributes.class, opts);
            sb.append("; posix ").append(type(x)).append(' ')
                    .append(PosixFilePermissions.toString(x.permissions()));
            if (!x.isDirectory()) sb.append(" size=").append(x.size());
        } catch (Throwable t) {
            sb.append("; posix ").append(exc(t));
        }
        try {
            Object n = Files.getAttribute(p, "unix:nlink", opts);
            if (!Files.isDirectory(p, opts)) sb.append("; nlink=").append(n);
        } catch (Throwable t) {
            sb.append("; nlink ").append(exc(t));
        }
        return sb.toString();
    }

    static void write(Path p, String s) throws IOException {
        Files.write(p, s.getBytes(StandardCharsets.UTF_8));
    }

    static String read(Path p) throws IOException {
        return new String(Files.readAllBytes(p), StandardCharsets.UTF_8);
    }

    static Set<PosixFilePermission> perms(String s) {
        return PosixFilePermissions.fromString(s);
    }

    /** tree/ with files, directories and every kind of symbolic link. */
    static Path buildTree(String name, boolean loop) throws IOException {
        Path t = root.resolve(name);
        Files.createDirectories(t.resolve("d1/d2"));
        Files.createDirectory(t.resolve("empty"));
        write(t.resolve("a.txt"), "alpha\n");
        write(t.resolve("d1/b.txt"), "bravo bravo\n");
        write(t.resolve("d1/d2/c.txt"), "");
        Files.createSymbolicLink(t.resolve("to_file"), Paths.get("a.txt"));
        Files.createSymbolicLink(t.resolve("to_dir"), Paths.get("d1"));
        Files.createSymbolicLink(t.resolve("dangling"), Paths.get("no/such/file"));
        Files.createSymbolicLink(t.resolve("abs_to_file"), t.resolve("d1/b.txt"));
        Files.createSymbolicLink(t.resolve("d1/d2/to_link"), Paths.get("../../to_file"));
        if (loop) {
            Files.createSymbolicLink(t.resolve("d1/d2/up"), Paths.get("../.."));
            Files.createSymbolicLink(t.resolve("self"), Paths.get("self"));
        }
        return t;
    }

    static List<String> walk(Path t, FileVisitOption... opts) throws IOException {
        List<String> l = new ArrayList<>();
        try (Stream<Path> s = Files.walk(t, opts)) {
            s.forEach(p -> l.add(rel(p) + " " + (Files.isSymbolicLink(p) ? "l" : Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS) ? "d" : Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) ? "f" : "?")));
        }
        Collections.sort(l);
        return l;
    }

    static List<String> walkTree(Path t, Set<FileVisitOption> opts) throws IOException {
        List<String> l = new ArrayList<>();
        Files.walkFileTree(t, opts, Integer.MAX_VALUE, new SimpleFileVisitor<Path>() {
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes a) {
                l.add("pre " + rel(d) + " " + type(a));
                return FileVisitResult.CONTINUE;
            }

            public FileVisitResult visitFile(Path f, BasicFileAttributes a) {
                l.add("file " + rel(f) + " " + type(a) + (a.isDirectory() ? "" : " size=" + a.size()));
                return FileVisitResult.CONTINUE;
            }

            public FileVisitResult visitFileFailed(Path f, IOException e) {
                l.add("failed " + rel(f) + " " + exc(e));
                return FileVisitResult.CONTINUE;
            }

            public FileVisitResult postVisitDirectory(Path d, IOException e) {
                l.add("post " + rel(d) + (e == null ? "" : " " + exc(e)));
                return FileVisitResult.CONTINUE;
            }
        });
        Collections.sort(l);
        return l;
    }

    static void walks() throws IOException {
        Path t = buildTree("tree", false);
        Path lt = buildTree("looptree", true);
        out("== walk");
        for (String s : walk(t)) out("walk " + s);
        for (String s : walk(t, FileVisitOption.FOLLOW_LINKS)) out("walk-follow " + s);
        for (String s : walk(lt)) out("walk-loop " + s);
        check("walk-loop-follow", () -> walk(lt, FileVisitOption.FOLLOW_LINKS).size() + " entries");
        for (String s : walkTree(lt, EnumSet.noneOf(FileVisitOption.class))) out("tree " + s);
        for (String s : walkTree(lt, EnumSet.of(FileVisitOption.FOLLOW_LINKS))) out("tree-follow " + s);

        out("== attributes");
        List<Path> all = new ArrayList<>();
        try (Stream<Path> s = Files.walk(lt)) {
            s.forEach(all::add);
        }
        all.sort(Comparator.comparing(Path::toString));
        for (Path p : all) {
            out("attr " + rel(p) + " follow: " + attrs(p));
            out("attr " + rel(p) + " nofollow: " + attrs(p, LinkOption.NOFOLLOW_LINKS));
            out("is " + rel(p) + " link=" + Files.isSymbolicLink(p) + " exists=" + Files.exists(p)
                    + " notExists=" + Files.notExists(p) + " dir=" + Files.isDirectory(p)
                    + " file=" + Files.isRegularFile(p) + " r=" + Files.isReadable(p)
                    + " w=" + Files.isWritable(p) + " x=" + Files.isExecutable(p));
            if (Files.isSymbolicLink(p)) {
                check("readlink " + rel(p), () -> Files.readSymbolicLink(p).toString().replace(root.toString(), "ROOT"));
                check("realpath " + rel(p), () -> rel(p.toRealPath()));
            }
        }
        check("readlink of a file", () -> Files.readSymbolicLink(t.resolve("a.txt")).toString());
        check("readlink of nothing", () -> Files.readSymbolicLink(t.resolve("nothing")).toString());
        check("attr of nothing", () -> type(Files.readAttributes(t.resolve("nothing"), BasicFileAttributes.class)));
        // JDK 22+ reads the birth time (statx STATX_BTIME); older JDKs give
        // the modification time. A file modified "in 2030" tells them apart.
        check("creation time is not the modification time", () -> {
            Path f = Files.writeString(t.resolve("born.txt"), "x");
            Files.setLastModifiedTime(f, FileTime.fromMillis(1_900_000_000_000L));
            BasicFileAttributes b = Files.readAttributes(f, BasicFileAttributes.class);
            boolean before = b.creationTime().compareTo(b.lastModifiedTime()) < 0;
            Files.delete(f);
            return b.creationTime().equals(b.lastModifiedTime()) ? "same" : "before=" + before;
        });
        check("realpath of loop", () -> rel(lt.resolve("self").toRealPath()));
        check("read through loop", () -> read(lt.resolve("self")));
        check("read through dangling", () -> read(t.resolve("dangling")));
        check("read through link", () -> read(t.resolve("to_file")).trim());
        check("read through dir link", () -> read(t.resolve("to_dir/b.txt")).trim());
    }

    static void links() throws IOException {
        out("== links");
        Path d = root.resolve("links");
        Files.createDirectory(d);
        write(d.resolve("orig"), "original\n");
        check("createSymbolicLink", () -> rel(Files.createSymbolicLink(d.resolve("sym"), Paths.get("orig"))));
        check("createSymbolicLink again", () -> rel(Files.createSymbolicLink(d.resolve("sym"), Paths.get("orig"))));
        check("createLink", () -> rel(Files.createLink(d.resolve("hard"), d.resolve("orig"))));
        check("createLink again", () -> rel(Files.createLink(d.resolve("hard"), d.resolve("orig"))));
        check("createLink to missing", () -> rel(Files.createLink(d.resolve("hard2"), d.resolve("missing"))));
        check("createLink to dir", () -> rel(Files.createLink(d.resolve("hard3"), root)));
        check("createLink via symlink", () -> rel(Files.createLink(d.resolve("hard4"), d.resolve("sym"))));
        check("orig nlink", () -> String.valueOf(Files.getAttribute(d.resolve("orig"), "unix:nlink")));
        check("hard isSameFile", () -> String.valueOf(Files.isSameFile(d.resolve("hard"), d.resolve("orig"))));
        check("sym isSameFile", () -> String.valueOf(Files.isSameFile(d.resolve("sym"), d.resolve("orig"))));
        check("hard4 is link", () -> String.valueOf(Files.isSymbolicLink(d.resolve("hard4"))));
        check("write via hard", () -> {
            write(d.resolve("hard"), "changed\n");
            return read(d.resolve("orig")).trim();
        });
        check("delete orig", () -> {
            Files.delete(d.resolve("orig"));
            return "hard nlink=" + Files.getAttribute(d.resolve("hard"), "unix:nlink")
                    + " sym exists=" + Files.exists(d.resolve("sym"))
                    + " sym link=" + Files.isSymbolicLink(d.resolve("sym"));
        });
    }

    static void permissions() throws IOException {
        out("== permissions");
        Path d = root.resolve("perm");
        Files.createDirectory(d);
        Path f = d.resolve("f");
        Files.createFile(f);
        for (String p : new String[] {"rwx------", "r--r-----", "---------", "rw-rw-rw-", "rwxr-xr-x", "r--------"}) {
            check("setPosixFilePermissions " + p, () -> {
                Files.setPosixFilePermissions(f, perms(p));
                return PosixFilePermissions.toString(Files.getPosixFilePermissions(f))
                        + " r=" + Files.isReadable(f) + " w=" + Files.isWritable(f) + " x=" + Files.isExecutable(f);
            });
        }
        check("createFile with attribute rw-------", () -> PosixFilePermissions.toString(Files.getPosixFilePermissions(
                Files.createFile(d.resolve("g"), PosixFilePermissions.asFileAttribute(perms("rw-------"))))));
        check("createDirectory with attribute rwx--x---", () -> PosixFilePermissions.toString(Files.getPosixFilePermissions(
                Files.createDirectory(d.resolve("h"), PosixFilePermissions.asFileAttribute(perms("rwx--x---"))))));
        check("setPosixFilePermissions on dangling link", () -> {
            Files.createSymbolicLink(d.resolve("dl"), Paths.get("nothing"));
            Files.setPosixFilePermissions(d.resolve("dl"), perms("rwx------"));
            return "ok";
        });
        check("setAttribute posix:permissions", () -> {
            Files.setAttribute(f, "posix:permissions", perms("rw-r--r--"));
            return PosixFilePermissions.toString(Files.getPosixFilePermissions(f));
        });
        check("owner", () -> Files.getOwner(f).getName() + " uid=" + Files.getAttribute(f, "unix:uid")
                + " gid=" + Files.getAttribute(f, "unix:gid"));
        check("setOwner to the owner", () -> {
            Files.setOwner(f, Files.getOwner(f));
            return Files.getOwner(f).getName();
        });
        check("setAttribute unix:uid 4242", () -> {
            Files.setAttribute(f, "unix:uid", 4242);
            return "uid=" + Files.getAttribute(f, "unix:uid");
        });
        check("setAttribute unix:gid 4343 on a link, NOFOLLOW_LINKS", () -> {
            Path l = d.resolve("ownlink");
            Files.createSymbolicLink(l, Paths.get("f"));
            Files.setAttribute(l, "unix:gid", 4343, LinkOption.NOFOLLOW_LINKS);
            return "link gid=" + Files.getAttribute(l, "unix:gid", LinkOption.NOFOLLOW_LINKS)
                    + " target gid=" + Files.getAttribute(f, "unix:gid");
        });
        check("setAttribute unix:gid 4444 through a link", () -> {
            Files.setAttribute(d.resolve("ownlink"), "unix:gid", 4444);
            return "target gid=" + Files.getAttribute(f, "unix:gid");
        });
        check("setAttribute unix:uid of a missing file", () -> {
            Files.setAttribute(d.resolve("missing"), "unix:uid", 0);
            return "ok";
        });
        out("user xattr write: " + xattr(f));
        check("setAttribute unix:mode", () -> {
            Files.setAttribute(f, "unix:mode", 0640);
            return Integer.toOctalString((Integer) Files.getAttribute(f, "unix:mode"));
        });
    }

    static String xattr(Path f) {
        try {
            UserDefinedFileAttributeView v = Files.getFileAttributeView(f, UserDefinedFileAttributeView.class);
            v.write("user.astraea", ByteBuffer.wrap(new byte[] {1, 2, 3}));
            return "ok, list " + v.list();
        } catch (Throwable t) {
            return exc(t);
        }
    }

    static void errors() throws IOException {
        out("== errors");
        Path d = root.resolve("err");
        Files.createDirectories(d.resolve("full/inner"));
        write(d.resolve("file"), "x");
        check("createFile existing", () -> rel(Files.createFile(d.resolve("file"))));
        check("createFile existing dir", () -> rel(Files.createFile(d.resolve("full"))));
        check("createFile in missing dir", () -> rel(Files.createFile(d.resolve("nodir/x"))));
        check("createFile under a file", () -> rel(Files.createFile(d.resolve("file/x"))));
        check("createDirectory existing", () -> rel(Files.createDirectory(d.resolve("full"))));
        check("createDirectories over a file", () -> rel(Files.createDirectories(d.resolve("file/x/y"))));
        check("createDirectories existing", () -> rel(Files.createDirectories(d.resolve("full/inner"))));
        check("delete non-empty dir", () -> {
            Files.delete(d.resolve("full"));
            return "deleted";
        });
        check("delete missing", () -> {
            Files.delete(d.resolve("missing"));
            return "deleted";
        });
        check("deleteIfExists missing", () -> String.valueOf(Files.deleteIfExists(d.resolve("missing"))));
        check("deleteIfExists non-empty", () -> String.valueOf(Files.deleteIfExists(d.resolve("full"))));
        check("delete empty dir", () -> {
            Files.delete(d.resolve("full/inner"));
            return "deleted exists=" + Files.exists(d.resolve("full/inner"));
        });
        check("newDirectoryStream of a file", () -> {
            try (DirectoryStream<Path> s = Files.newDirectoryStream(d.resolve("file"))) {
                return "opened " + s.iterator().hasNext();
            }
        });
        check("newByteChannel CREATE_NEW existing", () -> {
            Files.newByteChannel(d.resolve("file"), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE).close();
            return "opened";
        });
        check("newInputStream of a dir", () -> {
            try (var in = Files.newInputStream(d.resolve("full"))) {
                return "read " + in.read();
            }
        });
        check("size of a missing file", () -> String.valueOf(Files.size(d.resolve("missing"))));
        check("list of a dir", () -> {
            try (Stream<Path> s = Files.list(d)) {
                return s.map(FsDiff::rel).sorted().toList().toString();
            }
        });
    }

    static void moves() throws IOException {
        out("== moves");
        Path d = root.resolve("mv");
        Files.createDirectories(d.resolve("dir1"));
        Files.createDirectories(d.resolve("dir2/sub"));
        Files.createDirectories(d.resolve("dir3"));
        write(d.resolve("a"), "A");
        write(d.resolve("b"), "B");
        write(d.resolve("c"), "C");
        write(d.resolve("e"), "E");
        check("move onto existing", () -> rel(Files.move(d.resolve("a"), d.resolve("b"))));
        check("move REPLACE_EXISTING", () -> rel(Files.move(d.resolve("a"), d.resolve("b"), StandardCopyOption.REPLACE_EXISTING)) + " " + read(d.resolve("b")) + " a exists=" + Files.exists(d.resolve("a")));
        check("move ATOMIC_MOVE onto existing", () -> rel(Files.move(d.resolve("b"), d.resolve("c"), StandardCopyOption.ATOMIC_MOVE)) + " " + read(d.resolve("c")));
        check("move ATOMIC_MOVE new name", () -> rel(Files.move(d.resolve("c"), d.resolve("c2"), StandardCopyOption.ATOMIC_MOVE)) + " " + read(d.resolve("c2")));
        check("move missing", () -> rel(Files.move(d.resolve("nothing"), d.resolve("z"))));
        check("move dir onto non-empty dir REPLACE_EXISTING", () -> rel(Files.move(d.resolve("dir1"), d.resolve("dir2"), StandardCopyOption.REPLACE_EXISTING)));
        check("move dir onto empty dir REPLACE_EXISTING", () -> rel(Files.move(d.resolve("dir1"), d.resolve("dir3"), StandardCopyOption.REPLACE_EXISTING)) + " dir1 exists=" + Files.exists(d.resolve("dir1")));
        check("move file onto dir REPLACE_EXISTING", () -> rel(Files.move(d.resolve("e"), d.resolve("dir2"), StandardCopyOption.REPLACE_EXISTING)));
        check("move dir into itself", () -> rel(Files.move(d.resolve("dir2"), d.resolve("dir2/sub/x"))));
        check("move non-empty dir", () -> rel(Files.move(d.resolve("dir2"), d.resolve("dir4"))) + " " + Files.isDirectory(d.resolve("dir4/sub")));
        check("move symlink", () -> {
            Files.createSymbolicLink(d.resolve("l"), Paths.get("c2"));
            Files.move(d.resolve("l"), d.resolve("l2"));
            return Files.readSymbolicLink(d.resolve("l2")) + " " + read(d.resolve("l2"));
        });
        check("copy onto existing", () -> rel(Files.copy(d.resolve("c2"), d.resolve("e"))));
        check("copy REPLACE_EXISTING", () -> rel(Files.copy(d.resolve("c2"), d.resolve("e"), StandardCopyOption.REPLACE_EXISTING)) + " " + read(d.resolve("e")));
        check("copy symlink NOFOLLOW", () -> {
            Files.copy(d.resolve("l2"), d.resolve("l3"), LinkOption.NOFOLLOW_LINKS);
            return Files.isSymbolicLink(d.resolve("l3")) + " " + Files.readSymbolicLink(d.resolve("l3"));
        });
        check("copy COPY_ATTRIBUTES", () -> {
            Files.setPosixFilePermissions(d.resolve("e"), perms("rwxr-----"));
            Files.copy(d.resolve("e"), d.resolve("e2"), StandardCopyOption.COPY_ATTRIBUTES);
            return PosixFilePermissions.toString(Files.getPosixFilePermissions(d.resolve("e2")));
        });
        try (Stream<Path> s = Files.walk(d)) {
            s.map(p -> rel(p) + " " + (Files.isSymbolicLink(p) ? "l" : Files.isDirectory(p) ? "d" : "f")).sorted().forEach(x -> out("mv-tree " + x));
        }
    }

    static void locks() throws IOException {
        out("== locks");
        Path f = root.resolve("lockfile");
        write(f, "0123456789".repeat(20));
        try (FileChannel rw = FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE);
             FileChannel ro = FileChannel.open(f, StandardOpenOption.READ);
             FileChannel wo = FileChannel.open(f, StandardOpenOption.WRITE)) {
            FileLock l1 = rw.lock(0, 100, false);
            out("lock exclusive 0-100: shared=" + l1.isShared() + " valid=" + l1.isValid());
            check("tryLock overlapping same channel", () -> String.valueOf(rw.tryLock(50, 100, false)));
            check("lock overlapping other channel", () -> String.valueOf(ro.lock(50, 10, true)));
            check("tryLock disjoint", () -> {
                FileLock l = rw.tryLock(100, 50, false);
                String s = "got=" + (l != null) + " shared=" + l.isShared();
                l.release();
                return s + " valid=" + l.isValid();
            });
            check("shared lock on write-only", () -> String.valueOf(wo.lock(150, 10, true)));
            check("exclusive lock on read-only", () -> String.valueOf(ro.lock(150, 10, false)));
            check("shared lock on read-only", () -> {
                FileLock l = ro.lock(150, 10, true);
                String s = "shared=" + l.isShared();
                check("shared tryLock overlapping shared", () -> String.valueOf(rw.tryLock(155, 10, true)));
                l.release();
                return s;
            });
            l1.release();
            out("released: valid=" + l1.isValid());
            check("relock after release", () -> {
                FileLock l = wo.tryLock(0, 100, false);
                String s = "got=" + (l != null);
                l.close();
                return s;
            });
            check("whole-file lock", () -> {
                FileLock l = rw.lock();
                String s = "pos=" + l.position() + " size=" + l.size() + " shared=" + l.isShared();
                check("tryLock while whole-file locked", () -> String.valueOf(ro.tryLock(0, 1, true)));
                l.release();
                return s;
            });
            check("negative lock range", () -> String.valueOf(rw.lock(-1, 10, false)));
        }
        check("lock on closed channel", () -> {
            FileChannel c = FileChannel.open(f, StandardOpenOption.WRITE);
            c.close();
            return String.valueOf(c.lock());
        });
    }

    static byte[] data(int n, int seed) {
        byte[] b = new byte[n];
        Random r = new Random(seed);
        r.nextBytes(b);
        return b;
    }

    static String crc(Path p) throws IOException {
        CRC32 c = new CRC32();
        c.update(Files.readAllBytes(p));
        return Files.size(p) + "/" + Long.toHexString(c.getValue());
    }

    static void transfers() throws IOException {
        out("== transfer");
        Path a = root.resolve("xa");
        Path b = root.resolve("xb");
        Path c = root.resolve("xc");
        Files.write(a, data(3 * 1024 * 1024 + 17, 1));
        out("source " + crc(a));
        try (FileChannel src = FileChannel.open(a, StandardOpenOption.READ);
             FileChannel dst = FileChannel.open(b, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            long n = 0;
            while (n < src.size()) n += src.transferTo(n, src.size() - n, dst);
            out("transferTo " + n + " pos=" + dst.position() + " srcpos=" + src.position());
            out("transferTo past end " + src.transferTo(src.size() + 10, 100, dst));
            out("transferTo part " + src.transferTo(1000, 5000, dst));
        }
        out("after transferTo " + crc(b));
        try (FileChannel src = FileChannel.open(b, StandardOpenOption.READ);
             FileChannel dst = FileChannel.open(c, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long n = 0;
            while (n < src.size()) n += dst.transferFrom(src, n, src.size() - n);
            out("transferFrom " + n + " pos=" + dst.position() + " srcpos=" + src.position());
            src.position(100);
            out("transferFrom at offset " + dst.transferFrom(src, 50, 1000) + " srcpos=" + src.position());
            out("transferFrom past end " + dst.transferFrom(src, dst.size() + 100, 10));
        }
        out("after transferFrom " + crc(c));
        try (FileChannel ch = FileChannel.open(a, StandardOpenOption.READ)) {
            check("transferTo to read-only", () -> String.valueOf(ch.transferTo(0, 10, FileChannel.open(c, StandardOpenOption.READ))));
        }
    }

    static void maps() throws IOException {
        out("== map");
        Path f = root.resolve("mapped");
        Files.write(f, data(64 * 1024, 2));
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MappedByteBuffer ro = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size());
            long sum = 0;
            for (int i = 0; i < ro.limit(); i++) sum += ro.get(i) & 0xff;
            out("read-only sum " + sum + " readOnly=" + ro.isReadOnly());
            check("put into read-only", () -> String.valueOf(ro.put(0, (byte) 1)));
            MappedByteBuffer rw = ch.map(FileChannel.MapMode.READ_WRITE, 4096, 8192);
            for (int i = 0; i < 8192; i++) rw.put(i, (byte) (i * 7));
            rw.force();
            ByteBuffer bb = ByteBuffer.allocate(8192);
            ch.read(bb, 4096);
            boolean same = true;
            for (int i = 0; i < 8192; i++) same &= bb.get(i) == (byte) (i * 7);
            out("read-write put+force, read(2) sees it: " + same);
            out("file after force " + crc(f));
            MappedByteBuffer grow = ch.map(FileChannel.MapMode.READ_WRITE, 60 * 1024, 8192);
            grow.put(8191, (byte) 42);
            grow.force();
            out("map past end grows the file to " + ch.size());
            // Later write(2)s through the channel, seen by existing mappings
            // (one page per file page: docs/linux.md).
            ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3, 4}), 4096);
            out("read-write mapping sees a later write: " + (rw.get(0) == 1 && rw.get(3) == 4));
            out("read-only mapping sees a later write: " + (ro.get(4096) == 1 && ro.get(4099) == 4));
            MappedByteBuffer fresh = ch.map(FileChannel.MapMode.READ_ONLY, 4096, 4);
            out("new mapping sees the write: " + (fresh.get(0) == 1 && fresh.get(3) == 4));
            MappedByteBuffer priv = ch.map(FileChannel.MapMode.PRIVATE, 0, 16);
            priv.put(0, (byte) 99);
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, 0);
            out("private put stays private: " + (one.get(0) != 99));
        }
        out("file after close " + crc(f));
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
            check("map READ_WRITE on read-only channel", () -> String.valueOf(ch.map(FileChannel.MapMode.READ_WRITE, 0, 10)));
        }
    }

    static void watch() throws Exception {
        // inotify in a partition reports the partition's own changes
        // (docs/linux.md), which is all this section makes.
        out("== watch");
        Path d = root.resolve("watched");
        Files.createDirectory(d);
        WatchService ws;
        try {
            ws = FileSystems.getDefault().newWatchService();
        } catch (Throwable t) {
            out("newWatchService: " + exc(t));
            return;
        }
        try (WatchService w = ws) {
            WatchKey key = d.register(w, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_DELETE,
                    StandardWatchEventKinds.ENTRY_MODIFY);
            out("registered valid=" + key.isValid());
            watchStep(w, "create", () -> Files.createFile(d.resolve("new")));
            watchStep(w, "modify", () -> write(d.resolve("new"), "some bytes"));
            watchStep(w, "delete", () -> Files.delete(d.resolve("new")));
            watchStep(w, "nothing", () -> {});
            key.cancel();
            out("cancelled valid=" + key.isValid());
        }
    }

    interface Action {
        void run() throws Exception;
    }

    static void watchStep(WatchService w, String what, Action a) throws Exception {
        a.run();
        TreeSet<String> seen = new TreeSet<>();
        WatchKey k = w.poll(what.equals("nothing") ? 1 : 10, TimeUnit.SECONDS);
        if (k != null) {
            Thread.sleep(300);
            for (WatchEvent<?> e : k.pollEvents()) seen.add(e.kind().name() + " " + e.context());
            k.reset();
            WatchKey more;
            while ((more = w.poll(300, TimeUnit.MILLISECONDS)) != null) {
                for (WatchEvent<?> e : more.pollEvents()) seen.add(e.kind().name() + " " + e.context());
                more.reset();
            }
        }
        out("watch " + what + ": " + (k == null ? "no key" : seen.toString()));
    }

    static void usrShareDoc() throws IOException {
        out("== /usr/share/doc");
        long[] n = new long[5];
        Files.walkFileTree(Paths.get("/usr/share/doc"), new SimpleFileVisitor<Path>() {
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes a) {
                n[0]++;
                return FileVisitResult.CONTINUE;
            }

            public FileVisitResult visitFile(Path f, BasicFileAttributes a) {
                if (a.isRegularFile()) {
                    n[1]++;
                    n[4] += a.size();
                } else if (a.isSymbolicLink()) n[2]++;
                return FileVisitResult.CONTINUE;
            }

            public FileVisitResult visitFileFailed(Path f, IOException e) {
                n[3]++;
                return FileVisitResult.CONTINUE;
            }
        });
        out("dirs=" + n[0] + " files=" + n[1] + " links=" + n[2] + " failed=" + n[3] + " bytes=" + n[4]);
        check("Files.walk regular files", () -> {
            try (Stream<Path> s = Files.walk(Paths.get("/usr/share/doc"))) {
                return String.valueOf(s.filter(p -> Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)).count());
            }
        });
    }

    public static void main(String[] args) throws Exception {
        root = Paths.get(args[0]).toAbsolutePath();
        Files.createDirectories(root);
        String only = args.length > 1 ? args[1] : "all";
        Map<String, Action> parts = new LinkedHashMap<>();
        parts.put("walk", FsDiff::walks);
        parts.put("links", FsDiff::links);
        parts.put("perm", FsDiff::permissions);
        parts.put("errors", FsDiff::errors);
        parts.put("move", FsDiff::moves);
        parts.put("lock", FsDiff::locks);
        parts.put("transfer", FsDiff::transfers);
        parts.put("map", FsDiff::maps);
        parts.put("watch", FsDiff::watch);
        parts.put("doc", FsDiff::usrShareDoc);
        for (var e : parts.entrySet()) {
            if (!only.equals("all") && !only.equals(e.getKey())) continue;
            try {
                e.getValue().run();
            } catch (Throwable t) {
                out(e.getKey() + " aborted: " + exc(t));
            }
        }
        out("done");
    }
}
