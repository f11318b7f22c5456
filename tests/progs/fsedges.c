/* Linux file-system edge cases once answered wrongly in a partition, in the
 * directory argv[1]: no-follow stats of a link to a directory, O_CREAT |
 * O_EXCL of an existing name, symlink/link/chmod and their *at forms, a
 * path through a regular file, O_NOFOLLOW of a link, renameat2 flags,
 * SEEK_DATA/SEEK_HOLE, utimensat, access, links before "..". One line per
 * check. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

static char base[2048];

static const char *at(const char *rel);
static const char *err(long r);

/* A directory of 400 entries read a little at a time: removing what was
 * read skips nothing (rm -r does this); the end, once reached, stays; a
 * position from telldir comes back to the same entry. */
static void big_dir(void) {
    char name[64];
    mkdir(at("big"), 0755);
    for (int i = 0; i < 400; i++) {
        snprintf(name, sizeof name, "big/entry-with-a-longish-name-%03d", i);
        close(open(at(name), O_CREAT | O_WRONLY, 0644));
    }
    int fd = open(at("big"), O_RDONLY | O_DIRECTORY);
    char buf[512];
    int seen = 0, calls = 0, unlinked = 0;
    long r;
    while ((r = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        calls++;
        for (long off = 0; off < r;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            off += d->d_reclen;
            if (d->d_name[0] == '.')
                continue;
            seen++;
            if (unlinkat(fd, d->d_name, 0) == 0)
                unlinked++;
        }
    }
    printf("big dir: %d entries seen, %d unlinked, %s (more than one call: %d)\n", seen,
           unlinked, r < 0 ? strerror(errno) : "end", calls > 1);
    close(open(at("big/late"), O_CREAT | O_WRONLY, 0644));
    printf("big dir: after the end, a new entry: %ld\n", (long)syscall(SYS_getdents64, fd, buf, sizeof buf));
    printf("rmdir big (one left): %s\n", err(rmdir(at("big"))));
    unlink(at("big/late"));
    printf("rmdir big: %s\n", err(rmdir(at("big"))));
    close(fd);

    mkdir(at("big2"), 0755);
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof name, "big2/f%02d", i);
        close(open(at(name), O_CREAT | O_WRONLY, 0644));
    }
    DIR *d = opendir(at("big2"));
    if (!d) {
        printf("opendir big2: %s\n", strerror(errno));
        return;
    }
    for (int i = 0; i < 20; i++)
        readdir(d);
    long mark = telldir(d);
    char first[256] = "", again[256] = "";
    struct dirent *e = readdir(d);
    if (e)
        snprintf(first, sizeof first, "%s", e->d_name);
    for (int i = 0; i < 10; i++)
        readdir(d);
    seekdir(d, mark);
    e = readdir(d);
    if (e)
        snprintf(again, sizeof again, "%s", e->d_name);
    printf("seekdir to telldir: same entry %d\n", first[0] && strcmp(first, again) == 0);
    int rest = 1;
    while (readdir(d))
        rest++;
    rewinddir(d);
    int all = 0;
    while (readdir(d))
        all++;
    printf("after seekdir: %d left; after rewinddir: %d\n", rest, all);
    closedir(d);
}

/* open(O_RDONLY | O_TRUNC) cuts the file on Linux: a shared mapping's
 * stores go with it, and the file grown again reads as zeros. */
static void trunc_read_only(void) {
    int fd = open(at("tro"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    write(fd, "hello world!", 12);
    char *m = mmap(NULL, 12, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        printf("mmap tro: %s\n", strerror(errno));
        return;
    }
    memcpy(m + 3, "XXXXXXXXX", 9);
    int ro = open(at("tro"), O_RDONLY | O_TRUNC);
    struct stat st;
    fstat(ro, &st);
    printf("open rdonly|trunc: size %ld\n", (long)st.st_size);
    ftruncate(fd, 4095);
    char buf[4096];
    long n = read(ro, buf, sizeof buf);
    int nonzero = 0;
    for (long i = 0; i < n; i++)
        nonzero += buf[i] != 0;
    printf("grown again: read %ld, nonzero %d\n", n, nonzero);
    munmap(m, 12);
    close(ro);
    close(fd);
}

static const char *at(const char *rel) {
    static char bufs[4][4096];
    static int n;
    char *b = bufs[n++ % 4];
    snprintf(b, 4096, "%s/%s", base, rel);
    return b;
}

static const char *err(long r) {
    if (r >= 0)
        return "ok";
    switch (errno) {
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case ENOTDIR: return "ENOTDIR";
    case ELOOP: return "ELOOP";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case ENXIO: return "ENXIO";
    case ENODEV: return "ENODEV";
    case EBADF: return "EBADF";
    case EACCES: return "EACCES";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    default: return strerror(errno);
    }
}

static const char *kind(mode_t m) {
    return S_ISLNK(m) ? "link" : S_ISDIR(m) ? "dir" : S_ISREG(m) ? "file" : "other";
}

/* Links met before "..": Linux resolves the link first ("down/.." is the
 * parent of where down leads, not the directory down is in), follows at
 * most 40 links in one lookup, and a chdir through a link leaves getcwd
 * naming where it leads. Each once answered as text in a partition. */
static void links_and_dotdot(void) {
    struct stat st;
    struct statfs sfs;
    char real[4096], cwd[4096], path[4096];
    mkdir(at("lk"), 0755);
    mkdir(at("lk/a"), 0755);
    mkdir(at("lk/a/b"), 0755);
    close(open(at("lk/a/f"), O_CREAT | O_WRONLY, 0644));
    close(open(at("lk/top"), O_CREAT | O_WRONLY, 0644));
    symlink("a/b", at("lk/down"));
    symlink("../a", at("lk/a/up"));
    symlink("down/../f", at("lk/viadown"));
    symlink("up/up/../f", at("lk/a/viaup"));
    long r = stat(at("lk/down/.."), &st);
    printf("stat down/..: %s %s\n", err(r), r ? "-" : kind(st.st_mode));
    printf("stat down/../f: %s\n", err(stat(at("lk/down/../f"), &st)));
    printf("stat down/../../top: %s\n", err(stat(at("lk/down/../../top"), &st)));
    printf("stat down/../top (text would find it): %s\n", err(stat(at("lk/down/../top"), &st)));
    printf("stat down/b/..: %s\n", err(stat(at("lk/down/b/.."), &st)));
    r = stat(at("lk/viadown"), &st);
    printf("stat viadown: %s %s\n", err(r), r ? "-" : kind(st.st_mode));
    printf("stat a/viaup: %s\n", err(stat(at("lk/a/viaup"), &st)));
    r = lstat(at("lk/a/up/up/up"), &st);
    printf("lstat a/up/up/up: %s %s\n", err(r), r ? "-" : kind(st.st_mode));
    int first_bad = 0;
    const char *first_err = "none";
    for (int n = 1; n <= 45 && !first_bad; n++) {
        snprintf(path, sizeof path, "%s/lk/a", base);
        for (int i = 0; i < n; i++)
            strcat(path, "/up");
        r = stat(path, &st);
        if (r) {
            first_bad = n;
            first_err = err(r);
        }
    }
    printf("a/up x n: first failure at n=%d: %s\n", first_bad, first_err);
    int dfd = open(at("lk/down"), O_RDONLY | O_DIRECTORY);
    printf("openat down, ../f: %s\n", err(fstatat(dfd, "../f", &st, 0)));
    printf("openat down, ../top: %s\n", err(fstatat(dfd, "../top", &st, 0)));
    close(dfd);
    printf("rename top to down/../moved: %s\n", err(rename(at("lk/top"), at("lk/down/../moved"))));
    printf("stat a/moved: %s\n", err(stat(at("lk/a/moved"), &st)));
    printf("link a/moved down/../hard: %s\n", err(link(at("lk/a/moved"), at("lk/down/../hard"))));
    r = stat(at("lk/a/hard"), &st);
    printf("stat a/hard: %s nlink=%ld\n", err(r), r ? 0L : (long)st.st_nlink);
    printf("mkdir down/../m: %s\n", err(mkdir(at("lk/down/../m"), 0755)));
    r = stat(at("lk/a/m"), &st);
    printf("stat a/m: %s %s\n", err(r), r ? "-" : kind(st.st_mode));
    printf("unlink down/../hard: %s\n", err(unlink(at("lk/down/../hard"))));
    printf("statfs down/../f: %s\n", err(statfs(at("lk/down/../f"), &sfs)));
    int here = open(".", O_RDONLY | O_DIRECTORY);
    if (!realpath(at("lk/a/b"), real))
        strcpy(real, "?");
    printf("chdir down: %s\n", err(chdir(at("lk/down"))));
    printf("getcwd after chdir down: %s\n",
           !getcwd(cwd, sizeof cwd) ? "error" : !strcmp(cwd, real) ? "the target" : cwd);
    printf("chdir ..: %s\n", err(chdir("..")));
    if (!realpath(at("lk/a"), real))
        strcpy(real, "?");
    printf("getcwd after chdir ..: %s\n",
           !getcwd(cwd, sizeof cwd) ? "error" : !strcmp(cwd, real) ? "its parent" : cwd);
    printf("stat f from there: %s\n", err(stat("f", &st)));
    fchdir(here);
    close(here);
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    snprintf(base, sizeof base, "%s", argv[1]);
    struct stat st;
    /* statx by number: older musl has no wrapper; stx_mode is at 28. */
    unsigned char sx[256];
    unsigned short sx_mode;
    int fd;
    long r;

    mkdir(at("dir"), 0755);
    fd = open(at("file"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    write(fd, "hello", 5);
    close(fd);

    r = symlink("dir", at("ldir"));
    printf("symlink dir: %s\n", err(r));
    r = symlinkat("file", AT_FDCWD, at("lfile"));
    printf("symlinkat file: %s\n", err(r));
    r = symlink("missing", at("dangling"));
    printf("symlink dangling: %s\n", err(r));
    r = symlink("dir", at("ldir"));
    printf("symlink again: %s\n", err(r));

    r = lstat(at("ldir"), &st);
    printf("lstat ldir: %s %s\n", err(r), kind(st.st_mode));
    r = stat(at("ldir"), &st);
    printf("stat ldir: %s %s\n", err(r), kind(st.st_mode));
    r = fstatat(AT_FDCWD, at("ldir"), &st, AT_SYMLINK_NOFOLLOW);
    printf("fstatat nofollow ldir: %s %s size=%ld\n", err(r), kind(st.st_mode), (long)st.st_size);
    r = syscall(SYS_statx, AT_FDCWD, at("ldir"), AT_SYMLINK_NOFOLLOW, 0x7ffU, sx);
    memcpy(&sx_mode, sx + 28, 2);
    printf("statx nofollow ldir: %s %s\n", err(r), kind(sx_mode));
    r = lstat(at("dangling"), &st);
    printf("lstat dangling: %s %s\n", err(r), kind(st.st_mode));
    r = stat(at("dangling"), &st);
    printf("stat dangling: %s\n", err(r));

    r = open(at("file"), O_CREAT | O_EXCL | O_WRONLY, 0644);
    printf("open excl existing: %s\n", err(r));
    r = open(at("dangling"), O_CREAT | O_EXCL | O_WRONLY, 0644);
    printf("open excl dangling link: %s\n", err(r));
    r = open(at("dir"), O_CREAT | O_RDONLY, 0644);
    printf("open creat dir: %s\n", err(r));
    r = open(at("new"), O_CREAT | O_EXCL | O_WRONLY, 0644);
    printf("open excl new: %s\n", err(r));
    if (r >= 0)
        close(r);

    r = stat(at("file/x"), &st);
    printf("stat file/x: %s\n", err(r));
    r = open(at("file/x"), O_RDONLY);
    printf("open file/x: %s\n", err(r));
    r = open(at("file/x"), O_CREAT | O_WRONLY, 0644);
    printf("open creat file/x: %s\n", err(r));
    r = open(at("lfile"), O_RDONLY | O_NOFOLLOW);
    printf("open nofollow lfile: %s\n", err(r));
    r = open(at("dangling"), O_RDONLY | O_NOFOLLOW);
    printf("open nofollow dangling: %s\n", err(r));
    r = open(at("file"), O_RDONLY | O_NOFOLLOW);
    printf("open nofollow file: %s\n", err(r));
    if (r >= 0)
        close(r);

    r = link(at("file"), at("hard"));
    printf("link: %s\n", err(r));
    stat(at("file"), &st);
    printf("nlink after link: %ld\n", (long)st.st_nlink);
    r = linkat(AT_FDCWD, at("lfile"), AT_FDCWD, at("hardlink"), 0);
    lstat(at("hardlink"), &st);
    printf("linkat of a link: %s %s\n", err(r), kind(st.st_mode));
    r = linkat(AT_FDCWD, at("lfile"), AT_FDCWD, at("hardfollow"), AT_SYMLINK_FOLLOW);
    lstat(at("hardfollow"), &st);
    printf("linkat follow: %s %s\n", err(r), kind(st.st_mode));
    r = link(at("file"), at("hard"));
    printf("link existing: %s\n", err(r));
    r = link(at("dir"), at("dirlink"));
    printf("link dir: %s\n", err(r));

    r = chmod(at("file"), 0600);
    stat(at("file"), &st);
    printf("chmod: %s %o\n", err(r), st.st_mode & 07777);
    fd = open(at("file"), O_RDONLY);
    r = fchmod(fd, 0640);
    fstat(fd, &st);
    printf("fchmod: %s %o\n", err(r), st.st_mode & 07777);
    close(fd);
    r = fchmodat(AT_FDCWD, at("lfile"), 0604, 0);
    stat(at("file"), &st);
    printf("fchmodat through link: %s %o\n", err(r), st.st_mode & 07777);
    r = chmod(at("missing"), 0600);
    printf("chmod missing: %s\n", err(r));

    r = syscall(SYS_renameat2, AT_FDCWD, at("hard"), AT_FDCWD, at("new"), 1 /* NOREPLACE */);
    printf("renameat2 noreplace existing: %s\n", err(r));
    r = syscall(SYS_renameat2, AT_FDCWD, at("hard"), AT_FDCWD, at("hard2"), 1);
    printf("renameat2 noreplace new: %s\n", err(r));
    r = syscall(SYS_renameat2, AT_FDCWD, at("hard2"), AT_FDCWD, at("x"), 8);
    printf("renameat2 bad flag: %s\n", err(r));

    struct timespec ts[2] = {{1000000000, 5}, {1100000000, 7}};
    r = utimensat(AT_FDCWD, at("file"), ts, 0);
    stat(at("file"), &st);
    printf("utimensat: %s %ld.%ld %ld.%ld\n", err(r), (long)st.st_atim.tv_sec,
           st.st_atim.tv_nsec, (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    struct timespec omit[2] = {{0, UTIME_OMIT}, {1200000000, 0}};
    r = utimensat(AT_FDCWD, at("file"), omit, 0);
    stat(at("file"), &st);
    printf("utimensat omit: %s %ld %ld\n", err(r), (long)st.st_atim.tv_sec, (long)st.st_mtim.tv_sec);
    struct timespec bad[2] = {{0, 2000000000}, {0, 0}};
    r = utimensat(AT_FDCWD, at("file"), bad, 0);
    printf("utimensat bad nsec: %s\n", err(r));

    fd = open(at("file"), O_RDONLY);
    r = lseek(fd, 2, SEEK_DATA);
    printf("seek data 2: %ld\n", r);
    r = lseek(fd, 1, SEEK_HOLE);
    printf("seek hole 1: %ld\n", r);
    r = lseek(fd, 5, SEEK_DATA);
    printf("seek data at end: %s\n", err(r));
    close(fd);

    printf("access file R_OK: %s\n", err(access(at("file"), R_OK)));
    printf("access file X_OK: %s\n", err(access(at("file"), X_OK)));
    printf("access missing: %s\n", err(access(at("missing"), F_OK)));
    printf("access dir X_OK: %s\n", err(faccessat(AT_FDCWD, at("dir"), X_OK, 0)));
    printf("access dangling nofollow: %s\n",
           err(faccessat(AT_FDCWD, at("dangling"), F_OK, AT_SYMLINK_NOFOLLOW)));

    /* A trailing slash names a directory (following a link); ".." walks
     * through what precedes it. */
    printf("open creat m/: %s\n", err(open(at("m/"), O_CREAT | O_RDWR, 0644)));
    printf("open creat file/: %s\n", err(open(at("file/"), O_CREAT | O_RDWR, 0644)));
    r = open(at("ldir/"), O_RDONLY | O_NOFOLLOW);
    printf("open nofollow ldir/: %s\n", err(r));
    if (r >= 0)
        close(r);
    printf("open lfile/: %s\n", err(open(at("lfile/"), O_RDONLY)));
    r = lstat(at("ldir/"), &st);
    printf("lstat ldir/: %s %s\n", err(r), kind(st.st_mode));
    printf("stat file/: %s\n", err(stat(at("file/"), &st)));
    printf("unlink dir/: %s\n", err(unlink(at("dir/"))));
    printf("unlink ldir/: %s\n", err(unlink(at("ldir/"))));
    printf("unlink file/: %s\n", err(unlink(at("file/"))));
    printf("symlink m/: %s\n", err(symlink("x", at("m/"))));
    printf("symlink file/: %s\n", err(symlink("x", at("file/"))));
    printf("link file m/: %s\n", err(link(at("file"), at("m/"))));
    printf("link file/ m: %s\n", err(link(at("file/"), at("m"))));
    printf("link dir/ m: %s\n", err(link(at("dir/"), at("m"))));
    printf("rename file m/: %s\n", err(rename(at("file"), at("m/"))));
    printf("rename m/ q: %s\n", err(rename(at("m/"), at("q"))));
    printf("rename dir q/: %s\n", err(rename(at("dir"), at("q/"))));
    printf("rename q/ dir: %s\n", err(rename(at("q/"), at("dir"))));
    printf("rmdir ldir/: %s\n", err(rmdir(at("ldir/"))));
    printf("readlink ldir/: %s\n", err(readlink(at("ldir/"), (char[64]){0}, 64)));
    printf("chmod file/: %s\n", err(chmod(at("file/"), 0644)));
    printf("access file/: %s\n", err(access(at("file/"), F_OK)));
    printf("stat missing/..: %s\n", err(stat(at("missing/../file"), &st)));
    printf("stat file/..: %s\n", err(stat(at("file/../file"), &st)));
    printf("stat dir/..: %s\n", err(stat(at("dir/../file"), &st)));
    printf("open empty path: %s\n", err(open("", O_RDONLY)));

    /* Found by fsdiff. A directory descriptor: read EISDIR, mmap ENODEV,
     * SEEK_END EINVAL (as tmpfs). */
    fd = open(at("dir"), O_RDONLY | O_DIRECTORY);
    char b[16];
    printf("read dir: %s\n", err(read(fd, b, sizeof b)));
    void *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    printf("mmap dir: %s\n", err(m == MAP_FAILED ? -1 : 0));
    close(fd);
    /* A zero-byte write moves nothing even with O_APPEND; pwrite with
     * O_APPEND appends. */
    fd = open(at("app"), O_CREAT | O_RDWR | O_APPEND, 0644);
    write(fd, "0123456789", 10);
    lseek(fd, 3, SEEK_SET);
    r = write(fd, "", 0);
    printf("append write 0: %ld pos=%ld\n", r, (long)lseek(fd, 0, SEEK_CUR));
    r = pwrite(fd, "ab", 2, 1);
    fstat(fd, &st);
    printf("append pwrite: %ld size=%ld pos=%ld\n", r, (long)st.st_size, (long)lseek(fd, 0, SEEK_CUR));
    /* fchmod and futimens of an open file whose name is gone. */
    unlink(at("app"));
    r = fchmod(fd, 0600);
    fstat(fd, &st);
    printf("fchmod unlinked: %s %o nlink=%ld\n", err(r), st.st_mode & 07777, (long)st.st_nlink);
    printf("futimens unlinked: %s\n", err(futimens(fd, NULL)));
    close(fd);
    /* O_APPEND cleared by F_SETFL: the next write goes to the position,
     * not the end (the file was truncated meanwhile). */
    fd = open(at("app2"), O_CREAT | O_RDWR | O_APPEND, 0644);
    write(fd, "0123456789", 10);
    close(open(at("app2"), O_WRONLY | O_TRUNC));
    fcntl(fd, F_SETFL, 0);
    write(fd, "ab", 2);
    fstat(fd, &st);
    printf("write after F_SETFL 0: size=%ld\n", (long)st.st_size);
    close(fd);
    /* readlink through a directory link; check order of renameat2,
     * utimensat and open flags. */
    symlink("dir", at("dir/inner"));
    printf("readlink ldir/inner: %s\n", err(readlink(at("ldir/inner"), b, sizeof b)));
    r = syscall(SYS_renameat2, AT_FDCWD, at("missing"), AT_FDCWD, at("file/x"), 1);
    printf("renameat2 noreplace missing file/x: %s\n", err(r));
    printf("utimensat bad nsec missing: %s\n", err(utimensat(AT_FDCWD, at("missing"), bad, 0)));
    printf("open creat|directory: %s\n", err(open(at("missing/../x"), O_CREAT | O_DIRECTORY, 0644)));
    /* A link whose target's ".." passes through itself loops. */
    symlink("self/../file", at("self"));
    printf("stat self-loop: %s\n", err(stat(at("self"), &st)));
    symlink("gone/../file", at("viagone"));
    printf("stat via missing dir: %s\n", err(stat(at("viagone"), &st)));
    big_dir();
    trunc_read_only();
    links_and_dotdot();
    return 0;
}
