/* Differential exerciser for UDP sockets: the same random sequence of calls
 * on the host and in a partition must print the same lines.
 *
 *   udpdiff run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT calls each
 *
 * A table of slots holds loopback UDP sockets (blocking or not), of one
 * family per sequence (by its seed): IPv4 (127.0.0.1), IPv6 (::1), or IPv6
 * dual-stack sockets reaching each other through IPv4-mapped addresses
 * (::ffff:127.0.0.1, as Java's sockets do). The
 * calls are socket/close/bind (port 0, another slot's port: the conflicts)/
 * connect (to another slot, to a port nothing listens on, AF_UNSPEC to
 * disconnect)/send, sendto and zero-length sends/recvfrom and recvmsg with
 * short buffers, MSG_PEEK, MSG_TRUNC/shutdown/getsockname, getpeername/
 * FIONREAD/SO_ERROR/poll. Nothing depends on timing: a datagram is sent
 * only to a socket with none queued, and its arrival is waited for with
 * poll; one that must be dropped (its receiver is connected elsewhere)
 * is not waited for, and shows if it arrives anyway. A send from a
 * connected socket to a port nothing listens on waits for the ICMP
 * error (Linux's ECONNREFUSED on the next call). Ports print as the slot
 * that owns them ("L3"), "closed" for the port nothing listens on, "eph"
 * for another. Each line is "INDEX CALL ARGS = RESULT". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errname.h"

#define SLOTS 6

static uint64_t rng;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static unsigned pick(unsigned n) { return (unsigned)(next() % n); }

static struct slot {
    int fd; /* -1: empty */
    int nonblock;
    unsigned short port; /* local port, 0 if none yet */
    int peer;            /* connected to: a slot, CLOSED, DEAD, or -1 */
    int queued;          /* a datagram is on its way or waiting here */
    int src;             /* the slot that sent it, */
    unsigned short src_port; /* from this port */
    int shut_rd;
} t[SLOTS];
#define CLOSED (-2) /* connected to closed_port */
#define DEAD (-3)   /* connected to a port whose socket went */

/* A port nothing listens on (found free at the start of a sequence). */
static unsigned short closed_port;
static unsigned current_call;

/* The sequence's family: IPv4, IPv6 (::1), or IPv6 sockets at IPv4-mapped
 * addresses. */
enum { V4, V6, MAPPED } fam;

/* A socket address of the sequence's family. */
typedef struct {
    union {
        struct sockaddr sa;
        struct sockaddr_in v4;
        struct sockaddr_in6 v6;
    };
    socklen_t len;
} addr_t;

static int domain(void) { return fam == V4 ? AF_INET : AF_INET6; }

static const char *res(long r, int e) {
    static char buf[48];
    if (r < 0)
        return errname(e);
    snprintf(buf, sizeof buf, "%ld", r);
    return buf;
}

static unsigned short local_port(int fd) {
    addr_t a;
    socklen_t l = sizeof a.v6;
    if (getsockname(fd, &a.sa, &l) != 0)
        return 0;
    return ntohs(a.sa.sa_family == AF_INET6 ? a.v6.sin6_port : a.v4.sin_port);
}

/* Refreshes slot i's port (a send or connect may have bound it, a
 * disconnect given it up): sockets connected to its old port now talk to
 * a port nothing listens on. */
static void refresh(int i) {
    if (t[i].fd < 0)
        return;
    unsigned short old = t[i].port;
    t[i].port = local_port(t[i].fd);
    if (old && t[i].port != old)
        for (int k = 0; k < SLOTS; k++)
            if (t[k].peer == i)
                t[k].peer = DEAD;
}

/* The port a received datagram was sent from and the slot that sent it
 * (named after that slot even if the port has gone to another since: the
 * host gives freed ports out again in an order of its own). */
static unsigned short sender_port;
static int sender = -1;

static const char *portname(unsigned short port, int owner) {
    static char buf[2][16];
    static int which;
    char *b = buf[which ^= 1];
    if (port == 0)
        return "0";
    if (port == closed_port)
        return "closed";
    if (sender >= 0 && port == sender_port) {
        snprintf(b, 16, "L%d", sender);
        return b;
    }
    if (owner >= 0 && t[owner].fd >= 0 && t[owner].port == port) {
        snprintf(b, 16, "L%d", owner);
        return b;
    }
    for (int i = 0; i < SLOTS; i++)
        if (t[i].fd >= 0 && t[i].port == port) {
            snprintf(b, 16, "L%d", i);
            return b;
        }
    return "eph";
}

static const char *addrtext(const addr_t *a, socklen_t l, int owner) {
    static char buf[2][160];
    static int which;
    char *b = buf[which ^= 1];
    if (l == 0)
        return "none";
    char ip[64];
    if (a->sa.sa_family == AF_INET) {
        inet_ntop(AF_INET, &a->v4.sin_addr, ip, sizeof ip);
        snprintf(b, 160, "%s:%s len %u", ip, portname(ntohs(a->v4.sin_port), owner), l);
    } else if (a->sa.sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &a->v6.sin6_addr, ip, sizeof ip);
        snprintf(b, 160, "[%s]:%s flow %u scope %u len %u", ip,
                 portname(ntohs(a->v6.sin6_port), owner), a->v6.sin6_flowinfo,
                 a->v6.sin6_scope_id, l);
    } else {
        snprintf(b, 160, "family %d len %u", a->sa.sa_family, l);
    }
    return b;
}

static int slot_any(void) {
    int n = 0, c[SLOTS];
    for (int i = 0; i < SLOTS; i++)
        if (t[i].fd >= 0)
            c[n++] = i;
    return n ? c[pick(n)] : -1;
}

/* The loopback address of the sequence's family at `port`; the wildcard
 * address with `any`. */
static addr_t at(unsigned short port, int any) {
    addr_t a;
    memset(&a, 0, sizeof a);
    if (fam == V4) {
        a.v4.sin_family = AF_INET;
        a.v4.sin_port = htons(port);
        a.v4.sin_addr.s_addr = htonl(any ? INADDR_ANY : INADDR_LOOPBACK);
        a.len = sizeof a.v4;
    } else {
        a.v6.sin6_family = AF_INET6;
        a.v6.sin6_port = htons(port);
        if (!any)
            inet_pton(AF_INET6, fam == V6 ? "::1" : "::ffff:127.0.0.1", &a.v6.sin6_addr);
        a.len = sizeof a.v6;
    }
    return a;
}

static addr_t lo(unsigned short port) { return at(port, 0); }

/* Waits (at most 5 s) for `events` on slot i; returns what poll saw. */
static int wait_for(int i, short events) {
    struct pollfd p = {.fd = t[i].fd, .events = events};
    for (int n = 0; n < 500; n++) {
        p.revents = 0;
        /* events 0: the error is waited for. */
        int r = poll(&p, 1, 10);
        if (r > 0 && (p.revents & (events ? events : POLLERR)))
            break;
        /* Something else is up (an error waiting): poll did not wait. */
        if (r > 0)
            usleep(10000);
    }
    return p.revents;
}

static void forget(int i) {
    /* Connected to a port nothing listens on now. */
    for (int k = 0; k < SLOTS; k++)
        if (t[k].peer == i)
            t[k].peer = DEAD;
    t[i] = (struct slot){.fd = -1, .peer = -1};
}

static void reset(void) {
    for (int i = 0; i < SLOTS; i++) {
        if (t[i].fd >= 0)
            close(t[i].fd);
        t[i] = (struct slot){.fd = -1, .peer = -1};
    }
    /* A port below the ephemeral range nothing is bound to; looked for
     * with a generator of its own, so that how many tries it took (other
     * programs' ports) does not change the sequence. */
    uint64_t x = rng | 1;
    for (;;) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        closed_port = (unsigned short)(20000 + x % 10000);
        /* Free in both families: one of each is bound on the wildcard. */
        int fd4 = socket(AF_INET, SOCK_DGRAM, 0), fd6 = socket(AF_INET6, SOCK_DGRAM, 0);
        int one = 1;
        setsockopt(fd6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(closed_port)};
        struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(closed_port)};
        int ok = bind(fd4, (void *)&a4, sizeof a4) == 0 && bind(fd6, (void *)&a6, sizeof a6) == 0;
        close(fd4);
        close(fd6);
        if (ok)
            break;
    }
}

static void op_socket(unsigned k) {
    int i = -1;
    for (int s = 0; s < SLOTS; s++)
        if (t[s].fd < 0) {
            i = s;
            break;
        }
    if (i < 0)
        return;
    int nb = pick(2);
    int fd = socket(domain(), SOCK_DGRAM | (nb ? SOCK_NONBLOCK : 0), 0);
    printf("%u socket s%d%s = %s\n", k, i, nb ? " nonblock" : "", fd < 0 ? errname(errno) : "ok");
    if (fd >= 0)
        t[i] = (struct slot){.fd = fd, .nonblock = nb, .peer = -1};
}

static void op_close(unsigned k) {
    int i = slot_any();
    if (i < 0)
        return;
    printf("%u close s%d = %s\n", k, i, res(close(t[i].fd), errno));
    forget(i);
}

static void op_bind(unsigned k) {
    int i = slot_any();
    if (i < 0)
        return;
    unsigned short port = 0;
    int j = pick(2) ? slot_any() : -1;
    if (j >= 0 && t[j].port)
        port = t[j].port;
    int any = pick(3) == 0;
    addr_t a = at(port, any);
    int r = bind(t[i].fd, &a.sa, a.len);
    int e = errno;
    printf("%u bind s%d %s:%s = %s\n", k, i, any ? "any" : "lo", portname(port, j), res(r, e));
    if (r == 0) {
        refresh(i);
        printf("   local %s\n", portname(t[i].port, i));
    }
}

static void op_connect(unsigned k) {
    int i = slot_any();
    if (i < 0)
        return;
    unsigned what = pick(4);
    addr_t a;
    int target;
    const char *name;
    if (what == 0) {
        /* AF_UNSPEC: disconnect. */
        struct sockaddr u = {.sa_family = AF_UNSPEC};
        int r = connect(t[i].fd, &u, sizeof u);
        printf("%u connect s%d unspec = %s\n", k, i, res(r, errno));
        if (r == 0)
            t[i].peer = -1;
        refresh(i);
        return;
    } else if (what == 1) {
        a = lo(closed_port);
        target = CLOSED;
        name = "closed";
    } else {
        int j = slot_any();
        if (j < 0 || !t[j].port)
            return;
        a = lo(t[j].port);
        target = j;
        name = portname(t[j].port, j);
    }
    int r = connect(t[i].fd, &a.sa, a.len);
    printf("%u connect s%d -> %s = %s\n", k, i, name, res(r, errno));
    if (r == 0) {
        t[i].peer = target;
        refresh(i);
        printf("   local %s\n", portname(t[i].port, i));
    }
}

/* Whether a datagram from slot i reaches slot j: j has a port, is not
 * shut for reading (its queue is then not waited for), and is not
 * connected elsewhere. */
static int reaches(int i, int j) {
    return t[j].port && (t[j].peer == -1 || t[j].peer == i);
}

static void op_send(unsigned k) {
    int i = slot_any();
    if (i < 0)
        return;
    char data[64];
    unsigned len = pick(4) == 0 ? 0 : 1 + pick(40);
    for (unsigned n = 0; n < len; n++)
        data[n] = (char)('a' + (k + n) % 26);
    int j;
    long r;
    const char *how;
    int to_peer = 0;
    if (pick(2) && t[i].peer != -1) {
        to_peer = 1;
        /* send() on a connected socket. */
        j = t[i].peer;
        if (j >= 0 && (t[j].queued || t[j].shut_rd))
            return;
        how = "send";
        r = send(t[i].fd, data, len, MSG_DONTWAIT);
    } else {
        j = pick(4) == 0 ? CLOSED : slot_any();
        if (j == -1 || (j >= 0 && (!t[j].port || t[j].queued || t[j].shut_rd)))
            return;
        addr_t a = lo(j == CLOSED ? closed_port : t[j].port);
        to_peer = t[i].peer == j && j >= 0;
        how = "sendto";
        r = sendto(t[i].fd, data, len, MSG_DONTWAIT, &a.sa, a.len);
    }
    int e = errno;
    printf("%u %s s%d -> %s %u = %s\n", k, how, i,
           j == CLOSED ? "closed" : j == DEAD ? "dead" : j >= 0 ? portname(t[j].port, j) : "none",
           len, res(r, e));
    refresh(i);
    if (r < 0)
        return;
    if (j >= 0 && reaches(i, j)) {
        int ev = wait_for(j, POLLIN);
        printf("   s%d in %d\n", j, !!(ev & POLLIN));
        /* Not arrived (a partition's fault, printed): not waited for. */
        t[j].queued = !!(ev & POLLIN);
        t[j].src = i;
        t[j].src_port = t[i].port;
    } else if (to_peer || (j == CLOSED && t[i].peer == CLOSED)) {
        /* (to_peer: send() to a CLOSED or DEAD peer, or sendto the peer
         * slot, which is connected elsewhere.) */
        /* Nothing took it: the port unreachable error, which a connected
         * socket gets for what it sends its peer. */
        int ev = wait_for(i, 0);
        printf("   s%d err %d\n", i, !!(ev & POLLERR));
    }
}

static void op_recv(unsigned k) {
    int i = slot_any();
    if (i < 0)
        return;
    static const int flagset[] = {0, MSG_PEEK, MSG_TRUNC, MSG_DONTWAIT, MSG_PEEK | MSG_TRUNC};
    static const char *fname[] = {"", " PEEK", " TRUNC", " DONTWAIT", " PEEK|TRUNC"};
    unsigned f = pick(5);
    int flags = flagset[f];
    /* Would wait for ever: nothing on its way, and no error to report. */
    struct pollfd p = {.fd = t[i].fd, .events = POLLIN};
    poll(&p, 1, 0);
    if (!t[i].nonblock && !(flags & MSG_DONTWAIT) && !t[i].queued && !(p.revents & (POLLERR | POLLIN)))
        return;
    char buf[64];
    unsigned size = 1 + pick(40);
    addr_t from;
    memset(&from, 0, sizeof from);
    struct iovec v = {.iov_base = buf, .iov_len = size};
    /* Room for the name the family gives, or (one time in four) less:
     * the name is cut short, its length the whole one. */
    socklen_t room = pick(4) == 0 ? (socklen_t)(4 + pick(12)) : (socklen_t)sizeof from.v6;
    struct msghdr m = {.msg_name = &from, .msg_namelen = room, .msg_iov = &v, .msg_iovlen = 1};
    long r = recvmsg(t[i].fd, &m, flags);
    int e = errno;
    printf("%u recv s%d %u%s = %s", k, i, size, fname[f], res(r, e));
    if (r >= 0) {
        long shown = r < (long)size ? r : (long)size;
        if (t[i].queued) {
            sender = t[i].src;
            sender_port = t[i].src_port;
        }
        const char *src = addrtext(&from, m.msg_namelen, -1);
        sender = -1;
        printf(" '%.*s' from %s flags%s%s", (int)shown, buf, src,
               m.msg_flags & MSG_TRUNC ? " TRUNC" : "",
               m.msg_flags & ~MSG_TRUNC ? " other" : "");
        if (!(flags & MSG_PEEK))
            t[i].queued = 0;
    }
    printf("\n");
}

static void op_shutdown(unsigned k) {
    int i = slot_any();
    if (i < 0)
        return;
    int how = (int)pick(3);
    int r = shutdown(t[i].fd, how);
    printf("%u shutdown s%d %d = %s\n", k, i, how, res(r, errno));
    /* Linux marks it shut even when not connected: later datagrams are
     * not waited for. */
    if (how != SHUT_WR)
        t[i].shut_rd = 1;
}

static void op_names(unsigned k) {
    int i = slot_any();
    if (i < 0)
        return;
    addr_t a;
    socklen_t l = sizeof a.v6;
    memset(&a, 0, sizeof a);
    int r = getsockname(t[i].fd, &a.sa, &l);
    printf("%u getsockname s%d = %s %s", k, i, res(r, errno), r == 0 ? addrtext(&a, l, i) : "");
    l = sizeof a.v6;
    memset(&a, 0, sizeof a);
    r = getpeername(t[i].fd, &a.sa, &l);
    printf("; getpeername = %s %s\n", res(r, errno),
           r == 0 ? addrtext(&a, l, t[i].peer >= 0 ? t[i].peer : -1) : "");
}

static void op_state(unsigned k) {
    int i = slot_any();
    if (i < 0)
        return;
    int v = -1;
    long r = ioctl(t[i].fd, FIONREAD, &v);
    printf("%u FIONREAD s%d = %s value %d", k, i, res(r, errno), r == 0 ? v : -1);
    struct pollfd p = {.fd = t[i].fd, .events = POLLIN | POLLOUT | POLLRDHUP};
    poll(&p, 1, 0);
    printf("; poll in %d out %d err %d hup %d rdhup %d", !!(p.revents & POLLIN),
           !!(p.revents & POLLOUT), !!(p.revents & POLLERR), !!(p.revents & POLLHUP),
           !!(p.revents & POLLRDHUP));
    if (pick(2)) {
        int e = 0;
        socklen_t l = sizeof e;
        r = getsockopt(t[i].fd, SOL_SOCKET, SO_ERROR, &e, &l);
        printf("; SO_ERROR %s", r ? errname(errno) : e ? errname(e) : "0");
    }
    printf("\n");
}

static void call(unsigned k) {
    unsigned op = pick(100);
    if (op < 12)
        op_socket(k);
    else if (op < 18)
        op_close(k);
    else if (op < 30)
        op_bind(k);
    else if (op < 42)
        op_connect(k);
    else if (op < 64)
        op_send(k);
    else if (op < 80)
        op_recv(k);
    else if (op < 85)
        op_shutdown(k);
    else if (op < 92)
        op_names(k);
    else
        op_state(k);
}

static void on_alarm(int sig) {
    (void)sig;
    char msg[96];
    int n = snprintf(msg, sizeof msg, "udpdiff: call %u blocked for 20 s\n", current_call);
    fflush(stdout);
    write(2, msg, (size_t)n);
    _exit(3);
}

int main(int argc, char **argv) {
    if (argc != 5 || strcmp(argv[1], "run")) {
        fprintf(stderr, "usage: udpdiff run SEED NSEEDS COUNT\n");
        return 2;
    }
    signal(SIGALRM, on_alarm);
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    uint64_t seed = strtoull(argv[2], NULL, 10);
    unsigned nseeds = (unsigned)strtoul(argv[3], NULL, 10);
    unsigned count = (unsigned)strtoul(argv[4], NULL, 10);
    for (int i = 0; i < SLOTS; i++)
        t[i] = (struct slot){.fd = -1, .peer = -1};
    for (unsigned s = 0; s < nseeds; s++) {
        rng = (seed + s) * 0x2545f4914f6cdd1dULL | 1;
        fam = (seed + s) % 3;
        reset();
        printf("# seed %llu %s\n", (unsigned long long)(seed + s),
               fam == V4 ? "ipv4" : fam == V6 ? "ipv6" : "mapped");
        for (unsigned i = 0; i < count; i++) {
            current_call = i;
            alarm(20);
            call(i);
        }
        alarm(0);
    }
    reset();
    fflush(stdout);
    return 0;
}
