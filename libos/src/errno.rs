//! Linux error numbers, the library OS's one error type. They become `-errno`
//! at the system-call boundary (one place, with the Linux personality) and
//! arrive from the gateway in `Rlerror`.

/// A Linux errno value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub u32);

#[allow(missing_docs)]
impl Errno {
    pub const EPERM: Errno = Errno(1);
    /// Internal, never seen by the program: a wait was cut short by a
    /// signal; the call is restarted if the handler has `SA_RESTART`, else
    /// it fails with `EINTR` (Linux's `-ERESTARTSYS`).
    pub const ERESTARTSYS: Errno = Errno(512);
    /// Internal, never seen by the program: a wait was cut short by a
    /// signal; the call is restarted once the handler returns, whatever
    /// its flags (Linux's `-ERESTARTNOINTR`).
    pub const ERESTARTNOINTR: Errno = Errno(513);
    pub const ESRCH: Errno = Errno(3);
    pub const ECHILD: Errno = Errno(10);
    pub const ETIMEDOUT: Errno = Errno(110);
    pub const EAFNOSUPPORT: Errno = Errno(97);
    pub const ENOENT: Errno = Errno(2);
    pub const EIO: Errno = Errno(5);
    pub const EBADF: Errno = Errno(9);
    pub const EFAULT: Errno = Errno(14);
    pub const E2BIG: Errno = Errno(7);
    pub const ENOEXEC: Errno = Errno(8);
    pub const ENOMEM: Errno = Errno(12);
    pub const EACCES: Errno = Errno(13);
    pub const EBUSY: Errno = Errno(16);
    pub const EEXIST: Errno = Errno(17);
    pub const ENOTDIR: Errno = Errno(20);
    pub const EISDIR: Errno = Errno(21);
    pub const EINVAL: Errno = Errno(22);
    pub const ENFILE: Errno = Errno(23);
    pub const EMFILE: Errno = Errno(24);
    pub const EROFS: Errno = Errno(30);
    pub const ENAMETOOLONG: Errno = Errno(36);
    pub const ENOSYS: Errno = Errno(38);
    pub const ENOTEMPTY: Errno = Errno(39);
    pub const EPROTO: Errno = Errno(71);
    pub const ENODEV: Errno = Errno(19);
    pub const EOPNOTSUPP: Errno = Errno(95);
    pub const ENOTTY: Errno = Errno(25);
    pub const ESPIPE: Errno = Errno(29);
    pub const ERANGE: Errno = Errno(34);
    pub const EDOM: Errno = Errno(33);
    pub const ELOOP: Errno = Errno(40);
    pub const EAGAIN: Errno = Errno(11);
    pub const EDEADLK: Errno = Errno(35);
    pub const EINTR: Errno = Errno(4);
    pub const ENXIO: Errno = Errno(6);
    pub const ENOSPC: Errno = Errno(28);
    pub const EFBIG: Errno = Errno(27);
    pub const EPIPE: Errno = Errno(32);
    pub const ENOLCK: Errno = Errno(37);
    pub const ENOTSOCK: Errno = Errno(88);
    pub const EDESTADDRREQ: Errno = Errno(89);
    pub const EMSGSIZE: Errno = Errno(90);
    pub const EPROTOTYPE: Errno = Errno(91);
    pub const ENOPROTOOPT: Errno = Errno(92);
    pub const EPROTONOSUPPORT: Errno = Errno(93);
    pub const ESOCKTNOSUPPORT: Errno = Errno(94);
    pub const EADDRINUSE: Errno = Errno(98);
    pub const EADDRNOTAVAIL: Errno = Errno(99);
    pub const ENETUNREACH: Errno = Errno(101);
    pub const ECONNABORTED: Errno = Errno(103);
    pub const ECONNRESET: Errno = Errno(104);
    pub const EISCONN: Errno = Errno(106);
    pub const ENOTCONN: Errno = Errno(107);
    pub const ECONNREFUSED: Errno = Errno(111);
    pub const EHOSTUNREACH: Errno = Errno(113);
    pub const EALREADY: Errno = Errno(114);
    pub const EINPROGRESS: Errno = Errno(115);
}

impl Errno {
    /// The symbolic name, for messages.
    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "EPERM",
            2 => "ENOENT",
            4 => "EINTR",
            5 => "EIO",
            6 => "ENXIO",
            7 => "E2BIG",
            8 => "ENOEXEC",
            9 => "EBADF",
            11 => "EAGAIN",
            12 => "ENOMEM",
            13 => "EACCES",
            14 => "EFAULT",
            16 => "EBUSY",
            17 => "EEXIST",
            19 => "ENODEV",
            20 => "ENOTDIR",
            21 => "EISDIR",
            22 => "EINVAL",
            23 => "ENFILE",
            24 => "EMFILE",
            25 => "ENOTTY",
            27 => "EFBIG",
            28 => "ENOSPC",
            29 => "ESPIPE",
            32 => "EPIPE",
            33 => "EDOM",
            34 => "ERANGE",
            35 => "EDEADLK",
            37 => "ENOLCK",
            30 => "EROFS",
            36 => "ENAMETOOLONG",
            38 => "ENOSYS",
            39 => "ENOTEMPTY",
            40 => "ELOOP",
            71 => "EPROTO",
            95 => "EOPNOTSUPP",
            88 => "ENOTSOCK",
            89 => "EDESTADDRREQ",
            90 => "EMSGSIZE",
            91 => "EPROTOTYPE",
            92 => "ENOPROTOOPT",
            93 => "EPROTONOSUPPORT",
            94 => "ESOCKTNOSUPPORT",
            98 => "EADDRINUSE",
            99 => "EADDRNOTAVAIL",
            101 => "ENETUNREACH",
            103 => "ECONNABORTED",
            104 => "ECONNRESET",
            106 => "EISCONN",
            107 => "ENOTCONN",
            111 => "ECONNREFUSED",
            113 => "EHOSTUNREACH",
            114 => "EALREADY",
            115 => "EINPROGRESS",
            _ => "errno",
        }
    }
}

impl core::fmt::Display for Errno {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "errno {} ({})", self.0, self.name())
    }
}
