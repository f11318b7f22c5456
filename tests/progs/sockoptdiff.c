/* Differential exerciser for socket options: the same random sequence of
 * setsockopt/getsockopt calls on the host and in a partition must print
 * the same lines.
 *
 *   sockoptdiff run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT calls
 *
 * A table of slots holds sockets of every kind a partition offers (TCP and
 * UDP over IPv4 and IPv6, Unix stream, datagram and seqpacket pairs), fresh
 * and unconnected. Each call sets or reads one option — of SOL_SOCKET,
 * IPPROTO_TCP, IPPROTO_IP and IPPROTO_IPV6, known and unknown — with option
 * lengths that are short, exact and long and values at and past their
 * limits; a read prints the length and the value. Each line is
 * "INDEX CALL ARGS = RESULT". */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#define SLOTS 6
#include "differ.h"

static const char *kind_name[SLOTS];

struct opt {
    int level, name;
    const char *label;
};

static const struct opt opts[] = {
    {SOL_SOCKET, SO_DEBUG, "SO_DEBUG"},
    {SOL_SOCKET, SO_REUSEADDR, "SO_REUSEADDR"},
    {SOL_SOCKET, SO_TYPE, "SO_TYPE"},
    {SOL_SOCKET, SO_ERROR, "SO_ERROR"},
    {SOL_SOCKET, SO_DONTROUTE, "SO_DONTROUTE"},
    {SOL_SOCKET, SO_BROADCAST, "SO_BROADCAST"},
    {SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF"},
    {SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF"},
    {SOL_SOCKET, SO_KEEPALIVE, "SO_KEEPALIVE"},
    {SOL_SOCKET, SO_OOBINLINE, "SO_OOBINLINE"},
    {SOL_SOCKET, SO_PRIORITY, "SO_PRIORITY"},
    {SOL_SOCKET, SO_LINGER, "SO_LINGER"},
    {SOL_SOCKET, SO_REUSEPORT, "SO_REUSEPORT"},
    {SOL_SOCKET, SO_PASSCRED, "SO_PASSCRED"},
    {SOL_SOCKET, SO_RCVLOWAT, "SO_RCVLOWAT"},
    {SOL_SOCKET, SO_SNDLOWAT, "SO_SNDLOWAT"},
    {SOL_SOCKET, SO_RCVTIMEO, "SO_RCVTIMEO"},
    {SOL_SOCKET, SO_SNDTIMEO, "SO_SNDTIMEO"},
    {SOL_SOCKET, SO_ACCEPTCONN, "SO_ACCEPTCONN"},
    {SOL_SOCKET, SO_PROTOCOL, "SO_PROTOCOL"},
    {SOL_SOCKET, SO_DOMAIN, "SO_DOMAIN"},
    {SOL_SOCKET, 999, "SOL_SOCKET/999"},
    {IPPROTO_TCP, TCP_NODELAY, "TCP_NODELAY"},
    {IPPROTO_TCP, TCP_MAXSEG, "TCP_MAXSEG"},
    {IPPROTO_TCP, TCP_CORK, "TCP_CORK"},
    {IPPROTO_TCP, TCP_KEEPIDLE, "TCP_KEEPIDLE"},
    {IPPROTO_TCP, TCP_KEEPINTVL, "TCP_KEEPINTVL"},
    {IPPROTO_TCP, TCP_KEEPCNT, "TCP_KEEPCNT"},
    {IPPROTO_TCP, TCP_SYNCNT, "TCP_SYNCNT"},
    {IPPROTO_TCP, TCP_LINGER2, "TCP_LINGER2"},
    {IPPROTO_TCP, TCP_DEFER_ACCEPT, "TCP_DEFER_ACCEPT"},
    {IPPROTO_TCP, TCP_WINDOW_CLAMP, "TCP_WINDOW_CLAMP"},
    {IPPROTO_TCP, TCP_QUICKACK, "TCP_QUICKACK"},
    {IPPROTO_TCP, TCP_USER_TIMEOUT, "TCP_USER_TIMEOUT"},
    {IPPROTO_TCP, TCP_NOTSENT_LOWAT, "TCP_NOTSENT_LOWAT"},
    {IPPROTO_TCP, 999, "IPPROTO_TCP/999"},
    {IPPROTO_IP, IP_TOS, "IP_TOS"},
    {IPPROTO_IP, IP_TTL, "IP_TTL"},
    {IPPROTO_IP, IP_MULTICAST_TTL, "IP_MULTICAST_TTL"},
    {IPPROTO_IP, IP_MULTICAST_LOOP, "IP_MULTICAST_LOOP"},
    {IPPROTO_IPV6, IPV6_V6ONLY, "IPV6_V6ONLY"},
    {IPPROTO_IPV6, IPV6_UNICAST_HOPS, "IPV6_UNICAST_HOPS"},
    {IPPROTO_IPV6, IPV6_TCLASS, "IPV6_TCLASS"},
    {IPPROTO_IPV6, IPV6_MULTICAST_HOPS, "IPV6_MULTICAST_HOPS"},
    {IPPROTO_IP, 15, "IP_FREEBIND"},
    {IPPROTO_IP, 19, "IP_TRANSPARENT"},
    {IPPROTO_IP, 24, "IP_BIND_ADDRESS_NO_PORT"},
    {IPPROTO_IPV6, 75, "IPV6_TRANSPARENT"},
    {IPPROTO_IPV6, 78, "IPV6_FREEBIND"},
};
#define NOPTS (sizeof opts / sizeof *opts)

static void open_one(unsigned idx, int s) {
    static const struct {
        int domain, type;
        const char *name;
    } kinds[] = {
        {AF_INET, SOCK_STREAM, "tcp4"},   {AF_INET6, SOCK_STREAM, "tcp6"},
        {AF_INET, SOCK_DGRAM, "udp4"},    {AF_INET6, SOCK_DGRAM, "udp6"},
        {AF_UNIX, SOCK_STREAM, "unix"},   {AF_UNIX, SOCK_DGRAM, "unixdg"},
        {AF_UNIX, SOCK_SEQPACKET, "unixsp"},
    };
    unsigned k = pick(sizeof kinds / sizeof *kinds);
    long r;
    if (kinds[k].domain == AF_UNIX) {
        int sv[2];
        r = socketpair(AF_UNIX, kinds[k].type, 0, sv);
        if (r == 0) {
            close(sv[1]);
            r = sv[0];
        }
    } else {
        r = socket(kinds[k].domain, kinds[k].type, 0);
    }
    printf("%u socket S%d %s = %s\n", idx, s, kinds[k].name, r < 0 ? res(r) : "ok");
    if (r >= 0) {
        fd[s] = (int)r;
        kind_name[s] = kinds[k].name;
    }
}

static void call(unsigned idx) {
    int s = used_slot();
    if (s < 0 || pick(12) == 0) {
        int f = free_slot();
        if (f >= 0)
            open_one(idx, f);
        return;
    }
    const struct opt *o = &opts[pick(NOPTS)];
    static const socklen_t lens[] = {0, 1, 2, 4, 4, 4, 4, 8, 16, 64};
    socklen_t len = lens[pick(sizeof lens / sizeof *lens)];
    unsigned char b[64];
    if (pick(2)) {
        static const int vals[] = {0, 1, 2, -1, 3, 100, 255, 256, 1000, 4096, 65536, 1 << 20,
                                   0x7fffffff};
        int v = vals[pick(sizeof vals / sizeof *vals)];
        memset(b, 0, sizeof b);
        /* A linger or a timeval is two numbers; others read the first. */
        memcpy(b, &v, 4);
        if (pick(2)) {
            int v2 = vals[pick(sizeof vals / sizeof *vals)];
            memcpy(b + 8, &v2, 4);
            memcpy(b + 4, &v2, 4);
        }
        long r = setsockopt(fd[s], o->level, o->name, b, len);
        printf("%u set S%d(%s) %s len %u value %d = %s\n", idx, s, kind_name[s], o->label,
               (unsigned)len, v, res(r));
    } else {
        memset(b, 0xaa, sizeof b);
        socklen_t got = len;
        long r = getsockopt(fd[s], o->level, o->name, b, &got);
        printf("%u get S%d(%s) %s len %u = %s", idx, s, kind_name[s], o->label, (unsigned)len,
               res(r));
        if (r == 0) {
            printf(" len %u:", (unsigned)got);
            for (socklen_t i = 0; i < got && i < 16; i++)
                printf(" %02x", b[i]);
        }
        printf("\n");
    }
}

static void begin(void) {}

int main(int argc, char **argv) {
    /* A partition's program has no capabilities: neither has this one, so
       that privileged options (SO_DEBUG, SO_PRIORITY above 6) answer alike. */
    drop_capabilities();
    return differ_main(argc, argv, "sockoptdiff", begin, call);
}
