/* AF_UNIX stream sockets bound to names: paths (relative and absolute) and
 * abstract names, listen/accept/connect, the errors Linux gives, poll and
 * epoll readiness, backlog limits, SO_PEERCRED, and sendmmsg/recvmmsg over
 * a socket pair. Run in an empty writable working directory; the output is
 * compared with the host's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <unistd.h>

#include "errname.h"

#define CHECK(what, expr)                                                      \
    do {                                                                       \
        long r_ = (long)(expr);                                                \
        if (r_ < 0)                                                            \
            printf("%s = -1 %s\n", what, errname(errno));                      \
        else                                                                   \
            printf("%s = %ld\n", what, r_);                                    \
    } while (0)

static socklen_t path_addr(struct sockaddr_un *a, const char *path)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    strncpy(a->sun_path, path, sizeof a->sun_path - 1);
    return offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1;
}

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    memcpy(a->sun_path + 1, name, strlen(name));
    return offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name);
}

/* Prints an address as getsockname/getpeername/accept gave it. */
static void show(const char *what, struct sockaddr_un *a, socklen_t len)
{
    printf("%s: len %u", what, (unsigned)len);
    if (len > offsetof(struct sockaddr_un, sun_path)) {
        if (a->sun_path[0])
            printf(" path \"%s\"", a->sun_path);
        else
            printf(" abstract \"%.*s\"", (int)(len - 3), a->sun_path + 1);
    }
    printf("\n");
}

static void names(const char *what, int fd)
{
    struct sockaddr_un a;
    socklen_t len = sizeof a;
    char buf[64];
    memset(&a, 0x55, sizeof a);
    snprintf(buf, sizeof buf, "%s getsockname", what);
    if (getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        printf("%s = -1 %s\n", buf, errname(errno));
    else
        show(buf, &a, len);
    len = sizeof a;
    snprintf(buf, sizeof buf, "%s getpeername", what);
    if (getpeername(fd, (struct sockaddr *)&a, &len) < 0)
        printf("%s = -1 %s\n", buf, errname(errno));
    else
        show(buf, &a, len);
}

static void pollev(const char *what, int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT | POLLRDHUP};
    int n = poll(&p, 1, 0);
    printf("%s: poll %d revents 0x%x\n", what, n, n > 0 ? p.revents : 0);
}

static int unix_socket(int flags)
{
    return socket(AF_UNIX, SOCK_STREAM | flags, 0);
}

/* What the accepting thread saw, printed after it is joined (the two
 * threads' order of printing is the scheduler's). */
static char thread_log[256];

static void *accept_one(void *arg)
{
    int l = *(int *)arg;
    struct sockaddr_un a;
    socklen_t len = sizeof a;
    int c = accept(l, (struct sockaddr *)&a, &len);
    if (c < 0) {
        snprintf(thread_log, sizeof thread_log, "thread accept = -1 %s\n", errname(errno));
        return NULL;
    }
    char buf[64] = {0};
    ssize_t n = read(c, buf, sizeof buf - 1);
    ssize_t w = write(c, "pong", 4);
    snprintf(thread_log, sizeof thread_log,
             "thread accept peer len %u, read %zd \"%s\", write %zd\n", (unsigned)len, n,
             n > 0 ? buf : "", w);
    close(c);
    return NULL;
}

static void paths(void)
{
    struct sockaddr_un a;
    socklen_t len = path_addr(&a, "srv.sock");
    int l = unix_socket(0);
    printf("socket %s\n", l >= 0 ? "ok" : errname(errno));
    pollev("fresh", l);
    names("fresh", l);
    CHECK("bind srv.sock", bind(l, (struct sockaddr *)&a, len));
    CHECK("bind again", bind(l, (struct sockaddr *)&a, len));
    struct stat st;
    if (stat("srv.sock", &st) == 0)
        printf("stat srv.sock: socket %d, mode %o\n", S_ISSOCK(st.st_mode), st.st_mode & 0777);
    else
        printf("stat srv.sock = -1 %s\n", errname(errno));
    names("bound", l);

    /* Not listening yet: refused. */
    int c = unix_socket(0);
    CHECK("connect before listen", connect(c, (struct sockaddr *)&a, len));
    close(c);

    int other = unix_socket(0);
    CHECK("bind taken path", bind(other, (struct sockaddr *)&a, len));
    close(other);

    CHECK("listen", listen(l, 4));
    pollev("listening", l);
    int one = 0;
    socklen_t ol = sizeof one;
    CHECK("SO_ACCEPTCONN", getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &one, &ol));
    printf("SO_ACCEPTCONN value %d\n", one);
    int fl = fcntl(l, F_GETFL);
    fcntl(l, F_SETFL, fl | O_NONBLOCK);
    CHECK("accept with none waiting", accept(l, NULL, NULL));
    fcntl(l, F_SETFL, fl);

    /* A blocking connect, accepted by a thread. */
    pthread_t t;
    pthread_create(&t, NULL, accept_one, &l);
    c = unix_socket(0);
    struct sockaddr_un abs;
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd - 16))
        return;
    strcat(cwd, "/srv.sock");
    socklen_t alen = path_addr(&abs, cwd);
    CHECK("connect by absolute path", connect(c, (struct sockaddr *)&abs, alen));
    CHECK("connect again", connect(c, (struct sockaddr *)&a, len));
    {
        struct sockaddr_un p;
        socklen_t pl = sizeof p;
        getpeername(c, (struct sockaddr *)&p, &pl);
        printf("client getpeername: len %u, is the absolute path %d\n", (unsigned)pl,
               strcmp(p.sun_path, cwd) == 0);
    }
    names("client (own)", c);
    CHECK("write ping", write(c, "ping", 4));
    char buf[16] = {0};
    CHECK("read pong", read(c, buf, sizeof buf - 1));
    printf("got \"%s\"\n", buf);
    pthread_join(t, NULL);
    printf("%s", thread_log);
    CHECK("read after the peer closed", read(c, buf, sizeof buf));
    close(c);

    /* Accept's and the accepted socket's names. */
    c = unix_socket(0);
    CHECK("connect relative", connect(c, (struct sockaddr *)&a, len));
    struct ucred cred;
    socklen_t cl = sizeof cred;
    CHECK("SO_PEERCRED", getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl));
    printf("SO_PEERCRED len %u, pid is mine %d, uid is mine %d\n", (unsigned)cl,
           cred.pid == getpid(), cred.uid == getuid());
    pollev("listener with one waiting", l);
    struct sockaddr_un pa;
    socklen_t pal = sizeof pa;
    int s = accept4(l, (struct sockaddr *)&pa, &pal, SOCK_CLOEXEC | SOCK_NONBLOCK);
    printf("accept4 %s\n", s >= 0 ? "ok" : errname(errno));
    show("accept4 peer", &pa, pal);
    names("accepted", s);
    printf("accepted flags: nonblock %d cloexec %d\n", (fcntl(s, F_GETFL) & O_NONBLOCK) != 0,
           (fcntl(s, F_GETFD) & FD_CLOEXEC) != 0);
    CHECK("read on empty nonblocking", read(s, buf, sizeof buf));
    {
        /* Linux's socket buffer takes a 100 KB write before any read. */
        static char big[100000];
        memset(big, 'b', sizeof big);
        CHECK("100 KB write before a read", write(c, big, sizeof big));
        long got = 0;
        while (got < (long)sizeof big) {
            ssize_t n = read(s, big, sizeof big);
            if (n <= 0)
                break;
            got += n;
        }
        printf("read back %ld\n", got);
        int v = 0;
        socklen_t vl = sizeof v;
        getsockopt(c, SOL_SOCKET, SO_SNDBUF, &v, &vl);
        printf("SO_SNDBUF %d\n", v);
        getsockopt(c, SOL_SOCKET, SO_RCVBUF, &v, &vl);
        printf("SO_RCVBUF %d\n", v);
        getsockopt(c, SOL_SOCKET, SO_PROTOCOL, &v, &vl);
        printf("SO_PROTOCOL %d\n", v);
        v = 1;
        CHECK("TCP_NODELAY on a Unix socket", setsockopt(c, IPPROTO_TCP, 1, &v, sizeof v));
    }
    CHECK("sendto with an address", sendto(c, "x", 1, 0, (struct sockaddr *)&a, len));
    int avail = -1;
    write(c, "abc", 3);
    CHECK("FIONREAD", ioctl(s, FIONREAD, &avail));
    printf("FIONREAD value %d\n", avail);
    CHECK("shutdown client write", shutdown(c, SHUT_WR));
    pollev("accepted after peer SHUT_WR", s);
    CHECK("read 3", read(s, buf, sizeof buf));
    CHECK("read end", read(s, buf, sizeof buf));
    close(s);
    close(c);

    /* Backlog: listen(1) takes two waiting connections, then EAGAIN. */
    CHECK("listen 1", listen(l, 1));
    int cs[3];
    for (int i = 0; i < 3; i++) {
        cs[i] = unix_socket(SOCK_NONBLOCK);
        char what[32];
        snprintf(what, sizeof what, "nonblocking connect %d", i);
        CHECK(what, connect(cs[i], (struct sockaddr *)&a, len));
    }
    pollev("connected client", cs[0]);
    pollev("refused client", cs[2]);
    /* Closing the listener resets the connections it did not accept. */
    close(l);
    CHECK("read after listener closed", read(cs[0], buf, sizeof buf));
    CHECK("read again", read(cs[0], buf, sizeof buf));
    for (int i = 0; i < 3; i++)
        close(cs[i]);

    c = unix_socket(0);
    CHECK("connect after close", connect(c, (struct sockaddr *)&a, len));
    CHECK("unlink srv.sock", unlink("srv.sock"));
    CHECK("connect after unlink", connect(c, (struct sockaddr *)&a, len));
    close(c);

    int f = open("plain", O_CREAT | O_WRONLY, 0644);
    close(f);
    c = unix_socket(0);
    struct sockaddr_un pl2;
    socklen_t pl2len = path_addr(&pl2, "plain");
    CHECK("connect to a regular file", connect(c, (struct sockaddr *)&pl2, pl2len));
    CHECK("bind to a regular file", bind(c, (struct sockaddr *)&pl2, pl2len));
    pl2len = path_addr(&pl2, "nodir/x.sock");
    CHECK("bind in a missing directory", bind(c, (struct sockaddr *)&pl2, pl2len));
    CHECK("read unconnected", read(c, buf, sizeof buf));
    CHECK("write unconnected", send(c, "x", 1, MSG_NOSIGNAL));
    CHECK("shutdown unconnected", shutdown(c, SHUT_RDWR));
    CHECK("listen unbound", listen(c, 1));
    struct sockaddr_un bad = {.sun_family = AF_INET};
    CHECK("connect wrong family", connect(c, (struct sockaddr *)&bad, sizeof bad));
    CHECK("connect family only", connect(c, (struct sockaddr *)&bad, 2));
    close(c);
    unlink("plain");
}

static void abstract(void)
{
    struct sockaddr_un a;
    socklen_t len = abstract_addr(&a, "astraea-test-abstract");
    int l = unix_socket(SOCK_CLOEXEC);
    CHECK("bind abstract", bind(l, (struct sockaddr *)&a, len));
    names("abstract", l);
    int l2 = unix_socket(0);
    CHECK("bind the same abstract name", bind(l2, (struct sockaddr *)&a, len));
    close(l2);
    CHECK("listen abstract", listen(l, 8));

    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u32 = 7};
    epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
    struct epoll_event out[4];
    CHECK("epoll_wait before connect", epoll_wait(ep, out, 4, 0));
    int c = unix_socket(0);
    CHECK("connect abstract", connect(c, (struct sockaddr *)&a, len));
    int n = epoll_wait(ep, out, 4, 0);
    printf("epoll_wait after connect = %d events 0x%x data %u\n", n, n > 0 ? out[0].events : 0,
           n > 0 ? out[0].data.u32 : 0);
    CHECK("epoll_wait edge again", epoll_wait(ep, out, 4, 0));
    int s = accept(l, NULL, NULL);
    names("abstract accepted", s);
    names("abstract client", c);

    /* sendmmsg / recvmmsg over the connection. */
    char m0[] = "first", m1[] = "second!", m2[] = "3";
    struct iovec iov[3] = {{m0, 5}, {m1, 7}, {m2, 1}};
    struct mmsghdr mm[3];
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < 3; i++) {
        mm[i].msg_hdr.msg_iov = &iov[i];
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    CHECK("sendmmsg", sendmmsg(c, mm, 3, 0));
    printf("msg_len %u %u %u\n", mm[0].msg_len, mm[1].msg_len, mm[2].msg_len);
    char r0[8] = {0}, r1[8] = {0};
    struct iovec riov[2] = {{r0, 4}, {r1, 7}};
    struct mmsghdr rm[2];
    memset(rm, 0, sizeof rm);
    for (int i = 0; i < 2; i++) {
        rm[i].msg_hdr.msg_iov = &riov[i];
        rm[i].msg_hdr.msg_iovlen = 1;
    }
    CHECK("recvmmsg", recvmmsg(s, rm, 2, 0, NULL));
    printf("recv msg_len %u %u: \"%s\" \"%s\"\n", rm[0].msg_len, rm[1].msg_len, r0, r1);
    memset(r0, 0, sizeof r0);
    CHECK("recvmmsg waitforone", recvmmsg(s, rm, 2, MSG_WAITFORONE, NULL));
    printf("recv msg_len %u: \"%s\"\n", rm[0].msg_len, r0);
    CHECK("recvmmsg nonblocking, none", recvmmsg(s, rm, 2, MSG_DONTWAIT, NULL));
    close(s);
    close(c);
    close(ep);

    /* Autobind: the family alone names it with five hex digits. */
    int ab = unix_socket(0);
    struct sockaddr_un fam = {.sun_family = AF_UNIX};
    CHECK("autobind", bind(ab, (struct sockaddr *)&fam, offsetof(struct sockaddr_un, sun_path)));
    struct sockaddr_un got;
    socklen_t gl = sizeof got;
    getsockname(ab, (struct sockaddr *)&got, &gl);
    printf("autobind name: len %u, leading NUL %d\n", (unsigned)gl, got.sun_path[0] == 0);
    close(ab);
    close(l);
    int c2 = unix_socket(0);
    CHECK("connect to a closed abstract name", connect(c2, (struct sockaddr *)&a, len));
    close(c2);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    paths();
    abstract();
    CHECK("socket AF_UNIX SOCK_STREAM protocol 1", socket(AF_UNIX, SOCK_STREAM, 1));
    printf("done\n");
    return 0;
}
