//! A sampling profiler of the vCPU as the host sees it: where the guest's
//! instruction pointer is, a thousand times a second, whatever the guest is
//! doing — with interrupts off too, which the library OS's own `--profile`
//! cannot see (its timer interrupt waits until interrupts are back on, so
//! it charges the time to the place that turns them on).
//!
//! A ticker thread sends `SIGUSR2` to the vCPU thread every millisecond;
//! the signal ends `KVM_RUN` with `EINTR`, and the run loop reads the
//! registers ([`Sampler::sample`]) before entering the guest again. Each
//! sample costs one exit (tens of µs on a PVM host): a few per cent of
//! the vCPU at this rate, estimated, not measured. At exit the counts go
//! to the file named by
//! [`SAMPLE_ENV`], library-OS addresses named by `addr2line` (binutils)
//! against the kernel image, inlined frames included.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use kvm_ioctls::VcpuFd;

/// Environment variable: write the vCPU's samples to this file at exit
/// (`%p` in it stands for the pid of the `astraea` process).
pub const SAMPLE_ENV: &str = "ASTRAEA_SAMPLE";

/// Where the library OS's image runs: its ELF addresses are offsets from
/// here (the image is linked at 0 and loaded at `KERNEL_START`, which the
/// kernel sees through its direct map).
const KERNEL_BASE: u64 = astraea_abi::layout::DIRECT_MAP + astraea_abi::layout::KERNEL_START;

/// Samples per second.
const HZ: u64 = 1000;

extern "C" fn ignore_signal(_: libc::c_int) {}

/// The profiler of one partition's vCPU.
pub struct Sampler {
    out: PathBuf,
    kernel: PathBuf,
    counts: HashMap<u64, u64>,
    ticks: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Sampler {
    /// Starts sampling the calling thread (the vCPU's) if [`SAMPLE_ENV`]
    /// names a file.
    pub fn arm(kernel: &Path) -> Option<Sampler> {
        // `%p` becomes this process's pid, so that the partitions of a
        // deployment, which share the environment, each write their own.
        let name = std::env::var(SAMPLE_ENV).ok()?;
        let out = PathBuf::from(name.replace("%p", &std::process::id().to_string()));
        // SAFETY: installs a handler that does nothing, without SA_RESTART,
        // so that KVM_RUN returns EINTR when the signal arrives.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = ignore_signal as *const () as usize;
            libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut());
        }
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() };
        let ticks = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (t, s) = (ticks.clone(), stop.clone());
        let spawned = std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_nanos(1_000_000_000 / HZ));
                    t.fetch_add(1, Ordering::Relaxed);
                    // SAFETY: `me` is the vCPU thread; `stop` is set before
                    // it returns from the run loop, and a signal to a thread
                    // that has gone is ESRCH, not undefined.
                    unsafe { libc::pthread_kill(me, libc::SIGUSR2) };
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the vCPU sampler: {e}");
            return None;
        }
        tracing::info!(file = %out.display(), "sampling the vCPU {HZ} times a second");
        Some(Sampler {
            out,
            kernel: kernel.to_path_buf(),
            counts: HashMap::new(),
            ticks,
            stop,
        })
    }

    /// `KVM_RUN` returned EINTR: counts where the guest was.
    pub fn sample(&mut self, vcpu: &VcpuFd) {
        if let Ok(regs) = vcpu.get_regs() {
            *self.counts.entry(regs.rip).or_default() += 1;
        }
    }

    fn write(&mut self) -> std::io::Result<u64> {
        let total: u64 = self.counts.values().sum();
        let mut kernel: Vec<(u64, u64)> = Vec::new();
        let mut program = 0u64;
        for (&rip, &n) in &self.counts {
            if rip >= KERNEL_BASE {
                kernel.push((rip, n));
            } else {
                program += n;
            }
        }
        kernel.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let names = symbolize(&self.kernel, kernel.iter().map(|k| k.0 - KERNEL_BASE));
        // By function (the outermost frame: the compiled function the
        // others were inlined into), then by address.
        let mut by_fn: HashMap<String, u64> = HashMap::new();
        for (i, &(_, n)) in kernel.iter().enumerate() {
            // The function's name without the place of the sample in it.
            let f = names
                .get(i)
                .and_then(|f| f.last())
                .map(|f| f.rsplit_once(" (").map_or(f.as_str(), |p| p.0).to_string());
            *by_fn.entry(f.unwrap_or_else(|| "?".into())).or_default() += n;
        }
        let mut by_fn: Vec<_> = by_fn.into_iter().collect();
        by_fn.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let pct = |n: u64| 100.0 * n as f64 / total.max(1) as f64;
        let mut w = std::io::BufWriter::new(std::fs::File::create(&self.out)?);
        writeln!(
            w,
            "# vCPU samples: {total} taken, {} ticks sent ({HZ}/s; a tick that finds the vCPU outside the guest is not counted)",
            self.ticks.load(Ordering::Relaxed)
        )?;
        writeln!(
            w,
            "# program (user addresses): {program} ({:.1}%)",
            pct(program)
        )?;
        writeln!(w, "\n## library OS by function")?;
        for (f, n) in &by_fn {
            writeln!(w, "{:6.2}% {n:8}  {f}", pct(*n))?;
        }
        writeln!(
            w,
            "\n## library OS by address (offset in the image; inlined frames, innermost first)"
        )?;
        for (i, &(rip, n)) in kernel.iter().enumerate() {
            let chain = names.get(i).map(|f| f.join(" < ")).unwrap_or_default();
            writeln!(
                w,
                "{:6.2}% {n:8}  {:#x}  {chain}",
                pct(n),
                rip - KERNEL_BASE
            )?;
        }
        w.flush()?;
        Ok(total)
    }
}

impl Drop for Sampler {
    /// Stops the ticker and writes the report.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        match self.write() {
            Ok(n) => eprintln!(
                "astraea: {n} vCPU samples written to {}",
                self.out.display()
            ),
            Err(e) => eprintln!(
                "astraea: cannot write the vCPU samples to {}: {e}",
                self.out.display()
            ),
        }
    }
}

/// The inlined call chain of each address (innermost first), by one run of
/// `addr2line -f -i -C`; empty chains if it cannot be run.
fn symbolize(image: &Path, addrs: impl Iterator<Item = u64>) -> Vec<Vec<String>> {
    let addrs: Vec<u64> = addrs.collect();
    if addrs.is_empty() {
        return Vec::new();
    }
    let mut input = String::new();
    for a in &addrs {
        input.push_str(&format!("{a:#x}\n"));
    }
    // `-a` prints each address before its frames: that is where a chain begins.
    let out = std::process::Command::new("addr2line")
        .args(["-a", "-f", "-i", "-C", "-e"])
        .arg(image)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            if let Some(mut i) = c.stdin.take() {
                i.write_all(input.as_bytes())?;
            }
            c.wait_with_output()
        });
    let Ok(out) = out else {
        return vec![Vec::new(); addrs.len()];
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut chains: Vec<Vec<String>> = Vec::with_capacity(addrs.len());
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if l.starts_with("0x") {
            chains.push(Vec::new());
            continue;
        }
        let loc = lines.next().unwrap_or("");
        let short = loc.rsplit('/').next().unwrap_or(loc);
        if let Some(c) = chains.last_mut() {
            c.push(format!("{l} ({short})"));
        }
    }
    chains.resize(addrs.len(), Vec::new());
    chains
}
