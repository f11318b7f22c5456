import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.CRC32;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipInputStream;
import java.util.zip.ZipOutputStream;

/**
 * java.util.zip and java.util.jar over multi-megabyte archives: a zip of
 * deflated and stored entries written with ZipOutputStream, read back with
 * ZipFile (random access), ZipInputStream (streaming) and the zip file
 * system; a jar with a manifest through JarOutputStream and JarFile; a gzip
 * round trip. Every entry's CRC and content is checked. Deterministic
 * (seeded contents, fixed entry times).
 *
 * Arguments: DIR [write] (with "write", an entry is also added through the
 * zip file system)
 */
public class ZipJar {
    static final long TIME = 1_600_000_000_000L;
    static final int ENTRIES = 120;

    /** Entry i's content: some compressible text, some noise. */
    static byte[] content(int i) {
        int len = 1000 + (i * 7919) % 200_000;
        byte[] b = new byte[len];
        long x = i * 0x9E3779B97F4A7C15L + 1;
        for (int k = 0; k < len; k++) {
            if (i % 3 == 0) {
                x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
                b[k] = (byte) x;
            } else {
                b[k] = (byte) ("the quick brown fox jumps over the lazy dog " + (k / 64)).charAt(k % 40);
            }
        }
        return b;
    }

    static long crc(byte[] b) {
        CRC32 c = new CRC32();
        c.update(b);
        return c.getValue();
    }

    static byte[] readAll(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        in.transferTo(out);
        return out.toByteArray();
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        boolean write = args.length > 1 && args[1].equals("write");
        Files.createDirectories(dir);
        Path zip = dir.resolve("data.zip");
        long total = 0, crcs = 0;
        try (ZipOutputStream z = new ZipOutputStream(Files.newOutputStream(zip))) {
            z.setComment("astraea zip test");
            for (int i = 0; i < ENTRIES; i++) {
                byte[] b = content(i);
                ZipEntry e = new ZipEntry("dir" + (i % 5) + "/entry-" + i + (i % 4 == 0 ? ".bin" : ".txt"));
                e.setTime(TIME);
                if (i % 4 == 0) {
                    e.setMethod(ZipEntry.STORED);
                    e.setSize(b.length);
                    e.setCrc(crc(b));
                }
                z.putNextEntry(e);
                z.write(b);
                z.closeEntry();
                total += b.length;
                crcs += crc(b);
            }
        }
        System.out.println("zip written entries=" + ENTRIES + " bytes=" + total + " crcsum=" + crcs
                + " file=" + Files.size(zip));

        // Random access, in reverse order.
        int ok = 0;
        try (ZipFile zf = new ZipFile(zip.toFile())) {
            List<? extends ZipEntry> list = Collections.list(zf.entries());
            Collections.reverse(list);
            for (ZipEntry e : list) {
                int i = Integer.parseInt(e.getName().replaceAll(".*entry-(\\d+)\\..*", "$1"));
                byte[] b;
                try (InputStream in = zf.getInputStream(e)) {
                    b = readAll(in);
                }
                if (java.util.Arrays.equals(b, content(i)) && e.getCrc() == crc(b) && e.getTime() == TIME) ok++;
            }
            System.out.println("zipfile entries=" + zf.size() + " ok=" + ok + " comment=" + zf.getComment());
        }

        // Streaming.
        ok = 0;
        int n = 0;
        try (ZipInputStream in = new ZipInputStream(Files.newInputStream(zip))) {
            ZipEntry e;
            while ((e = in.getNextEntry()) != null) {
                byte[] b = readAll(in);
                if (java.util.Arrays.equals(b, content(n))) ok++;
                n++;
            }
        }
        System.out.println("zipinputstream entries=" + n + " ok=" + ok);

        // The zip file system: list, read, and (with "write") add an entry.
        try (FileSystem fs = FileSystems.newFileSystem(zip)) {
            List<String> names;
            try (Stream<Path> s = Files.walk(fs.getPath("/dir3"))) {
                names = s.filter(Files::isRegularFile).map(Path::toString).sorted().collect(Collectors.toList());
            }
            long sum = 0;
            for (String name : names) sum += crc(Files.readAllBytes(fs.getPath(name)));
            if (write) Files.write(fs.getPath("/added.txt"), "added through the zip file system\n".getBytes());
            System.out.println("zipfs dir3 files=" + names.size() + " first=" + names.get(0) + " crcsum=" + sum);
        }
        if (write) {
            try (ZipFile zf = new ZipFile(zip.toFile())) {
                System.out.println("after zipfs entries=" + zf.size() + " added="
                        + new String(readAll(zf.getInputStream(zf.getEntry("added.txt")))).trim());
            }
        }

        // A jar with a manifest.
        Path jar = dir.resolve("app.jar");
        Manifest mf = new Manifest();
        mf.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        mf.getMainAttributes().put(Attributes.Name.MAIN_CLASS, "example.Main");
        mf.getMainAttributes().putValue("Built-By", "astraea");
        try (JarOutputStream j = new JarOutputStream(Files.newOutputStream(jar), mf)) {
            for (int i = 0; i < 40; i++) {
                JarEntry e = new JarEntry("example/C" + i + ".class");
                e.setTime(TIME);
                j.putNextEntry(e);
                j.write(content(i * 5 + 1));
                j.closeEntry();
            }
        }
        try (JarFile jf = new JarFile(jar.toFile(), true)) {
            ok = 0;
            List<String> names = new ArrayList<>();
            for (Enumeration<JarEntry> en = jf.entries(); en.hasMoreElements();) {
                JarEntry e = en.nextElement();
                names.add(e.getName());
                if (e.getName().endsWith(".class")) {
                    int i = Integer.parseInt(e.getName().replaceAll("example/C(\\d+)\\.class", "$1"));
                    if (java.util.Arrays.equals(readAll(jf.getInputStream(e)), content(i * 5 + 1))) ok++;
                }
            }
            System.out.println("jar entries=" + names.size() + " ok=" + ok + " main="
                    + jf.getManifest().getMainAttributes().getValue(Attributes.Name.MAIN_CLASS)
                    + " by=" + jf.getManifest().getMainAttributes().getValue("Built-By")
                    + " file=" + Files.size(jar));
        }

        // gzip of everything concatenated.
        Path gz = dir.resolve("all.gz");
        CRC32 all = new CRC32();
        try (OutputStream o = new GZIPOutputStream(Files.newOutputStream(gz), 65536)) {
            for (int i = 0; i < ENTRIES; i++) {
                byte[] b = content(i);
                o.write(b);
                all.update(b);
            }
        }
        CRC32 back = new CRC32();
        long len = 0;
        try (InputStream in = new GZIPInputStream(Files.newInputStream(gz), 65536)) {
            byte[] buf = new byte[1 << 16];
            int k;
            while ((k = in.read(buf)) > 0) {
                back.update(buf, 0, k);
                len += k;
            }
        }
        System.out.println("gzip bytes=" + len + " crc ok=" + (all.getValue() == back.getValue())
                + " file=" + Files.size(gz));
    }
}
