/* Differential file-system exerciser: a bounded random sequence of file
 * system calls on a small set of names, one deterministic line per call.
 *
 *   fsdiff DIR run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT
 *                                      calls each, DIR reset before each
 *   fsdiff DIR replay SEED COUNT I,J,… only calls I, J, … of that sequence
 *   fsdiff DIR probe                   fixed probes of known differences
 *
 * Call i of a seed depends only on (seed, i), so any subset of a sequence
 * can be replayed (the test shrinks a failing sequence that way). Each line
 * is "INDEX GROUP ARGS = RESULT [DETAILS] [~ SOFT]": GROUP names the row of
 * the conformance table, RESULT is "ok", a value or an errno name, DETAILS
 * are normalized outputs (file type, mode, size, link count, content
 * hashes — never inode or device numbers or absolute times). What follows
 * "~" is compared only for the table: results Linux itself lets vary by
 * file system (where the holes are) or that a partition is known to give
 * differently (file mapping coherence), and do not change later results.
 * The run is the same on the host and in a partition; the test compares. */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define NSLOTS 4
#define NMAPS 2

static int slot[NSLOTS] = {-1, -1, -1, -1};
static struct {
    void *addr;
    size_t len;
    int fd; /* a duplicate, for the file's current size */
    int writable;
} maps[NMAPS];
static int dfd = -1;
static char root[4096];

static const char *names[] = {
    "f0", "f1", "f2", "d0", "d0/f3", "d0/d1", "d0/d1/f4", "s0", "s1", "d0/s2", "f0/x", "s0/x",
    "f0", "f1", "d0", "s0", "s1", "f2/", "d0/", "s1/", "d0/../f1", "d0/d1/../f3",
    "s1/../f1", "s1/../d1/f4", "d0/s2/../f3",
};
#define NNAMES (sizeof names / sizeof *names)
static const char *targets[] = {
    "f0", "d0", "nope", "s0", "s1", "d0/f3", "d0/../f1", "d1", "f0/x", "f2", "d0/d1", "s1/..",
};
#define NTARGETS (sizeof targets / sizeof *targets)

/* ---- deterministic randomness: call i of seed s has its own stream ---- */

static uint64_t rng;
static uint64_t next(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static unsigned pick(unsigned n) { return (unsigned)(next() % n); }
static const char *name(void) { return names[pick(NNAMES)]; }

static uint64_t fnv(const unsigned char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static const char *ename(int e) {
    static char buf[16];
    switch (e) {
#define E(x) case x: return #x;
        E(EPERM) E(ENOENT) E(EIO) E(EBADF) E(EAGAIN) E(ENOMEM) E(EACCES) E(EFAULT)
        E(EBUSY) E(EEXIST) E(EXDEV) E(ENODEV) E(ENOTDIR) E(EISDIR) E(EINVAL)
        E(EMFILE) E(EFBIG) E(ENOSPC) E(ESPIPE) E(EROFS) E(EMLINK) E(ENAMETOOLONG)
        E(ENOSYS) E(ENOTEMPTY) E(ELOOP) E(ENXIO) E(EOPNOTSUPP) E(EOVERFLOW) E(ETXTBSY)
#undef E
    default:
        snprintf(buf, sizeof buf, "E%d", e);
        return buf;
    }
}

/* The line being built. */
static char line[8192];
static size_t len;
static void add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void add(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + len, sizeof line - len, fmt, ap);
    va_end(ap);
    if (n > 0)
        len += (size_t)n < sizeof line - len ? (size_t)n : sizeof line - len - 1;
}
static void begin(unsigned i, const char *group) {
    len = 0;
    add("%u %s", i, group);
}
static void end(void) { printf("%s\n", line); }
/* Appends " = ok" / " = VALUE" or " = ERRNO"; returns whether r succeeded. */
static int result(long r) {
    if (r < 0) {
        add(" = %s", ename(errno));
        return 0;
    }
    return 1;
}

static char kind(mode_t m) {
    return S_ISLNK(m) ? 'l' : S_ISDIR(m) ? 'd' : S_ISREG(m) ? 'f' : S_ISFIFO(m) ? 'p' : '?';
}
static void describe(const struct stat *st) {
    add(" %c %04o size=%lld nlink=%lu", kind(st->st_mode), st->st_mode & 07777,
        S_ISDIR(st->st_mode) ? 0LL : (long long)st->st_size, (unsigned long)st->st_nlink);
}

static int slot_fd(unsigned s) { return slot[s % NSLOTS]; }

/* Bytes written: a pattern from the call's stream, so contents differ. */
static unsigned char wbuf[70000];
static void fill(size_t n) {
    uint64_t v = next();
    for (size_t i = 0; i < n; i++)
        wbuf[i] = (unsigned char)(v >> (8 * (i % 8))) + (unsigned char)i;
}
static size_t odd_len(void) {
    static const size_t lens[] = {0, 1, 7, 100, 511, 4095, 4097, 9000, 65537};
    return lens[pick(sizeof lens / sizeof *lens)];
}
static long long odd_off(void) {
    static const long long offs[] = {0, 1, 3, 511, 4095, 4096, 4097, 8191, 12345, 65535, 70001};
    return offs[pick(sizeof offs / sizeof *offs)];
}

/* ---- the calls ---- */

static void op_open(unsigned i) {
    static const struct {
        int flags;
        const char *text;
    } combos[] = {
        {O_RDONLY, "RDONLY"},
        {O_WRONLY, "WRONLY"},
        {O_RDWR, "RDWR"},
        {O_RDWR | O_CREAT, "RDWR|CREAT"},
        {O_WRONLY | O_CREAT | O_EXCL, "WRONLY|CREAT|EXCL"},
        {O_RDWR | O_CREAT | O_TRUNC, "RDWR|CREAT|TRUNC"},
        {O_WRONLY | O_TRUNC, "WRONLY|TRUNC"},
        {O_WRONLY | O_APPEND, "WRONLY|APPEND"},
        {O_RDWR | O_APPEND | O_CREAT, "RDWR|APPEND|CREAT"},
        {O_RDONLY | O_DIRECTORY, "RDONLY|DIRECTORY"},
        {O_RDONLY | O_NOFOLLOW, "RDONLY|NOFOLLOW"},
        {O_RDWR | O_CREAT | O_NOFOLLOW, "RDWR|CREAT|NOFOLLOW"},
        {O_RDONLY | O_CREAT, "RDONLY|CREAT"},
        {O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, "WRONLY|CREAT|EXCL|NOFOLLOW"},
        {O_RDONLY | O_CREAT | O_DIRECTORY, "RDONLY|CREAT|DIRECTORY"},
        {O_WRONLY | O_DIRECTORY, "WRONLY|DIRECTORY"},
        {O_RDONLY | O_TRUNC, "RDONLY|TRUNC"},
    };
    unsigned c = pick(sizeof combos / sizeof *combos);
    unsigned s = pick(NSLOTS);
    const char *n = name();
    int at = pick(2);
    static const mode_t modes[] = {0644, 0600, 0755, 0444};
    mode_t mode = modes[pick(4)];
    begin(i, "open");
    add("(%s) %s%s mode=%o slot=%u", combos[c].text, at ? "at " : "", n, mode, s);
    int fd = at ? openat(dfd, n, combos[c].flags, mode) : open(n, combos[c].flags, mode);
    if (result(fd)) {
        struct stat st;
        fstat(fd, &st);
        add(" = ok");
        describe(&st);
        if (slot[s] >= 0)
            close(slot[s]);
        slot[s] = fd;
    }
    end();
}

static void op_creat(unsigned i) {
    const char *n = name();
    unsigned s = pick(NSLOTS);
    begin(i, "creat");
    add(" %s slot=%u", n, s);
    int fd = creat(n, 0640);
    if (result(fd)) {
        struct stat st;
        fstat(fd, &st);
        add(" = ok");
        describe(&st);
        if (slot[s] >= 0)
            close(slot[s]);
        slot[s] = fd;
    }
    end();
}

static void op_close(unsigned i) {
    unsigned s = pick(NSLOTS);
    begin(i, "close");
    add(" slot=%u", s);
    if (slot[s] < 0) {
        add(" = empty");
    } else if (result(close(slot[s]))) {
        add(" = ok");
    }
    slot[s] = -1;
    end();
}

static void op_rw(unsigned i) {
    unsigned s = pick(NSLOTS);
    int fd = slot_fd(s);
    unsigned kind_ = pick(4); /* read, write, pread, pwrite */
    size_t n = odd_len();
    long long off = odd_off();
    static const char *groups[] = {"read", "write", "pread", "pwrite"};
    begin(i, groups[kind_]);
    add(" slot=%u len=%zu", s, n);
    if (kind_ >= 2)
        add(" off=%lld", off);
    if (fd < 0) {
        add(" = empty");
        end();
        return;
    }
    ssize_t r;
    switch (kind_) {
    case 0:
        r = read(fd, wbuf, n);
        break;
    case 1:
        fill(n);
        r = write(fd, wbuf, n);
        break;
    case 2:
        r = pread(fd, wbuf, n, off);
        break;
    default:
        fill(n);
        r = pwrite(fd, wbuf, n, off);
        break;
    }
    if (result(r)) {
        add(" = %zd", r);
        if (kind_ % 2 == 0)
            add(" hash=%016llx", (unsigned long long)fnv(wbuf, (size_t)r));
        add(" pos=%lld", (long long)lseek(fd, 0, SEEK_CUR));
    }
    end();
}

/* preadv2/pwritev2 (offset -1: the position) with RWF_* flags that do
 * not depend on the host's file system or page cache (not NOWAIT,
 * DONTCACHE), in two pieces. */
static void op_rwv(unsigned i) {
    static const long flags[] = {0, 0, 0, 1, 2, 4, 0x10, 0x20, 0x30, 0x40, 0x100, 0x200};
    unsigned s = pick(NSLOTS);
    int fd = slot_fd(s);
    int write = pick(2);
    size_t n = odd_len();
    size_t first = n ? pick((unsigned)n + 1) : 0;
    long long off = pick(3) == 0 ? -1 : odd_off();
    long f = flags[pick(sizeof flags / sizeof *flags)];
    begin(i, write ? "pwritev2" : "preadv2");
    add(" slot=%u len=%zu+%zu off=%lld flags=%#lx", s, first, n - first, off, f);
    if (fd < 0) {
        add(" = empty");
        end();
        return;
    }
    struct iovec v[2] = {{wbuf, first}, {wbuf + first, n - first}};
    if (write)
        fill(n);
    long r = syscall(write ? 328 : 327, fd, v, 2, off, 0L, f);
    if (result(r)) {
        add(" = %ld", r);
        if (!write)
            add(" hash=%016llx", (unsigned long long)fnv(wbuf, (size_t)r));
        add(" pos=%lld", (long long)lseek(fd, 0, SEEK_CUR));
    }
    end();
}

static void op_lseek(unsigned i) {
    unsigned s = pick(NSLOTS);
    int fd = slot_fd(s);
    static const int whences[] = {SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA, SEEK_HOLE};
    static const char *wn[] = {"SET", "CUR", "END", "DATA", "HOLE"};
    unsigned w = pick(5);
    long long off = odd_off();
    if (w == 1 || w == 2)
        off -= (long long)pick(3) * 4096;
    struct stat st;
    int dir = fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    begin(i, dir ? "lseek(directory)" : w >= 3 ? "lseek(SEEK_DATA/SEEK_HOLE)" : "lseek");
    add(" slot=%u off=%lld %s", s, off, wn[w]);
    if (fd < 0) {
        add(" = empty");
        end();
        return;
    }
    long long was = lseek(fd, 0, SEEK_CUR);
    long long r = lseek(fd, off, whences[w]);
    if (dir && !(w == 0 && off == 0)) {
        /* A directory's position is an opaque cookie of its file system
         * (only a rewind to 0 means the same everywhere): table only, and
         * put back. */
        add(" = ~ dir %s", r < 0 ? ename(errno) : "ok");
        if (r >= 0)
            add(" %lld", r);
        lseek(fd, was, SEEK_SET);
    } else if (w >= 3) {
        /* Where holes are is up to the file system (a file of holes has no
         * data: ENXIO): the answer goes to the table only, and the
         * position is put back so later calls do not depend on it. */
        add(" = ~ %s", r < 0 ? ename(errno) : "ok");
        if (r >= 0)
            add(" %lld", r);
        lseek(fd, was, SEEK_SET);
    } else if (result(r)) {
        add(" = %lld", r);
    }
    end();
}

static void op_truncate(unsigned i) {
    static const long long sizes[] = {0, 1, 5, 4095, 4097, 10000, 70000, -1};
    long long sz = sizes[pick(8)];
    if (pick(2)) {
        unsigned s = pick(NSLOTS);
        begin(i, "ftruncate");
        add(" slot=%u len=%lld", s, sz);
        if (slot_fd(s) < 0)
            add(" = empty");
        else if (result(ftruncate(slot_fd(s), sz)))
            add(" = ok");
    } else {
        const char *n = name();
        begin(i, "truncate");
        add(" %s len=%lld", n, sz);
        if (result(truncate(n, sz)))
            add(" = ok");
    }
    end();
}

static void op_stat(unsigned i) {
    unsigned v = pick(7);
    const char *n = name();
    struct stat st;
    long r;
    switch (v) {
    case 0:
        begin(i, "stat");
        add(" %s", n);
        r = stat(n, &st);
        break;
    case 1:
        begin(i, "lstat");
        add(" %s", n);
        r = lstat(n, &st);
        break;
    case 2:
        begin(i, "fstatat");
        add(" %s", n);
        r = fstatat(dfd, n, &st, 0);
        break;
    case 3:
        begin(i, "fstatat(AT_SYMLINK_NOFOLLOW)");
        add(" %s", n);
        r = fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW);
        break;
    case 4:
    case 5: {
        /* statx by number: stx_nlink at 16, stx_mode at 28, stx_size at 40. */
        unsigned char b[256];
        int flags = v == 5 ? AT_SYMLINK_NOFOLLOW : 0;
        unsigned mask = 0x7ffU;
        /* Now and then the sync flags, an unknown flag, the birth time or
           the reserved mask bit: Linux refuses some before the path. */
        switch (pick(8)) {
        case 0: flags |= 0x2000 << pick(2); break; /* FORCE_SYNC, DONT_SYNC */
        case 1: flags |= 0x6000; break;
        case 2: flags |= 0x1000000; break;
        case 3: mask |= 0x80000000U; break;
        case 4: mask = 0x800U; break;
        }
        begin(i, v == 5 ? "statx(AT_SYMLINK_NOFOLLOW)" : "statx");
        add(" %s flags=%#x mask=%#x", n, flags, mask);
        memset(b, 0, sizeof b);
        r = syscall(SYS_statx, dfd, n, flags, mask, b);
        if (r >= 0) {
            /* Whether stx_mask (at 0) says a birth time came. */
            uint32_t got;
            memcpy(&got, b, 4);
            add(" btime=%d", !!(got & 0x800U));
        }
        if (r >= 0) {
            uint32_t nlink;
            uint16_t mode;
            uint64_t size;
            memcpy(&nlink, b + 16, 4);
            memcpy(&mode, b + 28, 2);
            memcpy(&size, b + 40, 8);
            memset(&st, 0, sizeof st);
            st.st_nlink = nlink;
            st.st_mode = mode;
            st.st_size = (off_t)size;
        }
        break;
    }
    default: {
        unsigned s = pick(NSLOTS);
        begin(i, "fstat");
        add(" slot=%u", s);
        if (slot_fd(s) < 0) {
            add(" = empty");
            end();
            return;
        }
        r = fstat(slot_fd(s), &st);
        break;
    }
    }
    if (result(r)) {
        add(" = ok");
        describe(&st);
    }
    end();
}

static void op_readlink(unsigned i) {
    const char *n = name();
    char buf[256];
    int at = pick(2);
    begin(i, "readlink");
    add(" %s%s", at ? "at " : "", n);
    ssize_t r = at ? readlinkat(dfd, n, buf, sizeof buf - 1) : readlink(n, buf, sizeof buf - 1);
    if (result(r)) {
        buf[r] = 0;
        add(" = %s", buf);
    }
    end();
}

static void op_symlink(unsigned i) {
    const char *t = targets[pick(NTARGETS)];
    const char *n = name();
    int at = pick(2);
    begin(i, "symlink");
    add(" %s%s -> %s", at ? "at " : "", n, t);
    if (result(at ? symlinkat(t, dfd, n) : symlink(t, n)))
        add(" = ok");
    end();
}

static void op_link(unsigned i) {
    const char *a = name(), *b = name();
    unsigned v = pick(3);
    begin(i, v == 2 ? "linkat(AT_SYMLINK_FOLLOW)" : "link");
    add(" %s%s %s", v == 1 ? "at " : "", a, b);
    long r = v == 0 ? link(a, b) : linkat(dfd, a, dfd, b, v == 2 ? AT_SYMLINK_FOLLOW : 0);
    if (result(r)) {
        struct stat st;
        add(" = ok");
        if (lstat(b, &st) == 0)
            describe(&st);
    }
    end();
}

static void op_rename(unsigned i) {
    const char *a = name(), *b = name();
    unsigned v = pick(3);
    begin(i, v == 2 ? "renameat2(RENAME_NOREPLACE)" : "rename");
    add(" %s%s %s", v == 1 ? "at " : "", a, b);
    long r = v == 0   ? rename(a, b)
             : v == 1 ? renameat(dfd, a, dfd, b)
                      : syscall(SYS_renameat2, dfd, a, dfd, b, 1 /* RENAME_NOREPLACE */);
    if (result(r))
        add(" = ok");
    end();
}

static void op_unlink(unsigned i) {
    const char *n = name();
    unsigned v = pick(4);
    static const char *groups[] = {"unlink", "unlinkat", "rmdir", "unlinkat(AT_REMOVEDIR)"};
    begin(i, groups[v]);
    add(" %s", n);
    long r = v == 0   ? unlink(n)
             : v == 1 ? unlinkat(dfd, n, 0)
             : v == 2 ? rmdir(n)
                      : unlinkat(dfd, n, AT_REMOVEDIR);
    if (result(r))
        add(" = ok");
    end();
}

static void op_mkdir(unsigned i) {
    const char *n = name();
    int at = pick(2);
    begin(i, "mkdir");
    add(" %s%s", at ? "at " : "", n);
    if (result(at ? mkdirat(dfd, n, 0750) : mkdir(n, 0750))) {
        struct stat st;
        add(" = ok");
        if (stat(n, &st) == 0)
            describe(&st);
    }
    end();
}

static void op_chmod(unsigned i) {
    static const mode_t modes[] = {0644, 0600, 0755, 0444, 0, 01777, 04755, 0700};
    mode_t m = modes[pick(8)];
    unsigned v = pick(3);
    const char *n = name();
    struct stat st;
    long r;
    if (v == 2) {
        unsigned s = pick(NSLOTS);
        begin(i, "fchmod");
        add(" slot=%u %04o", s, m);
        if (slot_fd(s) < 0) {
            add(" = empty");
            end();
            return;
        }
        r = fchmod(slot_fd(s), m);
        if (result(r) && fstat(slot_fd(s), &st) == 0) {
            add(" = ok");
            describe(&st);
        }
        end();
        return;
    }
    begin(i, v ? "fchmodat" : "chmod");
    add(" %s %04o", n, m);
    r = v ? fchmodat(dfd, n, m, 0) : chmod(n, m);
    if (result(r)) {
        add(" = ok");
        if (stat(n, &st) == 0)
            describe(&st);
    }
    end();
}

static void op_utimens(unsigned i) {
    const char *n = name();
    unsigned v = pick(5);
    int nofollow = pick(3) == 0;
    struct timespec ts[2];
    static const char *vn[] = {"set", "now", "omit-atime", "null", "bad-nsec"};
    switch (v) {
    case 0:
        ts[0] = (struct timespec){1000000000 + (long)pick(1000), (long)pick(1000000)};
        ts[1] = (struct timespec){1100000000 + (long)pick(1000), (long)pick(1000000)};
        break;
    case 1:
        ts[0] = ts[1] = (struct timespec){0, UTIME_NOW};
        break;
    case 2:
        ts[0] = (struct timespec){0, UTIME_OMIT};
        ts[1] = (struct timespec){1200000000, 5};
        break;
    case 4:
        ts[0] = (struct timespec){0, 1000000000};
        ts[1] = (struct timespec){0, 0};
        break;
    }
    begin(i, nofollow ? "utimensat(AT_SYMLINK_NOFOLLOW)" : "utimensat");
    add(" %s %s", n, vn[v]);
    long r = utimensat(dfd, n, v == 3 ? NULL : ts, nofollow ? AT_SYMLINK_NOFOLLOW : 0);
    if (result(r)) {
        struct stat st;
        add(" = ok");
        if ((nofollow ? lstat(n, &st) : stat(n, &st)) == 0) {
            time_t now = time(NULL);
            if (v == 0 || v == 2)
                add(" atime=%s mtime=%lld.%09ld", v == 2 ? "kept" : "set",
                    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
            if (v == 0)
                add(" atime=%lld.%09ld", (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec);
            if (v == 1 || v == 3)
                add(" mtime_recent=%d", st.st_mtime >= now - 30 && st.st_mtime <= now + 30);
        }
    }
    end();
}

static void op_getdents(unsigned i) {
    static const char *dirs[] = {".", "d0", "d0/d1", "f0", "s0", "nope"};
    const char *n = dirs[pick(6)];
    unsigned s = pick(NSLOTS);
    int on_slot = pick(3) == 0;
    int fd;
    if (on_slot) {
        /* On a descriptor the sequence holds: the position carries over
         * between calls (a second call at the end returns nothing). */
        begin(i, "getdents64(open descriptor)");
        add(" slot=%u", s);
        fd = slot_fd(s);
        if (fd < 0) {
            add(" = empty");
            end();
            return;
        }
        char buf[4096];
        long r = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (result(r)) {
            int count = 0;
            for (long off = 0; off < r; count++) {
                unsigned short reclen;
                memcpy(&reclen, buf + off + 16, 2);
                off += reclen;
            }
            add(" = %d", count);
        }
        end();
        return;
    }
    begin(i, "getdents64");
    add(" %s", n);
    fd = openat(dfd, n, O_RDONLY | O_DIRECTORY);
    if (!result(fd)) {
        end();
        return;
    }
    char ents[64][64];
    int count = 0;
    char buf[4096];
    long r;
    while ((r = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < r;) {
            unsigned short reclen;
            memcpy(&reclen, buf + off + 16, 2);
            unsigned char ty = (unsigned char)buf[off + 18];
            if (count < 64)
                snprintf(ents[count++], 64, "%s:%u", buf + off + 19, ty);
            off += reclen;
        }
    }
    if (r < 0) {
        result(r);
    } else {
        qsort(ents, (size_t)count, 64, (int (*)(const void *, const void *))strcmp);
        add(" = %d", count);
        for (int k = 0; k < count; k++)
            add(" %s", ents[k]);
    }
    close(fd);
    end();
}

static void op_access(unsigned i) {
    static const int modes[] = {F_OK, R_OK, W_OK, X_OK, R_OK | W_OK};
    int m = modes[pick(5)];
    const char *n = name();
    unsigned v = pick(3);
    begin(i, v == 2 ? "faccessat(AT_SYMLINK_NOFOLLOW)" : v ? "faccessat" : "access");
    add(" %s mode=%d", n, m);
    long r = v == 0 ? access(n, m) : faccessat(dfd, n, m, v == 2 ? AT_SYMLINK_NOFOLLOW : 0);
    if (result(r))
        add(" = ok");
    end();
}

static void op_fsync(unsigned i) {
    unsigned s = pick(NSLOTS);
    int data = pick(2);
    begin(i, data ? "fdatasync" : "fsync");
    add(" slot=%u", s);
    if (slot_fd(s) < 0)
        add(" = empty");
    else if (result(data ? fdatasync(slot_fd(s)) : fsync(slot_fd(s))))
        add(" = ok");
    end();
}

static void op_cat(unsigned i) {
    const char *n = name();
    begin(i, "read-whole-file");
    add(" %s", n);
    int fd = open(n, O_RDONLY);
    if (!result(fd)) {
        end();
        return;
    }
    static unsigned char all[1 << 18];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof all && (r = read(fd, all + got, sizeof all - got)) > 0)
        got += (size_t)r;
    if (r < 0 && got == 0)
        result(r);
    else
        add(" = %zu hash=%016llx", got, (unsigned long long)fnv(all, got));
    close(fd);
    end();
}

static sigjmp_buf fault;
static void on_fault(int sig) {
    (void)sig;
    siglongjmp(fault, 1);
}

static void op_mmap(unsigned i) {
    unsigned k = pick(NMAPS);
    /* map, read, unmap, store, msync; an empty map slot is mostly filled */
    unsigned v = maps[k].addr || pick(4) == 0 ? pick(5) : 0;
    if (v == 0) {
        unsigned s = pick(NSLOTS);
        int shared = pick(2);
        /* A shared mapping is writable half the time (EACCES unless the
         * descriptor is open for reading and writing). */
        int prot = PROT_READ | (shared && pick(2) ? PROT_WRITE : 0);
        begin(i, shared ? (prot & PROT_WRITE ? "mmap(MAP_SHARED,PROT_WRITE)" : "mmap(MAP_SHARED)")
                        : "mmap(MAP_PRIVATE)");
        add(" map=%u slot=%u", k, s);
        struct stat st;
        int fd = slot_fd(s), own = -1;
        if (fd < 0) {
            /* No descriptor in the slot: open a name for reading and
             * writing (a file, or the errno Linux gives for it). */
            const char *n = name();
            own = fd = openat(dfd, n, O_RDWR);
            add(" open(%s)", n);
            if (fd < 0) {
                add(" = %s", ename(errno));
                end();
                return;
            }
        }
        if (fstat(fd, &st) != 0) {
            add(" = empty");
            if (own >= 0)
                close(own);
            end();
            return;
        }
        size_t l = st.st_size > 0 ? (size_t)st.st_size : 4096;
        void *p = mmap(NULL, l, prot, shared ? MAP_SHARED : MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            result(-1);
        } else {
            if (maps[k].addr) {
                munmap(maps[k].addr, maps[k].len);
                close(maps[k].fd);
            }
            maps[k].addr = p;
            maps[k].len = l;
            maps[k].fd = dup(fd);
            maps[k].writable = prot & PROT_WRITE;
            add(" = ok len=%zu", l);
        }
        if (own >= 0)
            close(own);
        end();
        return;
    }
    static const char *what[] = {"", "mmap-read", "munmap", "mmap-store", "msync(MAP_SHARED)"};
    begin(i, what[v]);
    add(" map=%u", k);
    if (!maps[k].addr) {
        add(" = empty");
    } else if (v == 3 || v == 4) {
        /* A store inside the file's current size (past its last page is
         * SIGBUS), seen by read(2) at once; msync writes it to the file. */
        struct stat st;
        fstat(maps[k].fd, &st);
        size_t l = maps[k].len < (size_t)st.st_size ? maps[k].len : (size_t)st.st_size;
        if (!maps[k].writable) {
            add(" = read-only");
        } else if (v == 4) {
            result(msync(maps[k].addr, maps[k].len, pick(2) ? MS_SYNC : MS_ASYNC));
        } else if (l == 0) {
            add(" = nothing");
        } else {
            size_t at = pick((unsigned)l);
            volatile size_t n = 1 + pick(64);
            if (at + n > l)
                n = l - at;
            unsigned char c = (unsigned char)('A' + pick(26));
            if (sigsetjmp(fault, 1) == 0) {
                memset((char *)maps[k].addr + at, c, n);
                char back[64];
                ssize_t r = pread(maps[k].fd, back, n, (off_t)at);
                add(" at=%zu n=%zu = ok pread=%zd same=%d", at, n, r,
                    r == (ssize_t)n && memcmp(back, (char *)maps[k].addr + at, n) == 0);
            } else {
                add(" = SIGBUS");
            }
        }
    } else if (v == 1) {
        /* Only bytes inside the file now (a page past its end is SIGBUS);
         * the mapping shows later writes and truncation, as the file's
         * pages are one with its mappings' (mm::shared). */
        struct stat st;
        fstat(maps[k].fd, &st);
        size_t l = maps[k].len < (size_t)st.st_size ? maps[k].len : (size_t)st.st_size;
        if (sigsetjmp(fault, 1) == 0) {
            uint64_t h = fnv(maps[k].addr, l);
            add(" = ok %zu hash=%016llx", l, (unsigned long long)h);
        } else {
            add(" = SIGBUS");
        }
    } else {
        munmap(maps[k].addr, maps[k].len);
        close(maps[k].fd);
        maps[k].addr = NULL;
        add(" = ok");
    }
    end();
}

/* dup (the copy shares the file position and flags), F_GETFL, F_SETFL. */
static void op_fcntl(unsigned i) {
    unsigned s = pick(NSLOTS), t = pick(NSLOTS), v = pick(3);
    int fd = slot_fd(s);
    static const char *groups[] = {"dup", "fcntl(F_GETFL)", "fcntl(F_SETFL)"};
    begin(i, groups[v]);
    add(" slot=%u", s);
    if (v == 0)
        add(" to=%u", t);
    int append = pick(2);
    if (v == 2)
        add(" %s", append ? "APPEND" : "0");
    if (fd < 0) {
        add(" = empty");
        end();
        return;
    }
    if (v == 0) {
        if (s == t) {
            add(" = same");
        } else {
            int n = dup(fd);
            if (result(n)) {
                if (slot[t] >= 0)
                    close(slot[t]);
                slot[t] = n;
                add(" = ok");
            }
        }
    } else if (v == 1) {
        int fl = fcntl(fd, F_GETFL);
        if (result(fl))
            add(" = %o", fl & (O_ACCMODE | O_APPEND | O_NONBLOCK));
    } else if (result(fcntl(fd, F_SETFL, append ? O_APPEND : 0))) {
        add(" = ok");
    }
    end();
}

/* The size and content hash of the file open as fd (for what a transfer
 * or fallocate left). */
static void add_file(const char *what, int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    static unsigned char all[1 << 18];
    ssize_t n = pread(fd, all, sizeof all, 0);
    add(" %s:size=%lld hash=%016llx", what, (long long)st.st_size,
        (unsigned long long)fnv(all, n > 0 ? (size_t)n : 0));
}

/* copy_file_range and sendfile between two slots (Java's Files.copy and
 * FileChannel.transferTo use them): each offset given (and advanced) or
 * the descriptor's position, lengths across and past the end. */
static void op_xfer(unsigned i) {
    unsigned s = pick(NSLOTS), t = pick(NSLOTS), v = pick(2);
    int give_in = pick(2), give_out = pick(2);
    long long oin = pick(10) == 0 ? -1 : odd_off(), oout = pick(10) == 0 ? -1 : odd_off();
    size_t n = pick(6) == 0 ? (size_t)1 << 30 : odd_len();
    unsigned flags = pick(10) == 0 ? 1 : 0;
    begin(i, v ? "sendfile" : "copy_file_range");
    add(" slot=%u to=%u len=%zu", s, t, n);
    if (give_in)
        add(" in_off=%lld", oin);
    if (!v && give_out)
        add(" out_off=%lld", oout);
    if (!v && flags)
        add(" flags=%u", flags);
    int in = slot_fd(s), out = slot_fd(t);
    if (in < 0 || out < 0) {
        add(" = empty");
        end();
        return;
    }
    /* sendfile within one file reads pages its own writes change (Linux
     * splices page references): what it copies depends on page and pipe
     * sizes, not on the interface. */
    struct stat si, so;
    if (v && fstat(in, &si) == 0 && fstat(out, &so) == 0 && si.st_ino == so.st_ino &&
        si.st_dev == so.st_dev && S_ISREG(si.st_mode)) {
        add(" = same-file");
        end();
        return;
    }
    off_t a = (off_t)oin, b = (off_t)oout;
    long r = v ? sendfile(out, in, give_in ? &a : NULL, n)
               : copy_file_range(in, give_in ? &a : NULL, out, !v && give_out ? &b : NULL, n,
                                 flags);
    if (result(r))
        add(" = %ld", r);
    if (give_in)
        add(" in_off=%lld", (long long)a);
    if (!v && give_out)
        add(" out_off=%lld", (long long)b);
    add(" pos=%lld,%lld", (long long)lseek(in, 0, SEEK_CUR), (long long)lseek(out, 0, SEEK_CUR));
    add_file("out", out);
    end();
}

/* fallocate's modes on a slot: allocate (growing the file or not), punch
 * a hole, and modes Linux refuses; then the file as read. Not
 * FALLOC_FL_ZERO_RANGE: whether it exists is the host file system's
 * (ext4 has it, tmpfs says EOPNOTSUPP), and a partition, which cannot ask
 * through 9P, always zeroes (docs/linux.md). */
static void op_fallocate(unsigned i) {
    static const struct {
        int mode;
        const char *text;
    } modes[] = {
        {0, "0"},
        {FALLOC_FL_KEEP_SIZE, "KEEP_SIZE"},
        {FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, "PUNCH_HOLE|KEEP_SIZE"},
        {FALLOC_FL_PUNCH_HOLE, "PUNCH_HOLE"},
        {FALLOC_FL_ZERO_RANGE | FALLOC_FL_PUNCH_HOLE, "ZERO_RANGE|PUNCH_HOLE"},
        {FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_KEEP_SIZE, "COLLAPSE_RANGE|KEEP_SIZE"},
        {0x100, "0x100"},
    };
    unsigned s = pick(NSLOTS), m = pick(sizeof modes / sizeof *modes);
    long long off = pick(8) == 0 ? -1 : odd_off();
    long long n = pick(8) == 0 ? 0 : (long long)odd_len() + 1;
    begin(i, "fallocate");
    add(" slot=%u mode=%s off=%lld len=%lld", s, modes[m].text, off, n);
    int fd = slot_fd(s);
    if (fd < 0) {
        add(" = empty");
        end();
        return;
    }
    if (result(fallocate(fd, modes[m].mode, (off_t)off, (off_t)n)))
        add(" = ok");
    add(" pos=%lld", (long long)lseek(fd, 0, SEEK_CUR));
    add_file("file", fd);
    end();
}

/* open(O_TMPFILE) on a name: the flag checks and the directory's lookup
 * are compared; whether the file system makes unnamed files (ext4 and
 * tmpfs do, a partition's 9P cannot: EOPNOTSUPP) goes to the table only,
 * and the file is closed at once so later calls do not depend on it. */
static void op_tmpfile(unsigned i) {
    static const struct {
        int flags;
        const char *text;
    } combos[] = {
        {O_TMPFILE | O_RDWR, "RDWR"},
        {O_TMPFILE | O_WRONLY, "WRONLY"},
        {O_TMPFILE | O_RDONLY, "RDONLY"},
        {O_TMPFILE | O_RDWR | O_CREAT, "RDWR|CREAT"},
        {O_TMPFILE | O_RDWR | O_EXCL, "RDWR|EXCL"},
        {(O_TMPFILE & ~O_DIRECTORY) | O_RDWR, "RDWR without O_DIRECTORY"},
    };
    const char *n = name();
    unsigned k = pick(sizeof combos / sizeof *combos);
    begin(i, "open(O_TMPFILE)");
    add(" %s %s", n, combos[k].text);
    int fd = openat(dfd, n, combos[k].flags, 0600);
    if (fd >= 0 || errno == EOPNOTSUPP)
        add(" = ~ %s", fd >= 0 ? "ok" : "EOPNOTSUPP");
    else
        result(fd);
    if (fd >= 0)
        close(fd);
    end();
}

typedef void (*op_fn)(unsigned);
static const struct {
    op_fn fn;
    unsigned weight;
} ops[] = {
    {op_open, 14}, {op_creat, 2},   {op_close, 5},    {op_rw, 16},     {op_lseek, 5},
    {op_truncate, 4}, {op_stat, 12}, {op_readlink, 3}, {op_symlink, 5}, {op_link, 3},
    {op_rename, 4}, {op_unlink, 5},  {op_mkdir, 3},    {op_chmod, 3},   {op_utimens, 3},
    {op_getdents, 3}, {op_access, 3}, {op_fsync, 2},   {op_cat, 4},     {op_mmap, 8},
    {op_fcntl, 3}, {op_rwv, 4}, {op_xfer, 4}, {op_fallocate, 3}, {op_tmpfile, 2},
};
#define NOPS (sizeof ops / sizeof *ops)

static void call(uint64_t seed, unsigned i) {
    unsigned total = 0;
    for (unsigned k = 0; k < NOPS; k++)
        total += ops[k].weight;
    rng = seed * 0x100000001b3ULL + i * 0x9e3779b97f4a7c15ULL + 1;
    next();
    unsigned w = pick(total);
    for (unsigned k = 0; k < NOPS; k++) {
        if (w < ops[k].weight) {
            ops[k].fn(i);
            return;
        }
        w -= ops[k].weight;
    }
}

/* ---- the scratch directory ---- */

static void wipe(int dir) {
    DIR *d = fdopendir(openat(dir, ".", O_RDONLY | O_DIRECTORY));
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (unlinkat(dir, e->d_name, 0) == 0)
            continue;
        fchmodat(dir, e->d_name, 0700, 0);
        int sub = openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (sub >= 0) {
            wipe(sub);
            close(sub);
        }
        unlinkat(dir, e->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

static void put(const char *n, size_t size) {
    int fd = open(n, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (size_t k = 0; k < size; k++)
        wbuf[k] = (unsigned char)('a' + k % 26);
    if (fd >= 0) {
        if (write(fd, wbuf, size) != (ssize_t)size)
            perror("fsdiff: write");
        close(fd);
    }
}

/* Closes everything and makes the initial tree: f0 (12 bytes), d0/f3
 * (5000 bytes), d0/d1, s0 -> f0. */
/* Read-only mode (`mktree` once, then `rorun` against a read-only copy):
 * the tree is never wiped or rebuilt. */
static int readonly_mode;

static void reset(void) {
    for (unsigned s = 0; s < NSLOTS; s++) {
        if (slot[s] >= 0)
            close(slot[s]);
        slot[s] = -1;
    }
    for (unsigned k = 0; k < NMAPS; k++) {
        if (maps[k].addr) {
            munmap(maps[k].addr, maps[k].len);
            close(maps[k].fd);
        }
        maps[k].addr = NULL;
    }
    if (chdir(root) != 0) {
        perror("fsdiff: chdir");
        exit(2);
    }
    if (readonly_mode)
        return;
    chmod(".", 0755);
    wipe(dfd);
    put("f0", 12);
    mkdir("d0", 0755);
    put("d0/f3", 5000);
    mkdir("d0/d1", 0755);
    if (symlink("f0", "s0") != 0)
        perror("fsdiff: symlink");
}

/* Fixed probes of what a partition is known to do differently: lines for
 * the conformance table only (all soft). */
static void probe(void) {
    reset();
    put("f1", 3);
    long r = syscall(SYS_renameat2, dfd, "f0", dfd, "f1", 2 /* RENAME_EXCHANGE */);
    begin(0, "renameat2(RENAME_EXCHANGE)");
    add(" f0 f1 = ok ~ %s", r < 0 ? ename(errno) : "ok");
    end();
    r = syscall(SYS_renameat2, dfd, "f0", dfd, "f9", 4 /* RENAME_WHITEOUT */);
    begin(1, "renameat2(RENAME_WHITEOUT)");
    add(" f0 f9 = ok ~ %s", r < 0 ? ename(errno) : "ok");
    end();
    int fd = open("sparse", O_CREAT | O_RDWR, 0644);
    pwrite(fd, "x", 1, 1 << 20);
    begin(2, "lseek(SEEK_DATA/SEEK_HOLE)");
    add(" sparse DATA 0 = ok ~ %lld", (long long)lseek(fd, 0, SEEK_DATA));
    end();
    begin(3, "lseek(SEEK_DATA/SEEK_HOLE)");
    add(" sparse HOLE 0 = ok ~ %lld", (long long)lseek(fd, 0, SEEK_HOLE));
    end();
    volatile char *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED)
        (void)p[0]; /* the page is in before the write */
    pwrite(fd, "y", 1, 0);
    begin(4, "mmap-read");
    add(" shared mapping sees a later write = ok %d", p != MAP_FAILED && *(char *)p == 'y');
    end();
    if (p != MAP_FAILED)
        munmap((void *)p, 4096);
    close(fd);
    /* A store through a shared mapping reaches read(2) after msync; a
     * write(2) made in between survives the msync. */
    fd = open("shared", O_CREAT | O_RDWR, 0644);
    pwrite(fd, "abcdefgh", 8, 0);
    char *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    char got[9] = {0};
    if (w != MAP_FAILED) {
        w[0] = 'X';
        msync(w, 4096, MS_SYNC);
        pread(fd, got, 8, 0);
    }
    begin(6, "msync(MAP_SHARED)");
    add(" store then read = ok %s", got);
    end();
    if (w != MAP_FAILED) {
        pwrite(fd, "Y", 1, 4);
        w[1] = 'Z';
        msync(w, 4096, MS_SYNC);
        pread(fd, got, 8, 0);
        munmap(w, 4096);
    }
    begin(7, "msync(MAP_SHARED)");
    add(" write(2) between stores survives = ok %s", got);
    end();
    close(fd);
    r = open(".", O_TMPFILE | O_RDWR, 0600);
    begin(8, "open(O_TMPFILE)");
    add(" . = ok ~ %s", r < 0 ? ename(errno) : "ok");
    end();
    if (r >= 0)
        close(r);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: fsdiff DIR run SEED NSEEDS COUNT | replay SEED COUNT I,J,... | probe\n"
                        "       fsdiff DIR mktree | rorun SEED NSEEDS COUNT | roreplay SEED COUNT I,J,...\n");
        return 2;
    }
    snprintf(root, sizeof root, "%s", argv[1]);
    mkdir(root, 0755);
    dfd = open(root, O_RDONLY | O_DIRECTORY);
    if (dfd < 0) {
        perror("fsdiff: open DIR");
        return 2;
    }
    umask(022);
    struct sigaction sa = {.sa_handler = on_fault};
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    if (!strcmp(argv[2], "mktree")) {
        /* The tree the read-only runs look at, with more kinds of entry. */
        reset();
        put("d0/d1/f4", 70000);
        put("f5", 0);
        symlink("d0", "s1");
        symlink("missing", "s2");
        symlink("s3", "s3");
        link("f0", "h0");
        chmod("d0/f3", 0600);
        return 0;
    }
    if (!strncmp(argv[2], "ro", 2)) {
        readonly_mode = 1;
        argv[2] += 2;
    }
    if (!strcmp(argv[2], "run") && argc == 6) {
        uint64_t seed = strtoull(argv[3], NULL, 10);
        unsigned nseeds = (unsigned)strtoul(argv[4], NULL, 10);
        unsigned count = (unsigned)strtoul(argv[5], NULL, 10);
        for (unsigned s = 0; s < nseeds; s++) {
            reset();
            printf("# seed %llu\n", (unsigned long long)(seed + s));
            for (unsigned i = 0; i < count; i++)
                call(seed + s, i);
        }
    } else if (!strcmp(argv[2], "replay") && argc == 6) {
        uint64_t seed = strtoull(argv[3], NULL, 10);
        reset();
        printf("# seed %llu\n", (unsigned long long)seed);
        for (char *p = argv[5]; *p;) {
            char *e;
            unsigned long i = strtoul(p, &e, 10);
            if (e == p)
                break;
            call(seed, (unsigned)i);
            p = *e ? e + 1 : e;
        }
    } else if (!strcmp(argv[2], "probe")) {
        probe();
    } else {
        fprintf(stderr, "fsdiff: bad arguments\n");
        return 2;
    }
    if (!readonly_mode) {
        reset();
        wipe(dfd);
    }
    return 0;
}
