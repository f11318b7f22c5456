//! The text of the generated `/proc` and `/sys` files, in Linux's formats
//! (glibc, HotSpot and tools parse them). Pure functions of their inputs, so
//! they are tested on the host.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

/// Clock ticks per second in `/proc` (`USER_HZ`).
pub const USER_HZ: u64 = 100;

/// What the process files report.
#[derive(Debug, Clone, Default)]
pub struct ProcessInfo {
    /// The process id.
    pub pid: u64,
    /// The thread described (`/proc/self/task/<tid>`), or the pid.
    pub tid: u64,
    /// The parent's id (0: outside the partition).
    pub ppid: u64,
    /// The command name (at most 15 bytes, as `PR_SET_NAME` keeps it).
    pub name: String,
    /// User and group ids.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
    /// The file-creation mask.
    pub umask: u32,
    /// Number of threads.
    pub threads: u64,
    /// Virtual size in bytes.
    pub vsize: u64,
    /// Resident size in bytes.
    pub rss: u64,
    /// Locked (`mlock`) size in bytes.
    pub locked: u64,
    /// Data (private writable, not stack) size in bytes.
    pub data: u64,
    /// CPU time in user mode, nanoseconds.
    pub utime_ns: u64,
    /// Start of the main thread's stack (`startstack`; 0 if unknown).
    pub start_stack: u64,
    /// Number of CPUs.
    pub cpus: usize,
    /// Voluntary and involuntary context switches.
    pub switches: (u64, u64),
    /// The thread's state: `R` running or ready to, `S` waiting
    /// (profilers sample only the running ones).
    pub state: char,
}

/// The CPU count as a list: `0` for one CPU, `0-3` for four.
pub fn cpu_list(cpus: usize) -> String {
    match cpus {
        0 | 1 => String::from("0\n"),
        n => format!("0-{}\n", n - 1),
    }
}

/// `/proc/mounts`: the namespace's mount points, each (path, read-only),
/// as 9P mounts, then the generated `/proc`, `/sys` and `/dev`. Paths are
/// escaped as Linux escapes them (space, tab, newline, backslash in octal).
pub fn mounts(points: &[(String, bool)]) -> String {
    let esc = |p: &str| {
        let mut o = String::new();
        for c in p.chars() {
            match c {
                ' ' | '\t' | '\n' | '\\' => {
                    let _ = write!(o, "\\{:03o}", c as u32);
                }
                c => o.push(c),
            }
        }
        o
    };
    let mut s = String::new();
    for (p, ro) in points {
        let _ = writeln!(
            s,
            "astraea {} 9p {},relatime 0 0",
            esc(p),
            if *ro { "ro" } else { "rw" }
        );
    }
    s.push_str("proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n");
    s.push_str("sysfs /sys sysfs ro,nosuid,nodev,noexec,relatime 0 0\n");
    s.push_str("devtmpfs /dev devtmpfs rw,nosuid,relatime 0 0\n");
    s
}

/// `/proc/meminfo` from sizes in bytes.
pub fn meminfo(total: u64, free: u64, available: u64) -> String {
    let mut s = String::new();
    let kb = |v: u64| v / 1024;
    let used = total.saturating_sub(free);
    for (name, v) in [
        ("MemTotal:", kb(total)),
        ("MemFree:", kb(free)),
        ("MemAvailable:", kb(available)),
        ("Buffers:", 0),
        ("Cached:", 0),
        ("SwapCached:", 0),
        ("Active:", kb(used)),
        ("Inactive:", 0),
        ("Active(anon):", kb(used)),
        ("Inactive(anon):", 0),
        ("Active(file):", 0),
        ("Inactive(file):", 0),
        ("Unevictable:", 0),
        ("Mlocked:", 0),
        ("SwapTotal:", 0),
        ("SwapFree:", 0),
        ("Dirty:", 0),
        ("Writeback:", 0),
        ("AnonPages:", kb(used)),
        ("Mapped:", 0),
        ("Shmem:", 0),
        ("CommitLimit:", kb(total)),
        ("Committed_AS:", kb(used)),
        ("VmallocTotal:", 0),
        ("VmallocUsed:", 0),
        ("AnonHugePages:", 0),
        ("ShmemHugePages:", 0),
        ("HugePages_Total:", u64::MAX),
    ] {
        if v == u64::MAX {
            // The huge page counts are numbers, not sizes.
            for n in [
                "HugePages_Total:",
                "HugePages_Free:",
                "HugePages_Rsvd:",
                "HugePages_Surp:",
            ] {
                let _ = writeln!(s, "{n:<16}{:>8}", 0);
            }
            continue;
        }
        let _ = writeln!(s, "{name:<16}{v:>8} kB");
    }
    let _ = writeln!(s, "{:<16}{:>8} kB", "Hugepagesize:", 2048);
    let _ = writeln!(s, "{:<16}{:>8} kB", "Hugetlb:", 0);
    s
}

/// The CPUID registers `/proc/cpuinfo` is made from.
#[derive(Debug, Clone, Default)]
pub struct CpuId {
    /// Leaf 0: max leaf.
    pub max_leaf: u32,
    /// Leaf 0: vendor string (ebx, edx, ecx).
    pub vendor: String,
    /// Leaf 1 eax (signature), ecx, edx.
    pub leaf1: (u32, u32, u32),
    /// Leaf 7 subleaf 0 ebx, ecx, edx.
    pub leaf7: (u32, u32, u32),
    /// Leaf 0x80000001 ecx, edx.
    pub ext1: (u32, u32),
    /// The brand string (leaves 0x80000002..4), trimmed.
    pub brand: String,
    /// Leaf 0x80000008 eax (address sizes), if present.
    pub addr_sizes: Option<u32>,
    /// TSC frequency in kHz.
    pub tsc_khz: u64,
}

impl CpuId {
    /// (family, model, stepping) as Linux computes them.
    pub fn signature(&self) -> (u32, u32, u32) {
        let eax = self.leaf1.0;
        let base_family = (eax >> 8) & 0xf;
        let family = if base_family == 0xf {
            base_family + ((eax >> 20) & 0xff)
        } else {
            base_family
        };
        let mut model = (eax >> 4) & 0xf;
        if base_family >= 6 {
            model |= ((eax >> 16) & 0xf) << 4;
        }
        (family, model, eax & 0xf)
    }
}

/// Register, bit, Linux flag name.
type FlagTable = &'static [(u8, &'static str)];

const LEAF1_EDX: FlagTable = &[
    (0, "fpu"),
    (1, "vme"),
    (2, "de"),
    (3, "pse"),
    (4, "tsc"),
    (5, "msr"),
    (6, "pae"),
    (7, "mce"),
    (8, "cx8"),
    (9, "apic"),
    (11, "sep"),
    (12, "mtrr"),
    (13, "pge"),
    (14, "mca"),
    (15, "cmov"),
    (16, "pat"),
    (17, "pse36"),
    (19, "clflush"),
    (21, "dts"),
    (22, "acpi"),
    (23, "mmx"),
    (24, "fxsr"),
    (25, "sse"),
    (26, "sse2"),
    (27, "ss"),
    (28, "ht"),
    (29, "tm"),
    (31, "pbe"),
];
const EXT1_EDX: FlagTable = &[
    (11, "syscall"),
    (20, "nx"),
    (22, "mmxext"),
    (25, "fxsr_opt"),
    (26, "pdpe1gb"),
    (27, "rdtscp"),
    (29, "lm"),
];
const LEAF1_ECX: FlagTable = &[
    (0, "pni"),
    (1, "pclmulqdq"),
    (3, "monitor"),
    (9, "ssse3"),
    (12, "fma"),
    (13, "cx16"),
    (15, "pdcm"),
    (17, "pcid"),
    (19, "sse4_1"),
    (20, "sse4_2"),
    (21, "x2apic"),
    (22, "movbe"),
    (23, "popcnt"),
    (24, "tsc_deadline_timer"),
    (25, "aes"),
    (26, "xsave"),
    (28, "avx"),
    (29, "f16c"),
    (30, "rdrand"),
    (31, "hypervisor"),
];
const EXT1_ECX: FlagTable = &[
    (0, "lahf_lm"),
    (1, "cmp_legacy"),
    (2, "svm"),
    (5, "abm"),
    (6, "sse4a"),
    (7, "misalignsse"),
    (8, "3dnowprefetch"),
    (11, "xop"),
    (16, "fma4"),
    (21, "tbm"),
];
const LEAF7_EBX: FlagTable = &[
    (0, "fsgsbase"),
    (1, "tsc_adjust"),
    (3, "bmi1"),
    (4, "hle"),
    (5, "avx2"),
    (7, "smep"),
    (8, "bmi2"),
    (9, "erms"),
    (10, "invpcid"),
    (11, "rtm"),
    (16, "avx512f"),
    (17, "avx512dq"),
    (18, "rdseed"),
    (19, "adx"),
    (20, "smap"),
    (21, "avx512ifma"),
    (23, "clflushopt"),
    (24, "clwb"),
    (26, "avx512pf"),
    (27, "avx512er"),
    (28, "avx512cd"),
    (29, "sha_ni"),
    (30, "avx512bw"),
    (31, "avx512vl"),
];
const LEAF7_ECX: FlagTable = &[
    (1, "avx512vbmi"),
    (2, "umip"),
    (3, "pku"),
    (6, "avx512_vbmi2"),
    (8, "gfni"),
    (9, "vaes"),
    (10, "vpclmulqdq"),
    (11, "avx512_vnni"),
    (12, "avx512_bitalg"),
    (14, "avx512_vpopcntdq"),
    (22, "rdpid"),
];
const LEAF7_EDX: FlagTable = &[
    (4, "fsrm"),
    (8, "avx512_vp2intersect"),
    (10, "md_clear"),
    (14, "serialize"),
    (18, "pconfig"),
    (26, "ibrs"),
    (28, "flush_l1d"),
    (29, "arch_capabilities"),
];

/// The Linux names of the CPU's features, in Linux's order.
pub fn cpu_flags(c: &CpuId) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut add = |reg: u32, table: FlagTable| {
        for &(bit, name) in table {
            if reg & (1 << bit) != 0 {
                out.push(name);
            }
        }
    };
    add(c.leaf1.2, LEAF1_EDX);
    add(c.ext1.1, EXT1_EDX);
    add(c.leaf1.1, LEAF1_ECX);
    add(c.ext1.0, EXT1_ECX);
    add(c.leaf7.0, LEAF7_EBX);
    add(c.leaf7.1, LEAF7_ECX);
    add(c.leaf7.2, LEAF7_EDX);
    out
}

/// `/proc/cpuinfo`: one entry per CPU, all alike.
pub fn cpuinfo(c: &CpuId, cpus: usize) -> String {
    let (family, model, stepping) = c.signature();
    let flags = cpu_flags(c).join(" ");
    let mhz = c.tsc_khz / 1000;
    let mhz_frac = c.tsc_khz % 1000;
    let (phys, virt) = c
        .addr_sizes
        .map_or((46, 48), |a| (a & 0xff, (a >> 8) & 0xff));
    let bogomips = c.tsc_khz * 2;
    let mut s = String::new();
    for i in 0..cpus.max(1) {
        let _ = write!(
            s,
            "processor\t: {i}\n\
             vendor_id\t: {vendor}\n\
             cpu family\t: {family}\n\
             model\t\t: {model}\n\
             model name\t: {brand}\n\
             stepping\t: {stepping}\n\
             microcode\t: 0x1\n\
             cpu MHz\t\t: {mhz}.{mhz_frac:03}\n\
             cache size\t: 16384 KB\n\
             physical id\t: 0\n\
             siblings\t: {cpus}\n\
             core id\t\t: {i}\n\
             cpu cores\t: {cpus}\n\
             apicid\t\t: {i}\n\
             initial apicid\t: {i}\n\
             fpu\t\t: yes\n\
             fpu_exception\t: yes\n\
             cpuid level\t: {level}\n\
             wp\t\t: yes\n\
             flags\t\t: {flags}\n\
             bugs\t\t:\n\
             bogomips\t: {bm}.{bmf:02}\n\
             clflush size\t: 64\n\
             cache_alignment\t: 64\n\
             address sizes\t: {phys} bits physical, {virt} bits virtual\n\
             power management:\n\n",
            vendor = c.vendor,
            brand = c.brand,
            level = c.max_leaf,
            bm = bogomips / 1000,
            bmf = (bogomips % 1000) / 10,
        );
    }
    s
}

/// `/proc/stat`: `uptime_ns` as user time of one busy CPU, `boot_unix_s`
/// the boot time.
pub fn stat(cpus: usize, busy_ns: u64, idle_ns: u64, switches: u64, boot_unix_s: u64) -> String {
    let ticks = |ns: u64| ns / (1_000_000_000 / USER_HZ);
    let n = cpus.max(1) as u64;
    let line = |name: &str, busy: u64, idle: u64| format!("{name} {busy} 0 0 {idle} 0 0 0 0 0 0\n");
    let mut s = line("cpu ", ticks(busy_ns), ticks(idle_ns));
    for i in 0..n {
        s.push_str(&line(
            &format!("cpu{i}"),
            ticks(busy_ns) / n,
            ticks(idle_ns) / n,
        ));
    }
    let _ = write!(
        s,
        "intr 0\nctxt {switches}\nbtime {boot_unix_s}\nprocesses 1\nprocs_running 1\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n"
    );
    s
}

/// `/proc/uptime`: seconds up and idle, with two decimals.
pub fn uptime(up_ns: u64, idle_ns: u64) -> String {
    let f = |ns: u64| format!("{}.{:02}", ns / 1_000_000_000, (ns / 10_000_000) % 100);
    format!("{} {}\n", f(up_ns), f(idle_ns))
}

/// `/proc/loadavg`.
pub fn loadavg(threads: u64, pid: u64) -> String {
    format!("0.00 0.00 0.00 1/{threads} {pid}\n")
}

/// `/proc/self/stat`: the 52 fields of Linux 5.x and later.
pub fn self_stat(p: &ProcessInfo) -> String {
    let ticks = p.utime_ns / (1_000_000_000 / USER_HZ);
    let mut s = format!(
        "{tid} ({name}) {state} {ppid} {pid} {pid} 0 -1 4194560 0 0 0 0 {ticks} 0 0 0 20 0 {threads} 0 0 {vsize} {rss} 18446744073709551615 ",
        tid = p.tid,
        pid = p.pid,
        name = p.name,
        ppid = p.ppid,
        state = p.state,
        threads = p.threads.max(1),
        vsize = p.vsize,
        rss = p.rss / 4096,
    );
    // startcode endcode startstack kstkesp kstkeip signal blocked sigignore
    // sigcatch wchan nswap cnswap exit_signal processor rt_priority policy
    // delayacct_blkio_ticks guest_time cguest_time start_data end_data
    // start_brk arg_start arg_end env_start env_end exit_code
    let _ = writeln!(
        s,
        "0 0 {} 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
        p.start_stack
    );
    s
}

/// `/proc/self/limits`: Linux's table (the JDK reads it), each limit from
/// `rlimit(resource)`.
pub fn limits(rlimit: impl Fn(u64) -> (u64, u64)) -> String {
    const ROWS: [(&str, &str); 16] = [
        ("Max cpu time", "seconds"),
        ("Max file size", "bytes"),
        ("Max data size", "bytes"),
        ("Max stack size", "bytes"),
        ("Max core file size", "bytes"),
        ("Max resident set", "bytes"),
        ("Max processes", "processes"),
        ("Max open files", "files"),
        ("Max locked memory", "bytes"),
        ("Max address space", "bytes"),
        ("Max file locks", "locks"),
        ("Max pending signals", "signals"),
        ("Max msgqueue size", "bytes"),
        ("Max nice priority", ""),
        ("Max realtime priority", ""),
        ("Max realtime timeout", "us"),
    ];
    let text = |v: u64| {
        if v == u64::MAX {
            String::from("unlimited")
        } else {
            alloc::format!("{v}")
        }
    };
    let mut s = alloc::format!(
        "{:<25} {:<20} {:<20} {:<10}\n",
        "Limit",
        "Soft Limit",
        "Hard Limit",
        "Units"
    );
    for (r, (name, unit)) in ROWS.iter().enumerate() {
        let (cur, max) = rlimit(r as u64);
        let _ = writeln!(
            s,
            "{name:<25} {:<20} {:<20} {unit:<10}",
            text(cur),
            text(max)
        );
    }
    s
}

/// `/proc/self/status`.
pub fn status(p: &ProcessInfo) -> String {
    let kb = |v: u64| v / 1024;
    let (u, g) = (p.uid, p.gid);
    let mask = if p.cpus >= 64 {
        u64::MAX
    } else {
        (1u64 << p.cpus.max(1)) - 1
    };
    let mut s = String::new();
    let _ = write!(
        s,
        "Name:\t{name}\nUmask:\t{umask:04o}\nState:\t{state}\nTgid:\t{pid}\nNgid:\t0\nPid:\t{tid}\n\
         PPid:\t{ppid}\nTracerPid:\t0\nUid:\t{u}\t{u}\t{u}\t{u}\nGid:\t{g}\t{g}\t{g}\t{g}\n\
         FDSize:\t64\nGroups:\t\nNStgid:\t{pid}\nNSpid:\t{tid}\nNSpgid:\t{pid}\nNSsid:\t{pid}\n",
        name = p.name,
        umask = p.umask,
        state = if p.state == 'S' {
            "S (sleeping)"
        } else {
            "R (running)"
        },
        tid = p.tid,
        pid = p.pid,
        ppid = p.ppid,
    );
    for (name, v) in [
        ("VmPeak:", kb(p.vsize)),
        ("VmSize:", kb(p.vsize)),
        ("VmLck:", kb(p.locked)),
        ("VmPin:", 0),
        ("VmHWM:", kb(p.rss)),
        ("VmRSS:", kb(p.rss)),
        ("RssAnon:", kb(p.rss)),
        ("RssFile:", 0),
        ("RssShmem:", 0),
        ("VmData:", kb(p.data)),
        ("VmStk:", 132),
        ("VmExe:", 0),
        ("VmLib:", 0),
        ("VmPTE:", 0),
        ("VmSwap:", 0),
    ] {
        let _ = writeln!(s, "{name}\t{v:>8} kB");
    }
    let _ = write!(
        s,
        "HugetlbPages:\t       0 kB\nCoreDumping:\t0\nTHP_enabled:\t1\nThreads:\t{threads}\n\
         SigQ:\t0/63432\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n\
         SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\nSigCgt:\t0000000000000000\n\
         CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n\
         CapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\nSeccomp:\t0\n\
         Seccomp_filters:\t0\nSpeculation_Store_Bypass:\tthread vulnerable\n\
         Cpus_allowed:\t{mask:x}\nCpus_allowed_list:\t{list}\nMems_allowed:\t1\n\
         Mems_allowed_list:\t0\nvoluntary_ctxt_switches:\t{vol}\nnonvoluntary_ctxt_switches:\t{invol}\n",
        threads = p.threads.max(1),
        list = cpu_list(p.cpus).trim_end(),
        vol = p.switches.0,
        invol = p.switches.1,
    );
    s
}

/// Total size and the `[stack]` area of a `/proc/self/maps` text: (sum of
/// all areas in bytes, end of the stack area if there is one).
pub fn maps_summary(maps: &str) -> (u64, Option<u64>) {
    let mut total = 0u64;
    let mut stack = None;
    for line in maps.lines() {
        let Some(range) = line.split_ascii_whitespace().next() else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        total += b.saturating_sub(a);
        if line.ends_with("[stack]") {
            stack = Some(b);
        }
    }
    (total, stack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list(1), "0\n");
        assert_eq!(cpu_list(4), "0-3\n");
    }

    #[test]
    fn meminfo_lines_are_aligned_like_linux() {
        let m = meminfo(512 << 20, 256 << 20, 300 << 20);
        let mut lines = m.lines();
        assert_eq!(lines.next(), Some("MemTotal:         524288 kB"));
        assert_eq!(lines.next(), Some("MemFree:          262144 kB"));
        assert_eq!(lines.next(), Some("MemAvailable:     307200 kB"));
        assert!(m.contains("\nHugePages_Total:       0\n"));
        assert!(m.contains("\nHugepagesize:       2048 kB\n"));
        assert!(m.ends_with("kB\n"));
    }

    fn sample_cpu() -> CpuId {
        CpuId {
            max_leaf: 0xd,
            vendor: String::from("GenuineIntel"),
            // Family 6, model 0x55, stepping 7.
            leaf1: (
                0x0005_0657,
                (1 << 0) | (1 << 23) | (1 << 31),
                (1 << 0) | (1 << 26),
            ),
            leaf7: (1 << 5, 0, 0),
            ext1: (1, (1 << 29) | (1 << 11)),
            brand: String::from("Test CPU @ 2.50GHz"),
            addr_sizes: Some(0x302e),
            tsc_khz: 2_500_000,
        }
    }

    #[test]
    fn cpuinfo_has_the_fields_glibc_and_hotspot_parse() {
        let c = sample_cpu();
        assert_eq!(c.signature(), (6, 0x55, 7));
        assert_eq!(
            cpu_flags(&c),
            [
                "fpu",
                "sse2",
                "syscall",
                "lm",
                "pni",
                "popcnt",
                "hypervisor",
                "lahf_lm",
                "avx2"
            ]
        );
        let t = cpuinfo(&c, 2);
        assert_eq!(t.matches("processor\t: ").count(), 2);
        assert!(t.starts_with(
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"
        ));
        assert!(t.contains("model name\t: Test CPU @ 2.50GHz\n"));
        assert!(t.contains("cpu MHz\t\t: 2500.000\n"));
        assert!(t.contains("flags\t\t: fpu sse2 syscall lm pni popcnt hypervisor lahf_lm avx2\n"));
        assert!(t.contains("address sizes\t: 46 bits physical, 48 bits virtual\n"));
        assert!(t.contains("processor\t: 1\n"));
        assert!(t.ends_with("power management:\n\n"));
    }

    #[test]
    fn self_stat_has_52_fields_and_the_name_in_parentheses() {
        let p = ProcessInfo {
            pid: 1,
            tid: 1,
            name: String::from("my prog"),
            threads: 3,
            vsize: 1 << 20,
            rss: 8192,
            locked: 0,
            data: 0,
            utime_ns: 2_500_000_000,
            start_stack: 0x7fff_0000,
            cpus: 1,
            state: 'R',
            ..ProcessInfo::default()
        };
        let s = self_stat(&p);
        assert!(s.starts_with("1 (my prog) R 0 1 1 0 -1 "));
        assert!(s.ends_with('\n'));
        let after = &s[s.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after.split_ascii_whitespace().collect();
        // Fields 3..=52 follow the name.
        assert_eq!(fields.len(), 50);
        assert_eq!(fields[14 - 3], "250"); // utime
        assert_eq!(fields[20 - 3], "3"); // num_threads
        assert_eq!(fields[23 - 3], "1048576"); // vsize
        assert_eq!(fields[24 - 3], "2"); // rss pages
        assert_eq!(fields[28 - 3], "2147418112"); // startstack
    }

    #[test]
    fn limits_is_linux_table() {
        let s = limits(|r| {
            if r == 3 {
                (8 << 20, u64::MAX)
            } else {
                (u64::MAX, u64::MAX)
            }
        });
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 17);
        assert!(lines[0].starts_with("Limit                     Soft Limit"));
        assert!(lines[4].starts_with("Max stack size            8388608              unlimited"));
        assert!(lines[8].starts_with("Max open files"));
    }

    #[test]
    fn status_reports_ids_threads_and_memory() {
        let p = ProcessInfo {
            pid: 1,
            tid: 1,
            name: String::from("java"),
            uid: 1000,
            gid: 100,
            umask: 0o22,
            threads: 2,
            vsize: 4 << 20,
            rss: 2 << 20,
            locked: 8192,
            data: 4096,
            cpus: 1,
            state: 'R',
            ..ProcessInfo::default()
        };
        let s = status(&p);
        for want in [
            "Name:\tjava\n",
            "Umask:\t0022\n",
            "State:\tR (running)\n",
            "Tgid:\t1\n",
            "Pid:\t1\n",
            "PPid:\t0\n",
            "Uid:\t1000\t1000\t1000\t1000\n",
            "Gid:\t100\t100\t100\t100\n",
            "VmSize:\t    4096 kB\n",
            "VmRSS:\t    2048 kB\n",
            "VmLck:\t       8 kB\n",
            "Threads:\t2\n",
            "Cpus_allowed_list:\t0\n",
        ] {
            assert!(s.contains(want), "{want:?} missing in\n{s}");
        }
    }

    #[test]
    fn stat_uptime_and_maps_summary() {
        let s = stat(1, 2_000_000_000, 1_000_000_000, 5, 1_700_000_000);
        assert!(s.starts_with("cpu  200 0 0 100 0 0 0 0 0 0\ncpu0 200 0 0 100 0 0 0 0 0 0\n"));
        assert!(s.contains("\nbtime 1700000000\n"));
        assert_eq!(uptime(1_234_000_000, 0), "1.23 0.00\n");
        let maps = "00400000-00401000 r-xp 00000000 00:00 0 /a\n\
                    7ffff000-80000000 rw-p 00000000 00:00 0                          [stack]\n";
        assert_eq!(maps_summary(maps), (0x2000, Some(0x8000_0000)));
        assert_eq!(maps_summary(""), (0, None));
    }

    #[test]
    fn mounts_escape_like_linux() {
        let m = mounts(&[("/".into(), true), ("/home/a b".into(), false)]);
        let mut lines = m.lines();
        assert_eq!(lines.next(), Some("astraea / 9p ro,relatime 0 0"));
        assert_eq!(
            lines.next(),
            Some("astraea /home/a\\040b 9p rw,relatime 0 0")
        );
        assert_eq!(m.lines().count(), 5);
    }
}
