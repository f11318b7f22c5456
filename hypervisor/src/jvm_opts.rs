//! Checks of a `java` command line before any partition is made: a heap that
//! cannot fit the partition's memory, and JVM options that need the host.
//!
//! Only the JVM's own options count: those after `java` and before the main
//! class (or `-jar FILE`, `-m MODULE`, `--source N FILE`); what follows is the
//! program's. Options from `JAVA_TOOL_OPTIONS` (read by every JVM) and
//! `JDK_JAVA_OPTIONS` (read by the `java` launcher) come first, so the command
//! line overrides them, as in the JVM. `@argfiles` and `-XX:Flags=` files are
//! not read.
//!
//! # The heap
//!
//! A heap is checked only when the user sized it (`-Xmx`, `-Xms`,
//! `-XX:MaxHeapSize`, `-XX:InitialHeapSize`, `-XX:MaxRAM`,
//! `-XX:MaxRAMPercentage`, `-XX:MinRAMPercentage`); the JVM's default, a
//! quarter of the partition's memory, always fits. The heap must fit in the
//! partition's memory together with [`JVM_OVERHEAD`], the JVM's memory outside
//! the heap: metaspace, the code cache, thread stacks, GC data structures,
//! the JDK's libraries and `lib/modules`. A partition that runs out of memory
//! ends with "the partition is out of memory"; a heap that fits gets the
//! JVM's own `OutOfMemoryError` instead.
//!
//! # Options that need the host
//!
//! Decided by running each in a partition (OpenJDK 17 and Temurin 25):
//!
//! | option | in a partition | here |
//! |---|---|---|
//! | `-agentlib:jdwp=transport=dt_socket,…` (`-Xrunjdwp`), server=y or n | JDWP: "transport error 202: socket creation failed", exit 2 | refused |
//! | `-Dcom.sun.management.jmxremote[.port=N]` | "Exception thrown by the agent … Listen failed", exit 1 | refused |
//! | `-XX:+UseNUMA` | the JVM turns NUMA off (`get_mempolicy` is ENOSYS, as without NUMA) | warning |
//! | `-XX:+StartAttachListener` | runs; no host tool can attach | warning |
//! | `-XX:+UseLargePages`, `-XX:+UseTransparentHugePages` | the JVM turns them off with its own warning | passed on |
//! | `-XX:+UseZGC`, `-XX:+UseShenandoahGC`, `-XX:+UseParallelGC`, `-XX:+AlwaysPreTouch` | work (ZGC's heap is a `memfd_create` file) | passed on |

/// The memory a JVM needs besides its heap, assumed when checking that a
/// heap fits a partition: 128 MiB for metaspace, the code cache (C1 and C2),
/// thread stacks, the GC's own data and the JDK's mapped libraries and
/// `lib/modules`. A small program uses about 40 MiB of it (an `-Xmx480m` heap
/// filled to OutOfMemoryError fits a 512 MiB partition with OpenJDK 17); the
/// rest is headroom for real applications' classes and compiled code.
pub const JVM_OVERHEAD: u64 = 128 << 20;

/// `MaxHeapSize`'s default on x86-64 (`ScaleForWordSize(96 * M)`), which the
/// JVM's heap ergonomics compare percentages of memory against.
const DEFAULT_MAX_HEAP: u64 = 96 * (1 << 20) * 13 / 10;

/// Launcher options whose value is the next argument.
const WITH_VALUE: &[&str] = &[
    "-cp",
    "-classpath",
    "--class-path",
    "-p",
    "--module-path",
    "--upgrade-module-path",
    "--add-modules",
    "--enable-native-access",
    "--limit-modules",
    "--add-reads",
    "--add-exports",
    "--add-opens",
    "--patch-module",
    "-d",
    "--describe-module",
];

/// Where a JVM option came from, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The command line.
    CommandLine,
    /// The environment variable of that name.
    Env(&'static str),
}

/// One JVM option and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JvmOption {
    /// The option as written (`-Xmx1g`).
    pub text: String,
    /// Where it came from.
    pub origin: Origin,
}

impl std::fmt::Display for JvmOption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.origin {
            Origin::CommandLine => write!(f, "{}", self.text),
            Origin::Env(var) => write!(f, "{} (from {var})", self.text),
        }
    }
}

/// Why a `java` command line cannot run in a partition.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JvmOptionError {
    /// The requested heap and the JVM's other memory exceed `--mem`.
    #[error(
        "the JVM's heap does not fit the partition: {what} asks for a {heap_mib} MiB heap, \
         and the JVM needs about {overhead_mib} MiB more for metaspace, code cache and threads, \
         {need_mib} MiB in all, but the partition has --mem {mem_mib}M. Give the partition \
         more memory (--mem {suggest_mib}M) or the JVM a smaller heap (-Xmx{max_heap_mib}m at most)"
    )]
    HeapTooLarge {
        /// The option(s) that size the heap, as written.
        what: String,
        /// The heap they ask for, in MiB.
        heap_mib: u64,
        /// [`JVM_OVERHEAD`] in MiB.
        overhead_mib: u64,
        /// Heap and overhead, in MiB.
        need_mib: u64,
        /// The partition's memory, in MiB.
        mem_mib: u64,
        /// A `--mem` that fits, in MiB (rounded up to 256 MiB).
        suggest_mib: u64,
        /// The largest heap that fits `--mem`, in MiB.
        max_heap_mib: u64,
    },
    /// An option that cannot work in a partition.
    #[error("{option} cannot work in a partition: {why}")]
    Unsupported {
        /// The option, as written.
        option: String,
        /// Why, and what to do instead.
        why: String,
    },
}

impl JvmOptionError {
    /// The `astraea` exit status: 125, the partition was not started.
    pub fn exit_code(&self) -> u8 {
        125
    }
}

/// Whether `program` (`argv[0]`, resolved) is a JVM launcher this module
/// understands: a file named `java`.
pub fn is_java(program: &str) -> bool {
    std::path::Path::new(program)
        .file_name()
        .is_some_and(|n| n == crate::jdk::JAVA)
}

/// The JVM options of `java` arguments (after `argv[0]`): everything up to
/// the main class, `-jar FILE`, `-m MODULE` or `--source N FILE`, without the
/// values of launcher options such as `-cp PATH`.
pub fn jvm_options(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if !a.starts_with('-') || a == "-jar" || a == "-m" || a == "--module" {
            break;
        }
        if a.starts_with("--module=") {
            break;
        }
        if WITH_VALUE.contains(&a.as_str()) || a == "--source" {
            it.next();
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// The options of an environment variable's value, split at white space as
/// the JVM splits `JAVA_TOOL_OPTIONS` (quotes are not interpreted here).
fn env_options(value: &str) -> impl Iterator<Item = String> + '_ {
    value.split_whitespace().map(String::from)
}

/// Every JVM option in effect, lowest precedence first: `JAVA_TOOL_OPTIONS`,
/// `JDK_JAVA_OPTIONS`, then the command line `args` (after `argv[0]`).
/// `env` looks a variable up (`std::env::var` in the `astraea` command).
pub fn effective_options(args: &[String], env: impl Fn(&str) -> Option<String>) -> Vec<JvmOption> {
    let mut out = Vec::new();
    for var in ["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"] {
        if let Some(v) = env(var) {
            out.extend(env_options(&v).map(|text| JvmOption {
                text,
                origin: Origin::Env(var),
            }));
        }
    }
    out.extend(jvm_options(args).into_iter().map(|text| JvmOption {
        text,
        origin: Origin::CommandLine,
    }));
    out
}

/// A JVM size: digits with an optional k, m, g or t suffix (either case).
pub fn parse_size(s: &str) -> Option<u64> {
    let (num, shift) = match s.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_lowercase() {
                'k' => 10,
                'm' => 20,
                'g' => 30,
                't' => 40,
                _ => return None,
            };
            (&s[..i], shift)
        }
        _ => (s, 0),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// A percentage flag's value (`75`, `75.0`), within 0..=100.
fn parse_percent(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|p| (0.0..=100.0).contains(p))
}

/// The heap options in effect (the last of each wins; `-Xmx` and
/// `-XX:MaxHeapSize` are one flag, as are `-Xms` and `-XX:InitialHeapSize`),
/// each with the option that set it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeapOptions {
    /// `-Xmx`, `-XX:MaxHeapSize`.
    pub max_heap: Option<(u64, String)>,
    /// `-Xms`, `-XX:InitialHeapSize`.
    pub initial_heap: Option<(u64, String)>,
    /// `-XX:MaxRAM`.
    pub max_ram: Option<(u64, String)>,
    /// `-XX:MaxRAMPercentage`.
    pub max_ram_percent: Option<(f64, String)>,
    /// `-XX:MinRAMPercentage`.
    pub min_ram_percent: Option<(f64, String)>,
}

impl HeapOptions {
    /// Reads the heap options of `opts`; values the JVM would reject are
    /// left for it to report.
    pub fn from_options(opts: &[JvmOption]) -> Self {
        let mut h = Self::default();
        for o in opts {
            let t = o.text.as_str();
            let shown = o.to_string();
            let flag = |name: &str| {
                t.strip_prefix("-XX:")
                    .and_then(|r| r.strip_prefix(name))
                    .and_then(|r| r.strip_prefix('='))
            };
            if let Some(v) = t.strip_prefix("-Xmx").or_else(|| flag("MaxHeapSize")) {
                if let Some(n) = parse_size(v) {
                    h.max_heap = Some((n, shown));
                }
            } else if let Some(v) = t.strip_prefix("-Xms").or_else(|| flag("InitialHeapSize")) {
                if let Some(n) = parse_size(v) {
                    h.initial_heap = Some((n, shown));
                }
            } else if let Some(v) = flag("MaxRAM") {
                if let Some(n) = parse_size(v) {
                    h.max_ram = Some((n, shown));
                }
            } else if let Some(v) = flag("MaxRAMPercentage") {
                if let Some(p) = parse_percent(v) {
                    h.max_ram_percent = Some((p, shown));
                }
            } else if let Some(v) = flag("MinRAMPercentage")
                && let Some(p) = parse_percent(v)
            {
                h.min_ram_percent = Some((p, shown));
            }
        }
        h
    }

    /// The largest heap these options let the JVM grow to in a partition of
    /// `mem` bytes, and the options responsible, or `None` when no option
    /// sizes the heap (the JVM's default always fits). This follows the
    /// JVM's `Arguments::set_heap_size`: an explicit maximum wins; otherwise
    /// the "physical" memory is `MaxRAM` if given, else the partition's, and
    /// the heap is `MaxRAMPercentage` of it, or `MinRAMPercentage` of it when
    /// that is below the default maximum heap (a small machine).
    pub fn requested(&self, mem: u64) -> Option<(u64, String)> {
        let max = match &self.max_heap {
            Some((n, what)) => Some((*n, what.clone())),
            None if self.max_ram.is_some()
                || self.max_ram_percent.is_some()
                || self.min_ram_percent.is_some() =>
            {
                let phys = self.max_ram.as_ref().map_or(mem, |(n, _)| *n);
                let max_pct = self.max_ram_percent.as_ref().map_or(25.0, |(p, _)| *p);
                let min_pct = self.min_ram_percent.as_ref().map_or(50.0, |(p, _)| *p);
                let of = |pct: f64| (phys as f64 * pct / 100.0) as u64;
                let heap = if of(min_pct) < DEFAULT_MAX_HEAP {
                    of(min_pct)
                } else {
                    of(max_pct).max(DEFAULT_MAX_HEAP)
                };
                let what: Vec<&str> = (self.max_ram.as_ref().map(|(_, w)| w.as_str()))
                    .into_iter()
                    .chain(self.max_ram_percent.as_ref().map(|(_, w)| w.as_str()))
                    .chain(self.min_ram_percent.as_ref().map(|(_, w)| w.as_str()))
                    .collect();
                Some((heap, what.join(" ")))
            }
            None => None,
        };
        // An initial heap above the maximum raises the maximum (or is the
        // JVM's own error when both are given): the larger one counts.
        match (max, &self.initial_heap) {
            (Some(m), Some((i, what))) if *i > m.0 => Some((*i, what.clone())),
            (Some(m), _) => Some(m),
            (None, Some((i, what))) => Some((*i, what.clone())),
            (None, None) => None,
        }
    }
}

/// Checks that the heap `opts` ask for fits a partition of `mem` bytes with
/// [`JVM_OVERHEAD`] to spare.
pub fn check_heap(opts: &[JvmOption], mem: u64) -> Result<(), JvmOptionError> {
    let Some((heap, what)) = HeapOptions::from_options(opts).requested(mem) else {
        return Ok(());
    };
    let need = heap.saturating_add(JVM_OVERHEAD);
    if need <= mem {
        return Ok(());
    }
    const MIB: u64 = 1 << 20;
    let need_mib = need.div_ceil(MIB);
    Err(JvmOptionError::HeapTooLarge {
        what,
        heap_mib: heap.div_ceil(MIB),
        overhead_mib: JVM_OVERHEAD / MIB,
        need_mib,
        mem_mib: mem / MIB,
        suggest_mib: need_mib.div_ceil(256) * 256,
        max_heap_mib: mem.saturating_sub(JVM_OVERHEAD) / MIB,
    })
}

/// What to do about an option that needs the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Refuse to start: the JVM would fail.
    Refuse(JvmOptionError),
    /// Start, after telling the user this.
    Warn(String),
}

/// The verdict on one option, if it needs the host (see the module's table).
fn host_option(o: &JvmOption) -> Option<Verdict> {
    let t = o.text.as_str();
    let refuse = |why: &str| {
        Some(Verdict::Refuse(JvmOptionError::Unsupported {
            option: o.to_string(),
            why: why.into(),
        }))
    };
    let jdwp = t
        .strip_prefix("-agentlib:jdwp=")
        .or_else(|| t.strip_prefix("-Xrunjdwp:"))
        .or_else(|| {
            t.strip_prefix("-agentpath:")
                .filter(|p| p.contains("libjdwp.so="))
                .and_then(|p| p.split_once('=').map(|(_, v)| v))
        });
    if let Some(jdwp) = jdwp
        && jdwp.split(',').any(|kv| kv == "transport=dt_socket")
    {
        return refuse(
            "the JDWP debugger agent's dt_socket transport needs a TCP socket \
             (to listen with server=y or to connect with server=n), and a partition has \
             no network, so the JVM would stop at once with \"transport error 202\". \
             Debug the program on the host JVM",
        );
    }
    if let Some(prop) = t.strip_prefix("-Dcom.sun.management.jmxremote") {
        let name = prop.split_once('=').map_or(prop, |(n, _)| n);
        if name.is_empty() || name == ".port" {
            return refuse(
                "the JMX management agent serves RMI on a TCP port, and a partition has \
                 no network, so the JVM would stop with \"Exception thrown by the agent\". \
                 Leave out the com.sun.management.jmxremote properties",
            );
        }
    }
    if t == "-XX:+UseNUMA" {
        return Some(Verdict::Warn(format!(
            "{o}: a partition has one memory node and no NUMA system calls (as a Linux \
             kernel without NUMA); the JVM turns NUMA off and runs without it"
        )));
    }
    if t == "-XX:+StartAttachListener" {
        return Some(Verdict::Warn(format!(
            "{o}: the attach listener's Unix socket is inside the partition, so jcmd, \
             jstack and other attach tools on the host cannot reach this JVM"
        )));
    }
    None
}

/// The warnings for `opts`, or the first option that must be refused.
pub fn check_host_options(opts: &[JvmOption]) -> Result<Vec<String>, JvmOptionError> {
    let mut warnings = Vec::new();
    for o in opts {
        match host_option(o) {
            Some(Verdict::Refuse(e)) => return Err(e),
            Some(Verdict::Warn(w)) => warnings.push(w),
            None => {}
        }
    }
    Ok(warnings)
}

/// All the checks for a `java` command line (`args` after `argv[0]`) in a
/// partition of `mem` bytes: the warnings to print, or why not to start.
pub fn check(
    args: &[String],
    mem: u64,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<String>, JvmOptionError> {
    let opts = effective_options(args, env);
    let warnings = check_host_options(&opts)?;
    check_heap(&opts, mem)?;
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn cli(a: &[&str]) -> Vec<JvmOption> {
        effective_options(&v(a), no_env)
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64m"), Some(64 * MIB));
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size("512k"), Some(512 << 10));
        assert_eq!(parse_size("1t"), Some(1 << 40));
        assert_eq!(parse_size("1073741824"), Some(1 << 30));
        for bad in ["", "m", "1.5g", "-1m", "12x", "99999999999999999999"] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn options_stop_at_the_main_class() {
        let a = v(&[
            "-Xint",
            "-cp",
            "-Xmx9g",
            "--add-modules",
            "x",
            "-Dk=v",
            "Main",
            "-Xmx8g",
        ]);
        assert_eq!(jvm_options(&a), v(&["-Xint", "-Dk=v"]));
        assert_eq!(
            jvm_options(&v(&["-Xmx1g", "-jar", "app.jar", "-Xmx8g"])),
            v(&["-Xmx1g"])
        );
        assert_eq!(
            jvm_options(&v(&["-Xss1m", "-m", "m/c", "-Xmx8g"])),
            v(&["-Xss1m"])
        );
        assert_eq!(
            jvm_options(&v(&["--module=m/c", "-Xmx8g"])),
            Vec::<String>::new()
        );
        assert_eq!(
            jvm_options(&v(&["--source", "17", "-Xmx1g", "F.java", "-Xmx8g"])),
            v(&["-Xmx1g"])
        );
        assert_eq!(
            jvm_options(&v(&["--class-path=x", "-version"])),
            v(&["--class-path=x", "-version"])
        );
    }

    #[test]
    fn environment_options_come_first() {
        let env = |k: &str| match k {
            "JAVA_TOOL_OPTIONS" => Some("-Xmx1g  -Xss2m".to_string()),
            "JDK_JAVA_OPTIONS" => Some("-Xmx2g".to_string()),
            _ => None,
        };
        let o = effective_options(&v(&["-Xmx3g", "Main"]), env);
        let texts: Vec<&str> = o.iter().map(|o| o.text.as_str()).collect();
        assert_eq!(texts, ["-Xmx1g", "-Xss2m", "-Xmx2g", "-Xmx3g"]);
        assert_eq!(o[0].to_string(), "-Xmx1g (from JAVA_TOOL_OPTIONS)");
        assert_eq!(o[3].to_string(), "-Xmx3g");
        // The last one wins.
        let h = HeapOptions::from_options(&o);
        assert_eq!(h.max_heap, Some((3 << 30, "-Xmx3g".into())));
    }

    #[test]
    fn heap_flags_and_their_aliases() {
        let h = HeapOptions::from_options(&cli(&[
            "-Xmx1g",
            "-XX:MaxHeapSize=256m",
            "-XX:InitialHeapSize=64m",
            "-Xms32m",
            "-XX:MaxRAM=4g",
            "-XX:MaxRAMPercentage=75.0",
            "-XX:MinRAMPercentage=10",
            "-XX:MaxHeapFreeRatio=70",
        ]));
        assert_eq!(h.max_heap, Some((256 * MIB, "-XX:MaxHeapSize=256m".into())));
        assert_eq!(h.initial_heap, Some((32 * MIB, "-Xms32m".into())));
        assert_eq!(h.max_ram, Some((4 << 30, "-XX:MaxRAM=4g".into())));
        assert_eq!(h.max_ram_percent.map(|p| p.0), Some(75.0));
        assert_eq!(h.min_ram_percent.map(|p| p.0), Some(10.0));
        // Values the JVM rejects are its to report.
        let h = HeapOptions::from_options(&cli(&["-Xmxlots", "-XX:MaxRAMPercentage=150"]));
        assert_eq!(h, HeapOptions::default());
    }

    #[test]
    fn requested_heap() {
        let mem = 2048 * MIB;
        let req = |a: &[&str]| HeapOptions::from_options(&cli(a)).requested(mem);
        assert_eq!(req(&[]), None);
        assert_eq!(req(&["-Xss1m", "-Xint"]), None);
        assert_eq!(req(&["-Xmx1g"]), Some((1 << 30, "-Xmx1g".into())));
        assert_eq!(req(&["-Xms3g"]), Some((3 << 30, "-Xms3g".into())));
        assert_eq!(req(&["-Xmx1g", "-Xms512m"]).unwrap().0, 1 << 30);
        assert_eq!(
            req(&["-XX:MaxRAMPercentage=50"]),
            Some((1 << 30, "-XX:MaxRAMPercentage=50".into()))
        );
        assert_eq!(
            req(&["-XX:MaxRAM=16g"]),
            Some((4 << 30, "-XX:MaxRAM=16g".into()))
        );
        assert_eq!(
            req(&["-XX:MaxRAM=16g", "-XX:MaxRAMPercentage=10"]).map(|r| r.1),
            Some("-XX:MaxRAM=16g -XX:MaxRAMPercentage=10".into())
        );
        // A small "machine": MinRAMPercentage (50) of it.
        assert_eq!(req(&["-XX:MaxRAM=128m"]).unwrap().0, 64 * MIB);
        // An explicit -Xmx wins over the percentages.
        assert_eq!(
            req(&["-XX:MaxRAMPercentage=90", "-Xmx100m"]).unwrap().0,
            100 * MIB
        );
    }

    #[test]
    fn heap_that_fits() {
        let mem = 512 * MIB;
        assert_eq!(check_heap(&cli(&[]), mem), Ok(()));
        assert_eq!(check_heap(&cli(&["-Xmx384m"]), mem), Ok(()));
        assert_eq!(check_heap(&cli(&["-XX:MaxRAMPercentage=75"]), mem), Ok(()));
        assert_eq!(
            check_heap(&cli(&["-Xmx64m", "Main", "-Xmx8g"]), mem),
            Ok(())
        );
    }

    #[test]
    fn heap_too_large_says_the_numbers_and_what_to_do() {
        let err = check_heap(&cli(&["-Xmx1g"]), 512 * MIB).unwrap_err();
        assert_eq!(
            err,
            JvmOptionError::HeapTooLarge {
                what: "-Xmx1g".into(),
                heap_mib: 1024,
                overhead_mib: 128,
                need_mib: 1152,
                mem_mib: 512,
                suggest_mib: 1280,
                max_heap_mib: 384,
            }
        );
        let msg = err.to_string();
        assert_eq!(
            msg,
            "the JVM's heap does not fit the partition: -Xmx1g asks for a 1024 MiB heap, and \
             the JVM needs about 128 MiB more for metaspace, code cache and threads, 1152 MiB \
             in all, but the partition has --mem 512M. Give the partition more memory \
             (--mem 1280M) or the JVM a smaller heap (-Xmx384m at most)"
        );
        assert_eq!(err.exit_code(), 125);
        // Heap + overhead just over the partition.
        assert!(check_heap(&cli(&["-Xmx385m"]), 512 * MIB).is_err());
        assert!(check_heap(&cli(&["-Xms600m"]), 512 * MIB).is_err());
        assert!(check_heap(&cli(&["-XX:MaxRAMPercentage=100"]), 512 * MIB).is_err());
        assert!(check_heap(&cli(&["-XX:MaxRAM=8g"]), 1024 * MIB).is_err());
        let env = |k: &str| (k == "JAVA_TOOL_OPTIONS").then(|| "-Xmx4g".to_string());
        let msg = check(&v(&["Main"]), 1024 * MIB, env)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("-Xmx4g (from JAVA_TOOL_OPTIONS) asks for"),
            "{msg}"
        );
    }

    #[test]
    fn options_that_need_the_host() {
        let refused = |a: &str| {
            matches!(
                check_host_options(&cli(&[a])),
                Err(JvmOptionError::Unsupported { .. })
            )
        };
        for a in [
            "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=5005",
            "-agentlib:jdwp=transport=dt_socket,server=n,address=localhost:5005",
            "-Xrunjdwp:transport=dt_socket,server=y,address=8000",
            "-agentpath:/jdk/lib/libjdwp.so=transport=dt_socket,server=y",
            "-Dcom.sun.management.jmxremote",
            "-Dcom.sun.management.jmxremote=true",
            "-Dcom.sun.management.jmxremote.port=9999",
        ] {
            assert!(refused(a), "{a} not refused");
        }
        for a in [
            "-agentlib:hprof",
            "-Dcom.sun.management.jmxremote.ssl=false",
            "-XX:-UseZGC",
            "-XX:+UseZGC",
            "-XX:+UseLargePages",
            "-XX:+UseTransparentHugePages",
            "-XX:+UseShenandoahGC",
            "-Djdwp=transport=dt_socket",
        ] {
            assert_eq!(check_host_options(&cli(&[a])), Ok(vec![]), "{a}");
        }
        let msg = check_host_options(&cli(&["-agentlib:jdwp=transport=dt_socket,server=y"]))
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with(
                "-agentlib:jdwp=transport=dt_socket,server=y cannot work in a partition: \
                 the JDWP debugger agent"
            ),
            "{msg}"
        );
        let w = check_host_options(&cli(&["-XX:+UseNUMA", "-XX:+StartAttachListener"])).unwrap();
        assert_eq!(w.len(), 2);
        assert!(w[0].starts_with("-XX:+UseNUMA: a partition has one memory node"));
        assert!(w[1].contains("jcmd"));
        // A program argument is the program's business.
        assert_eq!(
            check(&v(&["Main", "-XX:+UseZGC", "-Xmx64g"]), 512 * MIB, no_env),
            Ok(vec![])
        );
    }

    #[test]
    fn java_programs() {
        assert!(is_java("/usr/lib/jvm/x/bin/java"));
        assert!(is_java("java"));
        assert!(!is_java("/usr/lib/jvm/x/bin/javac"));
        assert!(!is_java("/bin/ls"));
    }
}
