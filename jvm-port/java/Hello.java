import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Reads the file named by its argument with java.nio.file and prints it,
 * then a line with its size. Output is UTF-8 whatever the locale.
 *
 * Usage: java Hello FILE
 */
public class Hello {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: java Hello FILE");
            System.exit(2);
        }
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        Path p = Path.of(args[0]);
        byte[] bytes = Files.readAllBytes(p);
        List<String> lines = Files.readAllLines(p, StandardCharsets.UTF_8);
        out.println("Hello from Java " + Runtime.version().feature());
        for (String line : lines) {
            out.println("| " + line);
        }
        out.println("bytes=" + bytes.length + " lines=" + lines.size() + " size=" + Files.size(p));
        out.flush();
    }
}
