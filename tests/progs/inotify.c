/* inotify over a scratch directory: the events of the program's own file
 * operations, in order, with names, cookies and the errors of the calls.
 * Run on the host and in a partition; the output must be the same.
 * Usage: inotify DIR */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "errname.h"

static int in;
static int wds[8];
static int nwds;
static unsigned last_cookie;

static void say(const char *what, long r) {
    if (r < 0)
        printf("%s = -1 %s\n", what, errname(errno));
    else
        printf("%s = ok\n", what);
}

/* A watch descriptor as the order it was first seen (values may differ). */
static int wd_index(int wd) {
    for (int i = 0; i < nwds; i++)
        if (wds[i] == wd)
            return i;
    wds[nwds] = wd;
    return nwds++;
}

static void mask_names(unsigned m) {
    static const struct { unsigned bit; const char *name; } names[] = {
        {IN_ACCESS, "ACCESS"}, {IN_MODIFY, "MODIFY"}, {IN_ATTRIB, "ATTRIB"},
        {IN_CLOSE_WRITE, "CLOSE_WRITE"}, {IN_CLOSE_NOWRITE, "CLOSE_NOWRITE"},
        {IN_OPEN, "OPEN"}, {IN_MOVED_FROM, "MOVED_FROM"}, {IN_MOVED_TO, "MOVED_TO"},
        {IN_CREATE, "CREATE"}, {IN_DELETE, "DELETE"}, {IN_DELETE_SELF, "DELETE_SELF"},
        {IN_MOVE_SELF, "MOVE_SELF"}, {IN_Q_OVERFLOW, "Q_OVERFLOW"}, {IN_IGNORED, "IGNORED"},
        {IN_ISDIR, "ISDIR"},
    };
    const char *sep = "";
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (m & names[i].bit) {
            printf("%s%s", sep, names[i].name);
            sep = "|";
            m &= ~names[i].bit;
        }
    if (m)
        printf("%s0x%x", sep, m);
}

/* Reads and prints every queued event. */
static void dump(const char *after) {
    char buf[4096] __attribute__((aligned(8)));
    int avail = -1;
    ioctl(in, FIONREAD, &avail);
    printf("after %s: FIONREAD %d\n", after, avail);
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0) {
            printf("  read = -1 %s\n", errname(errno));
            return;
        }
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *e = (struct inotify_event *)p;
            printf("  wd#%d ", e->wd < 0 ? -1 : wd_index(e->wd));
            mask_names(e->mask);
            if (e->cookie) {
                printf(" cookie=%s", e->cookie == last_cookie ? "same" : "new");
                last_cookie = e->cookie;
            }
            printf(" len=%u", e->len);
            if (e->len)
                printf(" name=%s", e->name);
            printf("\n");
            p += sizeof *e + e->len;
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 2 || chdir(argv[1]) != 0) {
        fprintf(stderr, "usage: inotify DIR\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    mkdir("w", 0755);
    say("inotify_init1(bad flags)", inotify_init1(0x1234));
    in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    say("inotify_init1", in);
    say("add_watch(missing)", inotify_add_watch(in, "missing", IN_ALL_EVENTS));
    say("add_watch(mask 0)", inotify_add_watch(in, "w", 0));
    say("add_watch(bad fd)", inotify_add_watch(99, "w", IN_CREATE));
    say("add_watch(not inotify)", inotify_add_watch(1, "w", IN_CREATE));
    say("rm_watch(unknown)", inotify_rm_watch(in, 12345));
    int wd = inotify_add_watch(in, "w", IN_ALL_EVENTS);
    say("add_watch(w)", wd);
    wd_index(wd);
    printf("add_watch(w/) same wd: %d\n", inotify_add_watch(in, "w/", IN_ALL_EVENTS) == wd);
    say("add_watch(w, MASK_CREATE)", inotify_add_watch(in, "w", IN_ALL_EVENTS | IN_MASK_CREATE));
    dump("nothing");

    int fd = open("w/a", O_CREAT | O_WRONLY, 0644);
    write(fd, "hello", 5);
    write(fd, "world", 5);
    close(fd);
    dump("create+write+write+close");

    char b[16];
    fd = open("w/a", O_RDONLY);
    read(fd, b, sizeof b);
    read(fd, b, sizeof b); /* at the end: no event */
    close(fd);
    dump("open+read+close");

    {
        /* The first event does not fit a small buffer. */
        fd = open("w/a", O_RDONLY);
        close(fd);
        char tiny[8];
        ssize_t r = read(in, tiny, sizeof tiny);
        printf("read(8 bytes) = %zd %s\n", r, r < 0 ? errname(errno) : "");
        dump("small read");
    }

    chmod("w/a", 0600);
    dump("chmod");
    struct timeval tv[2] = {{1, 0}, {2, 0}};
    utimes("w/a", tv);
    dump("utimes");
    truncate("w/a", 2);
    dump("truncate");
    fd = open("w/a", O_WRONLY | O_TRUNC);
    close(fd);
    dump("open(O_TRUNC)");

    rename("w/a", "w/b");
    dump("rename");
    mkdir("w/d", 0755);
    rmdir("w/d");
    dump("mkdir+rmdir");
    symlink("b", "w/l");
    link("w/b", "w/h");
    dump("symlink+link");
    unlink("w/b");
    unlink("w/h");
    unlink("w/l");
    dump("unlinks");

    /* A watch on a file itself, beside its directory's. */
    fd = open("w/f", O_CREAT | O_WRONLY, 0644);
    close(fd);
    dump("create f");
    int wf = inotify_add_watch(in, "w/f", IN_ALL_EVENTS);
    say("add_watch(w/f)", wf);
    wd_index(wf);
    say("add_watch(w/f, ONLYDIR)", inotify_add_watch(in, "w/f", IN_ALL_EVENTS | IN_ONLYDIR));
    fd = open("w/f", O_WRONLY);
    write(fd, "x", 1);
    close(fd);
    dump("write f");
    rename("w/f", "w/g");
    dump("rename f");
    unlink("w/g");
    dump("unlink g");

    /* A directory watched from inside and from its parent. */
    mkdir("w/s", 0755);
    int ws = inotify_add_watch(in, "w/s", IN_ALL_EVENTS | IN_ONLYDIR);
    say("add_watch(w/s)", ws);
    wd_index(ws);
    fd = open("w/s", O_RDONLY | O_DIRECTORY);
    char dents[1024];
    syscall(217 /* getdents64 */, fd, dents, sizeof dents);
    close(fd);
    dump("list s");
    fd = open("w/s/x", O_CREAT | O_WRONLY, 0644);
    close(fd);
    unlink("w/s/x");
    rmdir("w/s");
    dump("fill and remove s");

    /* Only the asked-for events; one shot. */
    int w2 = inotify_add_watch(in, "w", IN_CREATE | IN_ONESHOT);
    printf("add_watch(w, CREATE|ONESHOT) same wd: %d\n", w2 == wd);
    fd = open("w/o1", O_CREAT | O_WRONLY, 0644);
    write(fd, "1", 1);
    close(fd);
    fd = open("w/o2", O_CREAT | O_WRONLY, 0644);
    close(fd);
    dump("oneshot");
    say("rm_watch(after oneshot)", inotify_rm_watch(in, wd));

    int wd3 = inotify_add_watch(in, "w", IN_DELETE);
    say("add_watch(w, DELETE)", wd3);
    wd_index(wd3);
    say("add_watch(w, MODIFY|MASK_ADD)", inotify_add_watch(in, "w", IN_MODIFY | IN_MASK_ADD));
    fd = open("w/o1", O_WRONLY);
    write(fd, "2", 1);
    close(fd);
    unlink("w/o1");
    unlink("w/o2");
    dump("mask add");
    say("rm_watch", inotify_rm_watch(in, wd3));
    dump("rm_watch");

    /* poll on the descriptor. */
    struct pollfd p = {.fd = in, .events = POLLIN};
    printf("poll(empty) = %d\n", poll(&p, 1, 0));
    int wd4 = inotify_add_watch(in, "w", IN_CREATE);
    wd_index(wd4);
    fd = open("w/p", O_CREAT | O_WRONLY, 0644);
    close(fd);
    p.revents = 0;
    int r = poll(&p, 1, 1000);
    printf("poll(event) = %d revents=0x%x\n", r, p.revents);
    dump("poll");
    unlink("w/p");
    dump("unlink p");
    close(in);
    rmdir("w");
    return 0;
}
