// UDP multicast: group membership (ip_mreq, ip_mreqn, IPv4 groups on an
// IPv6 socket as Java joins them), the interface, TTL and loopback
// options, and a datagram sent to a group reaching a member through the
// host's multicast loopback. Every result and errno is printed; a
// partition must print what the host does (tests/tests/linux.rs).
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

// Errors by name: glibc's and musl's strerror texts differ.
static const char *ename(int e) {
    switch (e) {
    case EINVAL: return "EINVAL";
    case EADDRINUSE: return "EADDRINUSE";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case ENODEV: return "ENODEV";
    case ENOPROTOOPT: return "ENOPROTOOPT";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ENETUNREACH: return "ENETUNREACH";
    default: return "another error";
    }
}

static void r(const char *what, int rc) {
    if (rc < 0)
        printf("%s: -1 %s (%d)\n", what, ename(errno), errno);
    else
        printf("%s: %d\n", what, rc);
}

static struct ip_mreq mreq(const char *group, const char *iface) {
    struct ip_mreq m;
    inet_pton(AF_INET, group, &m.imr_multiaddr);
    inet_pton(AF_INET, iface, &m.imr_interface);
    return m;
}

static void getint(int s, int level, int name, const char *what) {
    int v = -7;
    socklen_t len = sizeof v;
    int rc = getsockopt(s, level, name, &v, &len);
    if (rc < 0)
        printf("get %s: -1 %s (%d)\n", what, ename(errno), errno);
    else
        printf("get %s: %d (len %u)\n", what, v, (unsigned)len);
}

int main(void) {
    const char *group = "239.255.77.31";
    // Options on a socket not yet bound: kept for its host socket.
    int early = socket(AF_INET, SOCK_DGRAM, 0);
    struct ip_mreq m = mreq(group, "0.0.0.0");
    r("unbound join", setsockopt(early, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m));
    r("unbound short join", setsockopt(early, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, 4));
    r("unbound join again", setsockopt(early, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m));
    struct ip_mreq unicast = mreq("10.1.2.3", "0.0.0.0");
    r("unbound join a unicast address",
      setsockopt(early, IPPROTO_IP, IP_ADD_MEMBERSHIP, &unicast, sizeof unicast));
    struct ip_mreq never = mreq("239.255.77.33", "0.0.0.0");
    r("unbound leave a group not joined",
      setsockopt(early, IPPROTO_IP, IP_DROP_MEMBERSHIP, &never, sizeof never));
    r("unbound leave", setsockopt(early, IPPROTO_IP, IP_DROP_MEMBERSHIP, &m, sizeof m));
    r("unbound leave again", setsockopt(early, IPPROTO_IP, IP_DROP_MEMBERSHIP, &m, sizeof m));
    r("unbound join after leaving", setsockopt(early, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m));
    getint(early, IPPROTO_IP, IP_MULTICAST_ALL, "IP_MULTICAST_ALL");
    unsigned char ttl = 3;
    r("unbound ttl", setsockopt(early, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, 1));
    getint(early, IPPROTO_IP, IP_MULTICAST_TTL, "IP_MULTICAST_TTL");
    close(early);

    int rx = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    r("bind", bind(rx, (struct sockaddr *)&a, sizeof a));
    socklen_t alen = sizeof a;
    getsockname(rx, (struct sockaddr *)&a, &alen);
    r("join", setsockopt(rx, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m));
    r("join again", setsockopt(rx, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m));
    struct ip_mreq bad = mreq("10.1.2.3", "0.0.0.0");
    r("join a unicast address", setsockopt(rx, IPPROTO_IP, IP_ADD_MEMBERSHIP, &bad, sizeof bad));
    struct ip_mreq other = mreq("239.255.77.32", "0.0.0.0");
    r("leave a group not joined", setsockopt(rx, IPPROTO_IP, IP_DROP_MEMBERSHIP, &other, sizeof other));
    struct ip_mreqn n = {.imr_ifindex = 0};
    inet_pton(AF_INET, "239.255.77.33", &n.imr_multiaddr);
    r("join by ip_mreqn", setsockopt(rx, IPPROTO_IP, IP_ADD_MEMBERSHIP, &n, sizeof n));
    r("leave by ip_mreqn", setsockopt(rx, IPPROTO_IP, IP_DROP_MEMBERSHIP, &n, sizeof n));
    struct ip_mreqn nodev = {.imr_ifindex = 999};
    inet_pton(AF_INET, "239.255.77.34", &nodev.imr_multiaddr);
    r("join on no such interface", setsockopt(rx, IPPROTO_IP, IP_ADD_MEMBERSHIP, &nodev, sizeof nodev));
    struct in_addr lo;
    inet_pton(AF_INET, "127.0.0.1", &lo);
    r("IP_MULTICAST_IF 127.0.0.1", setsockopt(rx, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo));
    struct in_addr got = {0};
    socklen_t glen = sizeof got;
    r("get IP_MULTICAST_IF", getsockopt(rx, IPPROTO_IP, IP_MULTICAST_IF, &got, &glen));
    printf("  = %s (len %u)\n", inet_ntoa(got), (unsigned)glen);
    struct in_addr nowhere;
    inet_pton(AF_INET, "192.0.2.77", &nowhere);
    r("IP_MULTICAST_IF of no interface", setsockopt(rx, IPPROTO_IP, IP_MULTICAST_IF, &nowhere, sizeof nowhere));
    struct in_addr any = {0};
    r("IP_MULTICAST_IF any", setsockopt(rx, IPPROTO_IP, IP_MULTICAST_IF, &any, sizeof any));
    int two = 2;
    r("IP_MULTICAST_ALL 2", setsockopt(rx, IPPROTO_IP, IP_MULTICAST_ALL, &two, sizeof two));

    // A datagram to the group from another socket: looped back to the
    // member by the host (IP_MULTICAST_LOOP is on by default).
    int tx = socket(AF_INET, SOCK_DGRAM, 0);
    int loop = 1;
    r("tx loop", setsockopt(tx, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop));
    struct sockaddr_in to = a;
    inet_pton(AF_INET, group, &to.sin_addr);
    int sent = (int)sendto(tx, "to the group", 12, 0, (struct sockaddr *)&to, sizeof to);
    r("send to the group", sent);
    if (sent == 12) {
        struct pollfd p = {.fd = rx, .events = POLLIN};
        r("poll", poll(&p, 1, 5000));
        char buf[64] = {0};
        int got_n = (int)recv(rx, buf, sizeof buf - 1, MSG_DONTWAIT);
        r("receive", got_n);
        if (got_n > 0)
            printf("  = %s\n", buf);
    }
    r("leave", setsockopt(rx, IPPROTO_IP, IP_DROP_MEMBERSHIP, &m, sizeof m));
    r("leave again", setsockopt(rx, IPPROTO_IP, IP_DROP_MEMBERSHIP, &m, sizeof m));

    // An IPv4 group on a dual-stack IPv6 socket, as Java joins one.
    int six = socket(AF_INET6, SOCK_DGRAM, 0);
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = in6addr_any};
    r("bind ::", bind(six, (struct sockaddr *)&a6, sizeof a6));
    r("v6 socket joins an IPv4 group", setsockopt(six, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m));
    getint(six, IPPROTO_IPV6, IPV6_MULTICAST_IF, "IPV6_MULTICAST_IF");
    int idx = 1;
    r("IPV6_MULTICAST_IF 1", setsockopt(six, IPPROTO_IPV6, IPV6_MULTICAST_IF, &idx, sizeof idx));
    getint(six, IPPROTO_IPV6, IPV6_MULTICAST_IF, "IPV6_MULTICAST_IF");
    int off = 0;
    r("IPV6_MULTICAST_ALL 0", setsockopt(six, IPPROTO_IPV6, IPV6_MULTICAST_ALL, &off, sizeof off));
    getint(six, IPPROTO_IPV6, IPV6_MULTICAST_ALL, "IPV6_MULTICAST_ALL");
    r("IPV6 option on an IPv4 socket", setsockopt(rx, IPPROTO_IPV6, IPV6_MULTICAST_IF, &idx, sizeof idx));
    close(six);
    close(tx);
    close(rx);
    return 0;
}
