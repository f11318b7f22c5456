//! The initial process stack, laid out as Linux's `create_elf_tables` does
//! for the System V x86-64 ABI.
//!
//! From low to high addresses:
//!
//! ```text
//! sp ->  argc
//!        argv[0] .. argv[argc-1], NULL
//!        envp[0] .. envp[envc-1], NULL
//!        auxv pairs (given ones, AT_RANDOM, AT_EXECFN, AT_PLATFORM), AT_NULL
//!        padding (so that sp is 16-byte aligned)
//!        argv strings, envp strings, platform, execfn, 16 random bytes
//! top
//! ```
//!
//! [`StackImage::build`] is pure: it returns the bytes and the addresses
//! they assume, and the caller copies them to end exactly at `top`.

use alloc::vec::Vec;
use core::fmt;

use crate::errno::Errno;

/// End of the auxiliary vector.
pub const AT_NULL: u64 = 0;
/// Address of the program headers of the executable.
pub const AT_PHDR: u64 = 3;
/// Size of one program header.
pub const AT_PHENT: u64 = 4;
/// Number of program headers.
pub const AT_PHNUM: u64 = 5;
/// System page size.
pub const AT_PAGESZ: u64 = 6;
/// Load base of the interpreter.
pub const AT_BASE: u64 = 7;
/// Flags (always 0 on Linux).
pub const AT_FLAGS: u64 = 8;
/// Entry point of the executable.
pub const AT_ENTRY: u64 = 9;
/// Real user id.
pub const AT_UID: u64 = 11;
/// Effective user id.
pub const AT_EUID: u64 = 12;
/// Real group id.
pub const AT_GID: u64 = 13;
/// Effective group id.
pub const AT_EGID: u64 = 14;
/// Address of the platform string ("x86_64").
pub const AT_PLATFORM: u64 = 15;
/// CPUID feature bits (EDX of leaf 1).
pub const AT_HWCAP: u64 = 16;
/// Clock ticks per second (`times`).
pub const AT_CLKTCK: u64 = 17;
/// Secure mode (setuid): 0 here.
pub const AT_SECURE: u64 = 23;
/// Address of 16 random bytes (stack protector and pointer guard seeds).
pub const AT_RANDOM: u64 = 25;
/// More feature bits (on x86: ring-3 `FSGSBASE`).
pub const AT_HWCAP2: u64 = 26;
/// Address of the executed file name.
pub const AT_EXECFN: u64 = 31;
/// Address of the vDSO's ELF header.
pub const AT_SYSINFO_EHDR: u64 = 33;
/// Minimal signal stack size the kernel needs for a signal frame.
pub const AT_MINSIGSTKSZ: u64 = 51;

/// Largest image accepted: Linux's default limit, a quarter of the 8 MiB
/// stack rlimit.
pub const MAX_IMAGE_SIZE: usize = 2 << 20;
/// Longest single argument or environment string, NUL included (Linux's
/// `MAX_ARG_STRLEN`).
pub const MAX_ARG_STRLEN: usize = 32 * 4096;

const WORD: usize = 8;
const RANDOM_LEN: usize = 16;

/// Why the stack could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackError {
    /// The image would exceed [`MAX_IMAGE_SIZE`], or one string
    /// [`MAX_ARG_STRLEN`] (`E2BIG`).
    TooBig,
    /// A string contains a NUL byte, so it cannot be a C string.
    InteriorNul,
    /// The given auxv contains a type the builder supplies itself
    /// (`AT_NULL`, `AT_RANDOM`, `AT_EXECFN`, `AT_PLATFORM`).
    ReservedAuxv(u64),
    /// `top` is too low to hold the image below it.
    TopTooLow,
}

impl StackError {
    /// The errno `execve` reports.
    pub const fn errno(&self) -> Errno {
        match self {
            StackError::TooBig => Errno::E2BIG,
            StackError::InteriorNul | StackError::ReservedAuxv(_) => Errno::EINVAL,
            StackError::TopTooLow => Errno::ENOMEM,
        }
    }
}

impl fmt::Display for StackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StackError::TooBig => f.write_str("argument list too long"),
            StackError::InteriorNul => f.write_str("argument contains a NUL byte"),
            StackError::ReservedAuxv(t) => write!(f, "auxv type {t} is supplied by the builder"),
            StackError::TopTooLow => f.write_str("stack top too low for the initial stack"),
        }
    }
}

/// The initial stack of a new process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackImage {
    /// The bytes to copy to `[sp, top)`.
    pub bytes: Vec<u8>,
    /// Initial `rsp`: the address of `argc`, 16-byte aligned as the ABI
    /// requires at process entry.
    pub sp: u64,
    /// Address of `argv[0]` (`sp + 8`).
    pub argv_addr: u64,
    /// Address of `envp[0]`.
    pub envp_addr: u64,
    /// Address of the first auxv pair.
    pub auxv_addr: u64,
}

impl StackImage {
    /// Lays out the stack that ends at `top`.
    ///
    /// `auxv` holds the caller's pairs (`AT_PHDR`, `AT_ENTRY`, `AT_PAGESZ`, ...);
    /// the builder appends `AT_RANDOM` (pointing at `random16`), `AT_EXECFN`
    /// (a copy of `argv[0]`, or an empty string if `argv` is empty),
    /// `AT_PLATFORM` (omitted if `platform` is empty, as Linux does without
    /// one) and `AT_NULL`. Strings are given without their NUL.
    pub fn build(
        top: u64,
        argv: &[&[u8]],
        envp: &[&[u8]],
        auxv: &[(u64, u64)],
        random16: [u8; 16],
        platform: &[u8],
    ) -> Result<StackImage, StackError> {
        for s in argv.iter().chain(envp) {
            if s.len() >= MAX_ARG_STRLEN {
                return Err(StackError::TooBig);
            }
        }
        for s in argv.iter().chain(envp).chain([&platform]) {
            if s.contains(&0) {
                return Err(StackError::InteriorNul);
            }
        }
        if let Some(&(t, _)) = auxv
            .iter()
            .find(|(t, _)| matches!(*t, AT_NULL | AT_RANDOM | AT_EXECFN | AT_PLATFORM))
        {
            return Err(StackError::ReservedAuxv(t));
        }
        let execfn = argv.first().copied().unwrap_or_default();
        let has_platform = !platform.is_empty();

        // Sizes, every sum checked against the limit so nothing overflows.
        let cstr_len = |s: &[u8]| s.len().checked_add(1).ok_or(StackError::TooBig);
        let mut strings_len = RANDOM_LEN;
        for s in argv
            .iter()
            .chain(envp)
            .chain(has_platform.then_some(&platform))
            .chain([&execfn])
        {
            strings_len = within_limit(strings_len.checked_add(cstr_len(s)?))?;
        }
        // argc, argv + NULL, envp + NULL.
        let mut words = within_limit(argv.len().checked_add(envp.len()))?;
        words = within_limit(words.checked_add(3))?;
        // The given auxv pairs, AT_RANDOM, AT_EXECFN, maybe AT_PLATFORM, AT_NULL.
        let aux_pairs = within_limit(auxv.len().checked_add(3 + usize::from(has_platform)))?;
        words = within_limit(aux_pairs.checked_mul(2).and_then(|a| a.checked_add(words)))?;
        let table_len = within_limit(words.checked_mul(WORD))?;
        within_limit(table_len.checked_add(strings_len))?;

        let to_u64 = |n: usize| u64::try_from(n).map_err(|_| StackError::TooBig);
        let strings_start = top
            .checked_sub(to_u64(strings_len)?)
            .ok_or(StackError::TopTooLow)?;
        let sp = strings_start
            .checked_sub(to_u64(table_len)?)
            .ok_or(StackError::TopTooLow)?
            & !15;
        let size = usize::try_from(top - sp).map_err(|_| StackError::TooBig)?;
        within_limit(Some(size))?;

        // Addresses, in the order the strings are laid out. All lie in
        // `[strings_start, top)`, so the sums cannot overflow.
        let mut cursor = strings_start;
        let mut place = |len: usize| {
            let addr = cursor;
            cursor += len as u64;
            addr
        };
        let mut bytes = Vec::with_capacity(size);
        let mut push = |v: u64| bytes.extend_from_slice(&v.to_le_bytes());
        push(argv.len() as u64);
        for s in argv {
            push(place(s.len() + 1));
        }
        push(0);
        for s in envp {
            push(place(s.len() + 1));
        }
        push(0);
        let platform_addr = has_platform.then(|| place(platform.len() + 1));
        let execfn_addr = place(execfn.len() + 1);
        let random_addr = place(RANDOM_LEN);
        debug_assert_eq!(cursor, top);
        for &(t, v) in auxv {
            push(t);
            push(v);
        }
        push(AT_RANDOM);
        push(random_addr);
        push(AT_EXECFN);
        push(execfn_addr);
        if let Some(addr) = platform_addr {
            push(AT_PLATFORM);
            push(addr);
        }
        push(AT_NULL);
        push(0);

        // Padding up to the strings, then the strings in the same order.
        bytes.resize(size - strings_len, 0);
        let mut push_cstr = |s: &[u8]| {
            bytes.extend_from_slice(s);
            bytes.push(0);
        };
        argv.iter().chain(envp).for_each(|s| push_cstr(s));
        if has_platform {
            push_cstr(platform);
        }
        push_cstr(execfn);
        bytes.extend_from_slice(&random16);
        debug_assert_eq!(bytes.len(), size);

        let argv_addr = sp + WORD as u64;
        let envp_addr = argv_addr + (WORD * (argv.len() + 1)) as u64;
        let auxv_addr = envp_addr + (WORD * (envp.len() + 1)) as u64;
        Ok(StackImage {
            bytes,
            sp,
            argv_addr,
            envp_addr,
            auxv_addr,
        })
    }

    /// The address one past the image (the `top` it was built for).
    pub fn top(&self) -> u64 {
        self.sp.saturating_add(self.bytes.len() as u64)
    }
}

/// `n`, if it was computed without overflow and is within [`MAX_IMAGE_SIZE`].
fn within_limit(n: Option<usize>) -> Result<usize, StackError> {
    n.filter(|&n| n <= MAX_IMAGE_SIZE).ok_or(StackError::TooBig)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    const RANDOM: [u8; 16] = *b"0123456789abcdef";
    const TOP: u64 = 0x7fff_ffff_f000;

    /// Reads the image back the way libc's `_start` and `ld.so` do.
    struct Parsed {
        argv: Vec<Vec<u8>>,
        envp: Vec<Vec<u8>>,
        auxv: Vec<(u64, u64)>,
    }

    fn word(img: &StackImage, addr: u64) -> u64 {
        let off = usize::try_from(addr - img.sp).unwrap();
        u64::from_le_bytes(img.bytes[off..off + 8].try_into().unwrap())
    }

    fn cstr(img: &StackImage, addr: u64) -> Vec<u8> {
        assert!(
            addr >= img.sp && addr < img.top(),
            "pointer {addr:#x} outside the image"
        );
        let off = usize::try_from(addr - img.sp).unwrap();
        let len = img.bytes[off..].iter().position(|&b| b == 0).expect("NUL");
        img.bytes[off..off + len].to_vec()
    }

    fn parse(img: &StackImage) -> Parsed {
        assert_eq!(img.sp % 16, 0);
        let mut addr = img.sp;
        let mut next = || {
            let w = word(img, addr);
            addr += 8;
            w
        };
        let argc = next();
        let argv = (0..argc).map(|_| next()).collect::<Vec<_>>();
        assert_eq!(next(), 0, "argv not NULL-terminated");
        let mut envp = Vec::new();
        loop {
            match next() {
                0 => break,
                p => envp.push(p),
            }
        }
        let mut auxv = Vec::new();
        loop {
            let (t, v) = (next(), next());
            if t == AT_NULL {
                assert_eq!(v, 0);
                break;
            }
            auxv.push((t, v));
        }
        assert!(addr <= img.top());
        assert_eq!(img.argv_addr, img.sp + 8);
        assert_eq!(img.envp_addr, img.argv_addr + 8 * (argc + 1));
        assert_eq!(img.auxv_addr, img.envp_addr + 8 * (envp.len() as u64 + 1));
        Parsed {
            argv: argv.iter().map(|&p| cstr(img, p)).collect(),
            envp: envp.iter().map(|&p| cstr(img, p)).collect(),
            auxv,
        }
    }

    fn aux(p: &Parsed, t: u64) -> Option<u64> {
        p.auxv.iter().find(|(k, _)| *k == t).map(|&(_, v)| v)
    }

    #[test]
    fn round_trip() {
        let argv: [&[u8]; 3] = [b"/usr/bin/java", b"-version", b""];
        let envp: [&[u8]; 2] = [b"PATH=/usr/bin:/bin", b"LANG=C.UTF-8"];
        let given = [
            (AT_SYSINFO_EHDR, 0x7fff_f7ff_d000),
            (AT_MINSIGSTKSZ, 3632),
            (AT_HWCAP, 0x178b_fbff),
            (AT_PAGESZ, 4096),
            (AT_CLKTCK, 100),
            (AT_PHDR, 0x40_0040),
            (AT_PHENT, 56),
            (AT_PHNUM, 10),
            (AT_BASE, 0x7fff_f7fc_3000),
            (AT_FLAGS, 0),
            (AT_ENTRY, 0x40_1020),
            (AT_UID, 1000),
            (AT_EUID, 1000),
            (AT_GID, 1000),
            (AT_EGID, 1000),
            (AT_SECURE, 0),
            (AT_HWCAP2, 2),
        ];
        let img = StackImage::build(TOP, &argv, &envp, &given, RANDOM, b"x86_64").unwrap();
        assert_eq!(img.top(), TOP);
        let p = parse(&img);
        assert_eq!(p.argv, argv);
        assert_eq!(p.envp, envp);
        assert_eq!(&p.auxv[..given.len()], given);
        assert_eq!(p.auxv.len(), given.len() + 3);

        let random = aux(&p, AT_RANDOM).unwrap();
        assert_eq!(random, TOP - 16, "random bytes at the top, 16-byte aligned");
        let off = (random - img.sp) as usize;
        assert_eq!(img.bytes[off..off + 16], RANDOM);
        assert_eq!(cstr(&img, aux(&p, AT_PLATFORM).unwrap()), b"x86_64");
        let execfn = aux(&p, AT_EXECFN).unwrap();
        assert_eq!(cstr(&img, execfn), b"/usr/bin/java");
        assert_ne!(
            execfn,
            word(&img, img.argv_addr),
            "AT_EXECFN is a separate copy"
        );
        // The strings directly follow the padding, argv[0] first.
        let strings: usize = argv.iter().chain(&envp).map(|s| s.len() + 1).sum();
        let strings = strings + "x86_64".len() + 1 + "/usr/bin/java".len() + 1 + 16;
        assert_eq!(word(&img, img.argv_addr), TOP - strings as u64);
    }

    #[test]
    fn alignment_for_any_sizes() {
        // Vary the string and table sizes so every padding length occurs.
        for top in [TOP, TOP - 1, TOP - 8, TOP - 13] {
            for n in 0..20 {
                let arg = std::vec![b'a'; n];
                let argv: Vec<&[u8]> = std::iter::repeat_n(&arg[..], n % 5 + 1).collect();
                let envp: Vec<&[u8]> = std::iter::repeat_n(&b"K=V"[..], n % 3).collect();
                let auxv: Vec<(u64, u64)> = (0..n as u64 % 4).map(|i| (100 + i, i)).collect();
                let img = StackImage::build(top, &argv, &envp, &auxv, RANDOM, b"x86_64").unwrap();
                assert_eq!(img.top(), top);
                assert!(img.bytes.len() < 16 + 8 * 64 + 20 * 5 + 200);
                let p = parse(&img);
                assert_eq!(p.argv, argv);
                assert_eq!(p.envp, envp);
                assert_eq!(&p.auxv[..auxv.len()], auxv);
            }
        }
    }

    #[test]
    fn empty_argv_and_no_platform() {
        let img = StackImage::build(TOP, &[], &[], &[], RANDOM, b"").unwrap();
        let p = parse(&img);
        assert!(p.argv.is_empty() && p.envp.is_empty());
        assert_eq!(aux(&p, AT_PLATFORM), None);
        assert_eq!(cstr(&img, aux(&p, AT_EXECFN).unwrap()), b"");
        assert_eq!(p.auxv.len(), 2);
        // argc, NULL, NULL, 3 pairs, 1 + 16 bytes of strings: 72 + 17, rounded to 16.
        assert_eq!(img.bytes.len(), 96);
    }

    #[test]
    fn rejections() {
        let build = |argv: &[&[u8]], envp: &[&[u8]], auxv: &[(u64, u64)]| {
            StackImage::build(TOP, argv, envp, auxv, RANDOM, b"x86_64")
        };
        let (a, long) = (&b"a"[..], &std::vec![b'x'; MAX_ARG_STRLEN][..]);
        // One string too long.
        assert_eq!(build(&[long], &[], &[]), Err(StackError::TooBig));
        assert_eq!(build(&[a], &[long], &[]), Err(StackError::TooBig));
        assert!(build(&[&long[1..]], &[], &[]).is_ok());
        // Many strings, too many pointers, or too many auxv pairs.
        let arg = &long[1..];
        // 15 of them plus the AT_EXECFN copy of argv[0] are 2 MiB.
        assert_eq!(build(&[arg; 15], &[], &[]), Err(StackError::TooBig));
        assert!(build(&[arg; 14], &[], &[]).is_ok());
        let empty: Vec<&[u8]> = std::vec![b""; 300_000];
        assert_eq!(build(&empty, &[], &[]), Err(StackError::TooBig));
        assert_eq!(build(&[], &empty, &[]), Err(StackError::TooBig));
        let auxv = std::vec![(AT_UID, 0); 200_000];
        assert_eq!(build(&[], &[], &auxv), Err(StackError::TooBig));
        assert_eq!(StackError::TooBig.errno(), Errno::E2BIG);

        assert_eq!(
            build(&[&b"a\0b"[..]], &[], &[]),
            Err(StackError::InteriorNul)
        );
        assert_eq!(
            build(&[], &[&b"A=\0"[..]], &[]),
            Err(StackError::InteriorNul)
        );
        assert_eq!(
            StackImage::build(TOP, &[], &[], &[], RANDOM, b"x86\x0064"),
            Err(StackError::InteriorNul)
        );
        for t in [AT_NULL, AT_RANDOM, AT_EXECFN, AT_PLATFORM] {
            assert_eq!(
                build(&[], &[], &[(AT_PAGESZ, 4096), (t, 1)]),
                Err(StackError::ReservedAuxv(t))
            );
        }
        for top in [0, 16, 88] {
            assert_eq!(
                StackImage::build(top, &[], &[], &[], RANDOM, b""),
                Err(StackError::TopTooLow)
            );
        }
        assert_eq!(
            StackImage::build(89, &[], &[], &[], RANDOM, b"")
                .unwrap()
                .sp,
            0
        );
    }
}
