/* The symbolic name of an errno value (musl has no strerrorname_np). */
#include <errno.h>
#include <stdio.h>

static const char *errname(int e)
{
    static char buf[32];
    switch (e) {
    case EIO: return "EIO";
    case ESRCH: return "ESRCH";
    case ENOSYS: return "ENOSYS";
    case ENOPROTOOPT: return "ENOPROTOOPT";
    case EXDEV: return "EXDEV";
    case EDEADLK: return "EDEADLK";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ENFILE: return "ENFILE";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    case EFAULT: return "EFAULT";
    case EACCES: return "EACCES";
    case ENOSPC: return "ENOSPC";
    case EDQUOT: return "EDQUOT";
    case EFBIG: return "EFBIG";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case EBUSY: return "EBUSY";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENODATA: return "ENODATA";
    case ERANGE: return "ERANGE";
    case E2BIG: return "E2BIG";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EPERM: return "EPERM";
    case EAGAIN: return "EAGAIN";
    case ENOTDIR: return "ENOTDIR";
    case EBADF: return "EBADF";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case EROFS: return "EROFS";
    case ENOTCONN: return "ENOTCONN";
    case ECONNRESET: return "ECONNRESET";
    case EPIPE: return "EPIPE";
    case EMFILE: return "EMFILE";
    case EINTR: return "EINTR";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EADDRINUSE: return "EADDRINUSE";
    case EISCONN: return "EISCONN";
    case ENOTSOCK: return "ENOTSOCK";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case EMSGSIZE: return "EMSGSIZE";
    case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    }
    snprintf(buf, sizeof buf, "errno %d", e);
    return buf;
}
