import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Writes, renames, appends to and deletes files in the current directory
 * (under ./filesops/), prints a summary, and leaves ./filesops/result.txt
 * and ./filesops/sub/kept.txt for the caller to check from outside.
 *
 * Usage: java FilesOps
 */
public class FilesOps {
    static List<String> list(Path dir) throws IOException {
        List<String> names = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) {
                names.add(p.getFileName() + (Files.isDirectory(p) ? "/" : ""));
            }
        }
        Collections.sort(names);
        return names;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of("filesops");
        if (Files.exists(dir)) {
            System.err.println("FilesOps: ./filesops already exists; run in a fresh directory");
            System.exit(2);
        }
        Files.createDirectory(dir);
        Path sub = Files.createDirectory(dir.resolve("sub"));

        // Write 20 files, 0..19, each with its number repeated.
        for (int i = 0; i < 20; i++) {
            Files.writeString(dir.resolve("f" + i + ".txt"), ("line " + i + "\n").repeat(i + 1));
        }
        System.out.println("written=" + list(dir).size() + " entries " + list(dir).subList(0, 4));

        // Rename the even ones to .dat (replacing nothing), move f1 into sub/.
        int renamed = 0;
        for (int i = 0; i < 20; i += 2) {
            Files.move(dir.resolve("f" + i + ".txt"), dir.resolve("f" + i + ".dat"));
            renamed++;
        }
        Files.move(dir.resolve("f1.txt"), sub.resolve("kept.txt"));
        // Replace an existing file atomically.
        Files.writeString(dir.resolve("tmp.new"), "replacement\n");
        Files.move(dir.resolve("tmp.new"), dir.resolve("f3.txt"), StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
        System.out.println("renamed=" + renamed + " f3=" + Files.readString(dir.resolve("f3.txt")).trim());

        // Delete the odd .txt files except f3, and check they are gone.
        int deleted = 0;
        for (int i = 5; i < 20; i += 2) {
            Files.delete(dir.resolve("f" + i + ".txt"));
            deleted++;
        }
        boolean gone = !Files.exists(dir.resolve("f5.txt")) && !Files.deleteIfExists(dir.resolve("f7.txt"));
        System.out.println("deleted=" + deleted + " gone=" + gone);

        // Append, then read back.
        Path result = dir.resolve("result.txt");
        Files.writeString(result, "first\n");
        Files.writeString(result, "second\n", StandardOpenOption.APPEND);
        try (var w = Files.newBufferedWriter(result, StandardCharsets.UTF_8, StandardOpenOption.APPEND)) {
            w.write("third\n");
        }
        System.out.println("result=" + Files.readAllLines(result));

        // A file created and deleted again leaves no trace.
        Path gone2 = Files.createTempFile(dir, "scratch", ".tmp");
        Files.delete(gone2);

        long total = 0;
        for (String n : list(dir)) {
            Path p = dir.resolve(n);
            if (Files.isRegularFile(p)) {
                total += Files.size(p);
            }
        }
        System.out.println("listing=" + list(dir));
        System.out.println("sub=" + list(sub) + " kept=" + Files.readAllLines(sub.resolve("kept.txt")));
        System.out.println("total_bytes=" + total);
    }
}
