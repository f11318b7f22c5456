/* Differential exerciser for what a process without capabilities may do
 * about its identity and the system: the same random sequence of calls on
 * the host (capabilities dropped first, and checked: the program refuses
 * to run with any, since some of these calls would change the machine)
 * and in a partition must print the same lines.
 *
 *   privdiff run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT calls
 *
 * setuid/setgid/setreuid/setregid/setresuid/setresgid/setfsuid/setfsgid
 * with the own ids, -1 and others; setgroups; personality; and the calls
 * only a privileged process may make (sethostname with the current name,
 * reboot with wrong magic, mount of a file system that does not exist,
 * umount2, chroot, pivot_root, settimeofday, clock_settime, iopl, ioperm,
 * swapon/swapoff of nothing, acct, module and kexec calls with garbage,
 * vhangup) with valid and invalid arguments and bad pointers. Each line
 * is "INDEX CALL ARGS = RESULT". */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>

#define SLOTS 1
#include "differ.h"

static uint32_t uid, gid;
static char hostname[65], domainname[65];

static uint32_t id_pick(uint32_t own) {
    static const uint32_t other[] = {0, 1, 1000, 65534};
    switch (pick(4)) {
    case 0: return own;
    case 1: return (uint32_t)-1;
    case 2: return own;
    default: return other[pick(4)];
    }
}

static const char *show_id(uint32_t v, uint32_t own) {
    return v == own ? "own" : v == (uint32_t)-1 ? "-1" : v == 0 ? "0" : v == 1 ? "1"
           : v == 1000                                 ? "1000"
                                                       : "65534";
}

static const char *path_pick(const char **name) {
    static const struct {
        const char *p, *n;
    } paths[] = {{"/", "/"},     {"/tmp", "/tmp"}, {"/nonexistent/x", "missing"},
                 {"", "empty"},  {"/dev/null", "/dev/null"}, {NULL, "NULL"}};
    unsigned k = pick(6);
    *name = paths[k].n;
    return paths[k].p;
}

static void call(unsigned idx) {
    long r;
    const char *pn;
    switch (pick(26)) {
    case 0: {
        uint32_t a = id_pick(uid);
        r = syscall(SYS_setuid, a);
        printf("%u setuid %s = %s\n", idx, show_id(a, uid), res(r));
        break;
    }
    case 1: {
        uint32_t a = id_pick(gid);
        r = syscall(SYS_setgid, a);
        printf("%u setgid %s = %s\n", idx, show_id(a, gid), res(r));
        break;
    }
    case 2: {
        uint32_t a = id_pick(uid), b = id_pick(uid);
        r = syscall(SYS_setreuid, a, b);
        printf("%u setreuid %s %s = %s\n", idx, show_id(a, uid), show_id(b, uid), res(r));
        break;
    }
    case 3: {
        uint32_t a = id_pick(gid), b = id_pick(gid);
        r = syscall(SYS_setregid, a, b);
        printf("%u setregid %s %s = %s\n", idx, show_id(a, gid), show_id(b, gid), res(r));
        break;
    }
    case 4: {
        uint32_t a = id_pick(uid), b = id_pick(uid), c = id_pick(uid);
        r = syscall(SYS_setresuid, a, b, c);
        printf("%u setresuid %s %s %s = %s\n", idx, show_id(a, uid), show_id(b, uid),
               show_id(c, uid), res(r));
        break;
    }
    case 5: {
        uint32_t a = id_pick(gid), b = id_pick(gid), c = id_pick(gid);
        r = syscall(SYS_setresgid, a, b, c);
        printf("%u setresgid %s %s %s = %s\n", idx, show_id(a, gid), show_id(b, gid),
               show_id(c, gid), res(r));
        break;
    }
    case 6: {
        uint32_t a = id_pick(uid);
        r = syscall(SYS_setfsuid, a);
        printf("%u setfsuid %s = %s\n", idx, show_id(a, uid), r == (long)uid ? "own" : res(r));
        break;
    }
    case 7: {
        uint32_t a = id_pick(gid);
        r = syscall(SYS_setfsgid, a);
        printf("%u setfsgid %s = %s\n", idx, show_id(a, gid), r == (long)gid ? "own" : res(r));
        break;
    }
    case 8: {
        gid_t g[2] = {gid, 1};
        int n = (int)pick(3);
        r = syscall(SYS_setgroups, n, pick(4) ? (void *)g : NULL);
        printf("%u setgroups %d = %s\n", idx, n, res(r));
        break;
    }
    case 9: {
        static const unsigned long p[] = {0xffffffff, 0, 0x0008 /* PER_LINUX32 */,
                                          0x0040000 /* ADDR_NO_RANDOMIZE */, 0};
        unsigned long v = p[pick(5)];
        r = syscall(SYS_personality, v);
        printf("%u personality %#lx = %s\n", idx, v, res(r));
        break;
    }
    case 10: {
        int same = pick(3);
        r = syscall(SYS_sethostname, same ? hostname : "x", same ? strlen(hostname) : 1);
        printf("%u sethostname = %s\n", idx, res(r));
        break;
    }
    case 11:
        r = syscall(SYS_setdomainname, domainname, strlen(domainname));
        printf("%u setdomainname = %s\n", idx, res(r));
        break;
    case 12:
        /* Wrong magic: EINVAL even for a process allowed to reboot. */
        r = syscall(SYS_reboot, 0x1234, 0x5678, 0, NULL);
        printf("%u reboot = %s\n", idx, res(r));
        break;
    case 13: {
        const char *p = path_pick(&pn);
        unsigned long flags = pick(5) == 0 ? 1UL << 31 : 0;
        r = syscall(SYS_mount, "none", p, pick(4) ? "nonexistentfs" : NULL, flags, NULL);
        printf("%u mount %s %#lx = %s\n", idx, pn, flags, res(r));
        break;
    }
    case 14: {
        const char *p = path_pick(&pn);
        int flags = pick(4) == 0 ? 0x10 : (int)pick(16);
        r = syscall(SYS_umount2, p, flags);
        printf("%u umount2 %s %#x = %s\n", idx, pn, flags, res(r));
        break;
    }
    case 15: {
        const char *p = path_pick(&pn);
        r = syscall(SYS_chroot, p);
        printf("%u chroot %s = %s\n", idx, pn, res(r));
        break;
    }
    case 16: {
        const char *p = path_pick(&pn);
        r = syscall(SYS_pivot_root, p, "/tmp");
        printf("%u pivot_root %s = %s\n", idx, pn, res(r));
        break;
    }
    case 17: {
        static const struct timeval tvs[] = {{1, 0}, {1, 1000000}, {1, 1000001}, {-1, 0}, {1, -1}};
        unsigned k = pick(6);
        struct timezone tz = {0, 0};
        r = syscall(SYS_settimeofday, k < 5 ? &tvs[k] : NULL, pick(3) ? NULL : &tz);
        printf("%u settimeofday %u = %s\n", idx, k, res(r));
        break;
    }
    case 18: {
        static const struct timespec tss[] = {{1, 0}, {1, 999999999}, {1, 1000000000}, {-1, 0}};
        static const int clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, 100, -1};
        unsigned k = pick(5);
        int c = clocks[pick(5)];
        r = syscall(SYS_clock_settime, c, k < 4 ? &tss[k] : NULL);
        printf("%u clock_settime %d %u = %s\n", idx, c, k, res(r));
        break;
    }
    case 19: {
        static const unsigned long levels[] = {0, 1, 3, 4, 100};
        unsigned long l = levels[pick(5)];
        r = syscall(SYS_iopl, l);
        printf("%u iopl %lu = %s\n", idx, l, res(r));
        break;
    }
    case 20: {
        static const unsigned long froms[] = {0, 0x3f8, 65535, 65536, 0x10000000};
        static const unsigned long nums[] = {0, 1, 8, 65536};
        unsigned long f = froms[pick(5)], n = nums[pick(4)];
        int on = (int)pick(2);
        r = syscall(SYS_ioperm, f, n, on);
        printf("%u ioperm %#lx %lu %d = %s\n", idx, f, n, on, res(r));
        break;
    }
    case 21: {
        const char *p = path_pick(&pn);
        int off = (int)pick(2);
        r = syscall(off ? SYS_swapoff : SYS_swapon, p, 0);
        printf("%u %s %s = %s\n", idx, off ? "swapoff" : "swapon", pn, res(r));
        break;
    }
    case 22:
        r = syscall(SYS_acct, NULL);
        printf("%u acct = %s\n", idx, res(r));
        break;
    case 23: {
        static char junk[64];
        int which = (int)pick(3);
        if (which == 0)
            r = syscall(SYS_init_module, junk, sizeof junk, "");
        else if (which == 1)
            r = syscall(SYS_finit_module, -1, "", 0);
        else
            r = syscall(SYS_delete_module, "no_such_module_here", 0);
        printf("%u module %d = %s\n", idx, which, res(r));
        break;
    }
    case 24: {
        int file = (int)pick(2);
        if (file)
            r = syscall(SYS_kexec_file_load, -1, -1, 0, "", 0xdeadbeefUL);
        else
            r = syscall(SYS_kexec_load, 0, 0, NULL, 0xdeadbeefUL);
        printf("%u kexec %d = %s\n", idx, file, res(r));
        break;
    }
    default:
        r = syscall(SYS_vhangup);
        printf("%u vhangup = %s\n", idx, res(r));
        break;
    }
}

static void begin(void) {}

int main(int argc, char **argv) {
    /* These calls change the machine for a process that may make them. */
    if (!drop_capabilities()) {
        fprintf(stderr, "privdiff: capabilities could not be dropped; not running\n");
        return 2;
    }
    uid = (uint32_t)getuid();
    gid = (uint32_t)getgid();
    gethostname(hostname, sizeof hostname - 1);
    getdomainname(domainname, sizeof domainname - 1);
    return differ_main(argc, argv, "privdiff", begin, call);
}
