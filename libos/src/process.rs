//! Starting the program: read its ELF image through 9P, map its segments
//! into user memory, build the initial stack, enter ring 3.

use alloc::string::String;
use alloc::vec::Vec;

use crate::errno::Errno;
use crate::linux::elf::{Elf, ElfKind, LoadPlan, SegmentFlags};
use crate::linux::stack::{
    AT_CLKTCK, AT_EGID, AT_ENTRY, AT_EUID, AT_FLAGS, AT_GID, AT_HWCAP, AT_PAGESZ, AT_PHDR,
    AT_PHENT, AT_PHNUM, AT_SECURE, AT_UID, StackImage,
};
use crate::mm::user;
use crate::mm::vma::{self, Backing, PROT_EXEC, PROT_READ, PROT_WRITE, Placement};

/// The program's memory layout as the system calls grow it.
pub struct Memory {
    /// Where the break started (the end of the program image).
    pub brk_start: u64,
    /// The current break.
    pub brk: u64,
}

/// The one process's memory layout.
pub static MEMORY: crate::sync::IrqLock<Memory> = crate::sync::IrqLock::new(Memory {
    brk_start: 0,
    brk: 0,
});

/// Program threads alive; the last one's `exit` ends the partition.
pub static LIVE_THREADS: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// The process id: the first program thread's id.
static PID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

/// The process id the VMM chose (`pid=` on the command line; 0: none).
static CHOSEN_PID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Linux's largest process id (`PID_MAX_LIMIT`). Thread ids count on from
/// the pid and stay far below a futex word's owner field (`FUTEX_TID_MASK`,
/// 2^30) for any number of threads a partition can make.
const PID_MAX: u64 = 1 << 22;

/// Makes `pid` the program's process id (and the first of its thread ids)
/// instead of the scheduler's small numbers. The VMM passes its own host
/// process id, so that partitions differ where programs name files after
/// their pid (`hs_err_pid%p.log`, `-Xlog:gc:file=gc-%p.log`, heap dumps,
/// lock and pid files in a shared `/tmp`), and the pid a program logs is
/// the one `ps` shows on the host.
pub fn set_pid(pid: u64) {
    if pid == 0 || pid > PID_MAX {
        log::warn!("pid={pid} on the command line is out of range; ignored");
        return;
    }
    CHOSEN_PID.store(pid, core::sync::atomic::Ordering::Relaxed);
}

/// `RLIM_NLIMITS`: Linux's resource limits, by number.
pub const RLIM_NLIMITS: usize = 16;
/// `RLIMIT_NOFILE`.
pub const RLIMIT_NOFILE: usize = 7;
/// `RLIMIT_CPU`.
pub const RLIMIT_CPU: usize = 0;
/// `RLIMIT_FSIZE`.
pub const RLIMIT_FSIZE: usize = 1;
/// `RLIMIT_DATA`.
pub const RLIMIT_DATA: usize = 2;
/// `RLIMIT_MEMLOCK`.
pub const RLIMIT_MEMLOCK: usize = 8;
/// `RLIMIT_AS`.
pub const RLIMIT_AS: usize = 9;
/// `RLIM_INFINITY`.
pub const RLIM_INFINITY: u64 = u64::MAX;

/// The process's (soft, hard) resource limits: the VMM's own (`rlimits=`
/// on the command line), as a program started from the same shell on the
/// host inherits them; until then, Linux's `INIT_RLIMITS`.
static LIMITS: crate::sync::IrqLock<[(u64, u64); RLIM_NLIMITS]> = crate::sync::IrqLock::new([
    (RLIM_INFINITY, RLIM_INFINITY), // CPU
    (RLIM_INFINITY, RLIM_INFINITY), // FSIZE
    (RLIM_INFINITY, RLIM_INFINITY), // DATA
    (8 << 20, RLIM_INFINITY),       // STACK
    (0, RLIM_INFINITY),             // CORE
    (RLIM_INFINITY, RLIM_INFINITY), // RSS
    (63_230, 63_230),               // NPROC
    (1024, 4096),                   // NOFILE
    (8 << 20, 8 << 20),             // MEMLOCK
    (RLIM_INFINITY, RLIM_INFINITY), // AS
    (RLIM_INFINITY, RLIM_INFINITY), // LOCKS
    (63_230, 63_230),               // SIGPENDING
    (819_200, 819_200),             // MSGQUEUE
    (0, 0),                         // NICE
    (0, 0),                         // RTPRIO
    (RLIM_INFINITY, RLIM_INFINITY), // RTTIME
]);

/// Limit `resource` (below [`RLIM_NLIMITS`]) as (soft, hard).
pub fn rlimit(resource: usize) -> (u64, u64) {
    LIMITS.lock()[resource]
}

/// Replaces limit `resource` (checked by the caller), returning the old.
pub fn set_rlimit(resource: usize, new: (u64, u64)) -> (u64, u64) {
    core::mem::replace(&mut LIMITS.lock()[resource], new)
}

/// Takes the limits from the command line's `rlimits=`: for each resource
/// in order, `SOFT:HARD` in hexadecimal (`-` for no limit), separated by
/// commas. A malformed list changes nothing.
pub fn set_rlimits(text: &str) {
    let value = |v: &str| {
        if v == "-" {
            Some(RLIM_INFINITY)
        } else {
            u64::from_str_radix(v, 16).ok()
        }
    };
    let parsed: Option<Vec<(u64, u64)>> = text
        .split(',')
        .map(|pair| {
            let (cur, max) = pair.split_once(':')?;
            Some((value(cur)?, value(max)?))
        })
        .collect();
    match parsed {
        Some(v) if v.len() == RLIM_NLIMITS && v.iter().all(|&(c, m)| c <= m) => {
            LIMITS.lock().copy_from_slice(&v);
        }
        _ => log::warn!("rlimits={text} on the command line is malformed; ignored"),
    }
}

/// The descriptors the program may have: numbers below this
/// (`RLIMIT_NOFILE`'s soft limit, at most what the table holds).
pub fn fd_limit() -> usize {
    rlimit(RLIMIT_NOFILE).0.min(crate::fd::MAX_FDS as u64) as usize
}

/// The program's threads by id.
static THREADS: crate::sync::IrqLock<alloc::collections::BTreeMap<u64, crate::sched::ThreadRef>> =
    crate::sync::IrqLock::new(alloc::collections::BTreeMap::new());

/// The process id.
pub fn pid() -> u64 {
    PID.load(core::sync::atomic::Ordering::Relaxed)
}

/// The program thread `tid`, if it is alive.
pub fn thread(tid: u64) -> Option<crate::sched::ThreadRef> {
    THREADS.lock().get(&tid).cloned()
}

/// A program thread that does not block `sig`, the first (main) one
/// first, for a signal sent to the process.
pub fn thread_not_blocking(sig: u32) -> Option<u64> {
    let bit = 1u64 << (sig - 1);
    THREADS
        .lock()
        .iter()
        .find(|(_, t)| t.user.sigmask.load(core::sync::atomic::Ordering::Relaxed) & bit == 0)
        .map(|(&tid, _)| tid)
}

/// The ids of the program's threads alive, in order.
pub fn tids() -> Vec<u64> {
    THREADS.lock().keys().copied().collect()
}

/// Whether the program has a thread `tid`.
pub fn alive(tid: u64) -> bool {
    THREADS.lock().contains_key(&tid)
}

/// Records a new program thread.
pub fn register(t: &crate::sched::ThreadRef) {
    THREADS.lock().insert(t.id(), t.clone());
}

/// Forgets a program thread that is exiting.
pub fn unregister(tid: u64) {
    THREADS.lock().remove(&tid);
}

/// The program's absolute path, for `/proc/self/exe`.
pub static EXE: crate::sync::IrqLock<String> = crate::sync::IrqLock::new(String::new());

/// `/proc/self/cmdline`: the arguments, each ended by a NUL.
pub static CMDLINE: crate::sync::IrqLock<String> = crate::sync::IrqLock::new(String::new());

/// `/proc/self/environ`: the environment, each entry ended by a NUL.
pub static ENVIRON: crate::sync::IrqLock<String> = crate::sync::IrqLock::new(String::new());

fn nul_joined(items: &[String]) -> String {
    let mut s = String::new();
    for i in items {
        s.push_str(i);
        s.push('\0');
    }
    s
}

/// The vDSO (libos/vdso/vdso.S, rebuilt by `./x vdso`): `clock_gettime`,
/// `gettimeofday`, `time`, `getcpu` without a system call.
static VDSO: &[u8] = include_bytes!("../vdso/vdso.so");
/// Where the vDSO finds its clock parameters, from the start of [vdso]
/// (0x800 below the image, as its linker script says).
const VVAR_OFFSET: u64 = 0x800;

/// The clock parameters as the vDSO's page holds them.
fn vvar() -> Vec<u8> {
    crate::time::vdso_params()
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

/// Writes the clocks' parameters again into the program's vDSO page (a
/// restored partition's clocks moved, `time::skip`). Nothing to do before a
/// program has started.
pub fn refresh_vdso_clock() {
    let at = crate::arch::user::RESUME_AT + VVAR_OFFSET;
    if let Err(e) = user::rewrite(at, &vvar()) {
        log::debug!("no vDSO clock page to refresh: {}", e.name());
    }
}
/// The direct entry's address, in the [vdso] page (see `arch::direct`).
pub const DIRECT_ENTRY_OFFSET: u64 = 0xff8;

/// Where a position-independent program is loaded (as Linux does).
const PIE_BASE: u64 = 0x5555_5555_4000;
/// Top of the initial stack.
const STACK_TOP: u64 = 0x7fff_f000_0000;
/// The main thread's stack area (populated as it is touched), as Linux's
/// default 8 MiB `RLIMIT_STACK`.
pub const STACK_SIZE: u64 = 8 << 20;

/// Loads `path` from the partition's namespace and runs it with `argv` and
/// `envp`. Returns only if the program cannot be started.
pub fn exec(path: &str, argv: &[String], envp: &[String], cwd: &str) -> Errno {
    *crate::fd::CWD.lock() = String::from(cwd);
    match load_and_enter(path, argv, envp) {
        Ok(never) => match never {},
        Err(e) => e,
    }
}

enum Never {}

/// Reads a whole file of the namespace.
fn read_file(path: &str) -> Result<Vec<u8>, Errno> {
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let fid = c.walk_path(&crate::fd::absolute(path))?;
    let image = c.open(fid, 0).and_then(|_| c.read_all(fid));
    c.clunk(fid);
    image
}

/// Maps an ELF image's segments with `base` added (ignored for `ET_EXEC`);
/// returns its plan.
fn map_image(path: &str, image: &[u8], base: u64) -> Result<LoadPlan, Errno> {
    let elf = Elf::parse(image).map_err(|e| {
        log::error!("{path}: not a Linux x86-64 executable: {e}");
        Errno::ENOEXEC
    })?;
    let plan = elf.load_plan(base).map_err(|e| {
        log::error!("{path}: cannot be loaded: {e}");
        Errno::ENOEXEC
    })?;
    let name: alloc::sync::Arc<str> = alloc::sync::Arc::from(crate::fd::absolute(path).as_str());
    for seg in &plan.segments {
        let mut prot = PROT_READ;
        if seg.prot.contains(SegmentFlags::W) {
            prot |= PROT_WRITE;
        }
        if seg.prot.contains(SegmentFlags::X) {
            prot |= PROT_EXEC;
        }
        vma::map(
            Placement::NoReplace(seg.vaddr_start),
            seg.len(),
            prot,
            false,
            Backing::Anon,
            Some(name.clone()),
            false,
        )
        .inspect_err(|e| log::error!("{path}: segment at {:#x}: {e}", seg.vaddr_start))?;
        let from = seg.file_offset as usize;
        let bytes = image
            .get(from..from + seg.file_bytes as usize)
            .ok_or(Errno::ENOEXEC)?;
        user::load(seg.vaddr_start, bytes)?;
    }
    Ok(plan)
}

/// Where the dynamic linker is loaded.
const INTERP_BASE: u64 = 0x7f80_0000_0000;

fn load_and_enter(path: &str, argv: &[String], envp: &[String]) -> Result<Never, Errno> {
    crate::fd::init_stdio();
    *EXE.lock() = crate::fd::absolute(path);
    let image = read_file(path)?;
    let elf = Elf::parse(&image).map_err(|e| {
        log::error!("{path}: not a Linux x86-64 executable: {e}");
        Errno::ENOEXEC
    })?;
    let interp = match elf.kind() {
        ElfKind::Dynamic { interpreter } => Some(String::from(interpreter)),
        _ => None,
    };
    let plan = map_image(path, &image, PIE_BASE)?;
    // A dynamic program starts in its interpreter (ld.so), which finds the
    // program through AT_PHDR/AT_ENTRY and itself through AT_BASE.
    let (start, interp_base) = match &interp {
        None => (plan.entry, 0),
        Some(ld) => {
            let ld_image = read_file(ld).inspect_err(|e| {
                log::error!("{path}: its interpreter {ld} cannot be read: {e}");
            })?;
            let ld_plan = map_image(ld, &ld_image, INTERP_BASE)?;
            (ld_plan.entry, ld_plan.bias)
        }
    };
    vma::map(
        Placement::NoReplace(STACK_TOP - STACK_SIZE),
        STACK_SIZE,
        PROT_READ | PROT_WRITE,
        false,
        Backing::Anon,
        Some(alloc::sync::Arc::from("[stack]")),
        false,
    )?;
    // [vdso]: the resume stub and the clock parameters in the first page,
    // the vDSO image (time without a system call) from the second.
    let at = crate::arch::user::RESUME_AT;
    vma::map(
        Placement::NoReplace(at),
        4096 + VDSO.len().next_multiple_of(4096) as u64,
        PROT_READ | PROT_EXEC,
        false,
        Backing::Anon,
        Some(alloc::sync::Arc::from("[vdso]")),
        false,
    )?;
    user::load(at, &crate::arch::user::RESUME_STUB)?;
    user::load(at + VVAR_OFFSET, &vvar())?;
    user::load(at + 4096, VDSO)?;
    if crate::arch::direct::enabled() {
        // Where a program can find the direct entry (tests do; rewritten
        // sites' stubs carry it in their region's header).
        user::load(
            at + DIRECT_ENTRY_OFFSET,
            &crate::arch::direct::entry_address().to_le_bytes(),
        )?;
    }
    {
        let mut m = MEMORY.lock();
        m.brk_start = plan.span_end;
        m.brk = plan.span_end;
    }
    let hwcap = u64::from(core::arch::x86_64::__cpuid(1).edx);
    let auxv = [
        (AT_PHDR, plan.phdr.unwrap_or(0)),
        (AT_PHENT, u64::from(elf.phent())),
        (AT_PHNUM, u64::from(elf.phnum())),
        (crate::linux::stack::AT_BASE, interp_base),
        (AT_PAGESZ, 4096),
        (AT_FLAGS, 0),
        (AT_ENTRY, plan.entry),
        (AT_UID, 0),
        (AT_EUID, 0),
        (AT_GID, 0),
        (AT_EGID, 0),
        (AT_SECURE, 0),
        (AT_HWCAP, hwcap),
        (AT_CLKTCK, 100),
        (
            crate::linux::stack::AT_SYSINFO_EHDR,
            crate::arch::user::RESUME_AT + 4096,
        ),
    ];
    *CMDLINE.lock() = nul_joined(argv);
    *ENVIRON.lock() = nul_joined(envp);
    let args: Vec<&[u8]> = argv.iter().map(|s| s.as_bytes()).collect();
    let env: Vec<&[u8]> = envp.iter().map(|s| s.as_bytes()).collect();
    let stack = StackImage::build(STACK_TOP, &args, &env, &auxv, random16(), b"x86_64")
        .map_err(|_| Errno::E2BIG)?;
    user::copy_in(stack.sp, &stack.bytes)?;
    log::debug!("{path}: entry {:#x}, stack {:#x}", plan.entry, stack.sp);
    let me = crate::sched::current();
    match CHOSEN_PID.load(core::sync::atomic::Ordering::Relaxed) {
        0 => {}
        pid => me.renumber(pid),
    }
    PID.store(me.id(), core::sync::atomic::Ordering::Relaxed);
    LIVE_THREADS.store(1, core::sync::atomic::Ordering::Relaxed);
    register(&me);
    me.user
        .active
        .store(true, core::sync::atomic::Ordering::Release);
    crate::arch::fpu::claim(&me);
    drop(me);
    // A SIGTERM that reached the VMM while the partition booted is the
    // program's now (pending until it starts, as for a process signalled
    // right after fork).
    crate::signal::deliver_early_host_signals();
    // `ulimit -t`: the CPU time limit counts from here.
    crate::timers::cpu_limit_changed();
    // SAFETY: the segments and the stack were just mapped as user memory.
    unsafe { crate::arch::user::enter_user(start, stack.sp) }
}

/// The launch environment as `NAME=VALUE` strings, read from the gateway's
/// `/env` (one file per variable); empty without a namespace.
pub fn environment() -> Vec<String> {
    let Some(c) = crate::p9::mounted() else {
        return Vec::new();
    };
    let read = || -> Result<Vec<String>, Errno> {
        let dir = c.walk_path("/env")?;
        let names = c.open(dir, 0o200000).and_then(|_| c.readdir(dir));
        c.clunk(dir);
        let mut out = Vec::new();
        for (name, _) in names? {
            if name == "." || name == ".." {
                continue;
            }
            let f = c.walk_path(&alloc::format!("/env/{name}"))?;
            let value = c.open(f, 0).and_then(|_| c.read_all(f));
            c.clunk(f);
            out.push(alloc::format!(
                "{name}={}",
                String::from_utf8_lossy(&value?)
            ));
        }
        Ok(out)
    };
    read().unwrap_or_default()
}

/// Sixteen bytes for `AT_RANDOM` (libc's stack protector and pointer guard).
fn random16() -> [u8; 16] {
    let mut out = [0u8; 16];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut x = crate::arch::cpu::rdtsc() ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes());
    }
    out
}
