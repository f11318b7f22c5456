/* Extended attributes on files, directories and links: values, lists,
 * flags and the errors of every form of the calls. Run on the host and in
 * a partition; the output must be the same.
 * Usage: xattr DIR */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "errname.h"

static void show(const char *what, long r) {
    if (r < 0)
        printf("%s = -1 %s\n", what, errname(errno));
    else
        printf("%s = %ld\n", what, r);
}

/* The names of a list, sorted (the file system's order is its own). */
static void names(const char *what, const char *buf, long n) {
    const char *v[64];
    int k = 0;
    for (long i = 0; i < n && k < 64; i += (long)strlen(buf + i) + 1)
        v[k++] = buf + i;
    for (int i = 0; i < k; i++)
        for (int j = i + 1; j < k; j++)
            if (strcmp(v[j], v[i]) < 0) {
                const char *t = v[i];
                v[i] = v[j];
                v[j] = t;
            }
    printf("%s:", what);
    for (int i = 0; i < k; i++)
        if (!strncmp(v[i], "user.", 5))
            printf(" %s", v[i]);
    printf("\n");
}

int main(int argc, char **argv) {
    if (argc != 2 || chdir(argv[1]) != 0) {
        fprintf(stderr, "usage: xattr DIR\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int fd = open("f", O_CREAT | O_RDWR, 0644);
    mkdir("d", 0755);
    symlink("f", "l");
    char buf[256], big[70000];
    memset(big, 'x', sizeof big);

    show("set user.a", setxattr("f", "user.a", "alpha", 5, 0));
    show("set user.a CREATE", setxattr("f", "user.a", "again", 5, XATTR_CREATE));
    show("set user.b REPLACE", setxattr("f", "user.b", "beta", 4, XATTR_REPLACE));
    show("set user.b CREATE", setxattr("f", "user.b", "beta", 4, XATTR_CREATE));
    show("set user.a REPLACE", setxattr("f", "user.a", "ALPHA!", 6, XATTR_REPLACE));
    show("set user.empty", setxattr("f", "user.empty", "", 0, 0));
    show("set bad flags", setxattr("f", "user.c", "c", 1, 4));
    show("set empty name", setxattr("f", "", "c", 1, 0));
    memset(buf, 'n', 255);
    memcpy(buf, "user.", 5);
    buf[255] = 0;
    show("set 255-byte name", setxattr("f", buf, "c", 1, 0));
    show("remove 255-byte name", removexattr("f", buf));
    char longname[300];
    memset(longname, 'n', 299);
    memcpy(longname, "user.", 5);
    longname[299] = 0;
    show("set 299-byte name", setxattr("f", longname, "c", 1, 0));
    show("set too big", setxattr("f", "user.big", big, 65537, 0));
    show("set no namespace", setxattr("f", "plain", "c", 1, 0));
    show("set unknown namespace", setxattr("f", "foo.c", "c", 1, 0));
    show("set missing file", setxattr("missing", "user.c", "c", 1, 0));
    show("set bad flags missing file", setxattr("missing", "user.c", "c", 1, 4));

    show("get user.a size", getxattr("f", "user.a", NULL, 0));
    long n = getxattr("f", "user.a", buf, sizeof buf);
    show("get user.a", n);
    printf("  value %.*s\n", (int)(n > 0 ? n : 0), buf);
    show("get user.a small", getxattr("f", "user.a", buf, 3));
    show("get user.empty", getxattr("f", "user.empty", buf, sizeof buf));
    show("get user.none", getxattr("f", "user.none", buf, sizeof buf));
    show("get empty name", getxattr("f", "", buf, sizeof buf));
    show("get missing file", getxattr("missing", "user.a", buf, sizeof buf));
    show("get through link", getxattr("l", "user.a", buf, sizeof buf));
    show("lget link", lgetxattr("l", "user.a", buf, sizeof buf));
    show("lset link", lsetxattr("l", "user.a", "z", 1, 0));
    show("lremove link", lremovexattr("l", "user.a"));
    show("fget", fgetxattr(fd, "user.b", buf, sizeof buf));
    show("fset user.c", fsetxattr(fd, "user.c", "gamma", 5, 0));
    show("fget bad fd", fgetxattr(99, "user.b", buf, sizeof buf));

    n = listxattr("f", buf, sizeof buf);
    show("list size>0", n > 0 ? 0 : n);
    names("list f", buf, n);
    long need = listxattr("f", NULL, 0);
    printf("list size query matches: %d\n", need == n);
    show("list small", listxattr("f", buf, 4));
    n = flistxattr(fd, buf, sizeof buf);
    names("flist f", buf, n);
    n = llistxattr("l", buf, sizeof buf);
    names("llist l", buf, n);

    show("remove user.b", removexattr("f", "user.b"));
    show("remove user.b again", removexattr("f", "user.b"));
    show("fremove user.c", fremovexattr(fd, "user.c"));
    n = listxattr("f", buf, sizeof buf);
    names("list f after removes", buf, n);

    show("set on dir", setxattr("d", "user.dir", "D", 1, 0));
    n = getxattr("d", "user.dir", buf, sizeof buf);
    printf("get on dir = %ld %.*s\n", n, (int)(n > 0 ? n : 0), buf);
    /* (How large a value may be is the file system's choice.) */
    show("set 1000 bytes", setxattr("d", "user.max", big, 1000, 0));
    show("get 1000 bytes", getxattr("d", "user.max", big, sizeof big));

    close(fd);
    unlink("l");
    unlink("f");
    removexattr("d", "user.dir");
    removexattr("d", "user.max");
    rmdir("d");
    return 0;
}
