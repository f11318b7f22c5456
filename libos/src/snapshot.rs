//! Snapshots of the whole partition, taken by the library OS itself.
//!
//! The VMM does not save or restore a vCPU: at a quiet moment (interrupts
//! off, no 9P request at the gateway) the snapshot thread saves its own
//! registers on its stack, like `setjmp`, and asks the VMM to write guest
//! memory out ([`port::SNAPSHOT`]). Every other thread's state, the page
//! tables, the scheduler and the file cache are in that memory already. A
//! partition restored from the file starts a fresh vCPU the way a boot does,
//! but at [`resume_entry`], which loads what only the CPU held (descriptor
//! tables, system-call MSRs, the root page table, the APIC) and jumps back
//! into the saved context, where the snapshot call returns a second time,
//! now as [`Outcome::Restored`] — the approach of hibernation in Linux
//! (`swsusp`), which also lets the same image resume on PVM and on
//! standard KVM alike.
//!
//! Snapshots are asked for by the program (a read of
//! `/dev/astraea-snapshot`) or by the VMM (an interrupt on
//! [`astraea_abi::snapshot::VECTOR`], from `astraea snapshot`); the VMM
//! knows which file to write.

use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use astraea_abi::port;
use astraea_abi::snapshot::{MAGIC, PENDING, Record};

use crate::arch::{apic, context, cpu, fpu, gdt, trap};
use crate::errno::Errno;
use crate::{mm, sched};

/// How a snapshot call ended for the partition that sees it end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The snapshot was written; this is the partition it was taken of.
    Taken,
    /// This partition was restored from the snapshot.
    Restored,
}

/// How long the requests in flight may take to drain before the snapshot
/// is refused (`EBUSY`): a request that waits for the terminal, or a
/// write or connect that waits for the network, never ends by itself.
const DRAIN_NS: u64 = 2_000_000_000;
/// At most this much of the program's code is brought into the file cache
/// before a snapshot (`mm::vma::cache_code`).
const CODE_BUDGET: u64 = 64 << 20;
/// How long after asking the gateway to interrupt the waiting requests
/// the snapshot asks again if some still wait.
const REINTERRUPT_NS: u64 = 20_000_000;

/// Snapshots asked for so far, and the number of the last one served: a
/// request is served by the first snapshot that starts after it.
static ASKED: AtomicU64 = AtomicU64::new(0);
static SERVED: AtomicU64 = AtomicU64::new(0);
/// The last snapshot's result: 0 taken, 1 restored, else an errno.
static LAST: AtomicU32 = AtomicU32::new(0);
/// The arguments of the command that restored this partition (NUL-separated),
/// read from the new device tree.
static RESTORED_ARGS: spin::Mutex<Vec<u8>> = spin::Mutex::new(Vec::new());

/// What a read of `/dev/astraea-snapshot` says after `outcome`: `taken`, or
/// `restored` and the restoring command's arguments (`astraea run --warm`'s
/// launcher runs the class they name).
pub fn said(outcome: Outcome) -> Vec<u8> {
    match outcome {
        Outcome::Taken => b"taken\n".to_vec(),
        Outcome::Restored => {
            let mut v = b"restored\n".to_vec();
            v.extend_from_slice(&RESTORED_ARGS.lock());
            v
        }
    }
}

/// Where the snapshot thread waits for requests.
static ASKED_Q: sched::WaitQueue = sched::WaitQueue::new();
/// Where requesters wait for their snapshot.
static SERVED_Q: sched::WaitQueue = sched::WaitQueue::new();

/// State only the snapshot thread touches, with interrupts off.
struct Saved {
    /// What the VMM reads.
    record: Record,
    /// The snapshot thread's stack pointer inside [`context::save_then`].
    rsp: u64,
    /// The root page table when the snapshot was taken.
    cr3: u64,
}

#[repr(C, align(16))]
struct Cell(UnsafeCell<Saved>);
// SAFETY: written only by the snapshot thread with interrupts off (one
// CPU), and by the resume path before anything else runs.
unsafe impl Sync for Cell {}

static SAVED: Cell = Cell(UnsafeCell::new(Saved {
    record: Record {
        magic: 0,
        resume_rip: 0,
        resume_rsp: 0,
        tsc: 0,
        status: 0,
        pad: 0,
    },
    rsp: 0,
    cr3: 0,
}));

/// The stack [`resume_entry`] runs on: the boot stack belongs to the main
/// thread of the partition being restored.
const RESUME_STACK: usize = 16 * 1024;
#[repr(C, align(16))]
struct Stack(UnsafeCell<[u8; RESUME_STACK]>);
// SAFETY: used only by the resume path, before any other code runs.
unsafe impl Sync for Stack {}
static STACK: Stack = Stack(UnsafeCell::new([0; RESUME_STACK]));

/// Starts the snapshot thread (at boot).
pub fn init() {
    if sched::spawn("snapshot", serve).is_none() {
        log::warn!("cannot start the snapshot thread: the partition cannot be snapshotted");
    }
}

/// The VMM's interrupt came since the snapshot thread last asked it.
static VMM_ASKED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// The snapshot interrupt (`astraea snapshot`): wakes the snapshot thread,
/// which asks the VMM how many snapshots it wants (an interrupt may come
/// twice for one, or be lost before the APIC was up).
pub fn requested_by_vmm() {
    VMM_ASKED.store(true, Ordering::SeqCst);
    ASKED_Q.wake_one();
}

/// Snapshots asked for from outside and not yet taken, as the VMM counts
/// (another VMM, QEMU say, reads all ones from a port it does not have:
/// none).
fn vmm_pending() -> u32 {
    match cpu::inl(port::SNAPSHOT) {
        u32::MAX => 0,
        n => n,
    }
}

/// Asks for a snapshot and waits for it (a read of
/// `/dev/astraea-snapshot`).
pub fn request() -> Result<Outcome, Errno> {
    let mine = ASKED.fetch_add(1, Ordering::SeqCst) + 1;
    ASKED_Q.wake_one();
    SERVED_Q.wait_while(|| SERVED.load(Ordering::SeqCst) < mine);
    match LAST.load(Ordering::SeqCst) {
        0 => Ok(Outcome::Taken),
        1 => Ok(Outcome::Restored),
        e => Err(Errno(e)),
    }
}

/// The snapshot thread: one snapshot at a time, for every request made
/// before it started.
fn serve() {
    loop {
        // Asked from outside before this thread could take an interrupt
        // (at boot, or while a restored partition resumed)?
        let mut outside = vmm_pending() > 0;
        if !outside {
            ASKED_Q.wait_while(|| {
                ASKED.load(Ordering::SeqCst) == SERVED.load(Ordering::SeqCst)
                    && !VMM_ASKED.load(Ordering::SeqCst)
            });
            outside = VMM_ASKED.swap(false, Ordering::SeqCst) && vmm_pending() > 0;
        }
        let upto = ASKED.load(Ordering::SeqCst);
        if !outside && upto == SERVED.load(Ordering::SeqCst) {
            // A repeated interrupt for a snapshot already taken.
            continue;
        }
        let r = take();
        match r {
            Ok(Outcome::Taken) => log::info!("snapshot written"),
            Ok(Outcome::Restored) => {
                log::info!(
                    "restored from a snapshot; before it the partition had done (the exit report counts on from there):"
                );
                crate::boot::report_counts();
                crate::profile::restart();
            }
            // The VMM, or the program's read, says why.
            Err(e) => log::info!("snapshot refused: {} ({})", e.name(), e.0),
        }
        LAST.store(
            match r {
                Ok(Outcome::Taken) => 0,
                Ok(Outcome::Restored) => 1,
                Err(e) => e.0,
            },
            Ordering::SeqCst,
        );
        SERVED.store(upto, Ordering::SeqCst);
        SERVED_Q.wake_all();
    }
}

/// Takes one snapshot: drains the 9P requests in flight, then saves the
/// CPU state and asks the VMM to write memory, with interrupts off.
fn take() -> Result<Outcome, Errno> {
    let code = crate::mm::vma::cache_code(CODE_BUDGET);
    log::debug!(
        "snapshot: {} KiB of the program's code in the file cache",
        code / 1024
    );
    crate::drivers::virtio9p::hold(true);
    let deadline = crate::time::monotonic_ns() + DRAIN_NS;
    // When the gateway was last asked to interrupt waiting requests.
    let mut interrupted: Option<u64> = None;
    let irq = loop {
        let irq = cpu::irq_save();
        if crate::drivers::virtio9p::quiescent() {
            break irq;
        }
        cpu::irq_restore(irq);
        // What is left waits for the network (a listener's accept, a
        // connection's posted read): the gateway answers those `EINTR`
        // and their threads post them again once the snapshot is done
        // (new requests are held until then). Again after a while: a
        // request the gateway had not yet taken from the ring then was not
        // interrupted.
        let now = crate::time::monotonic_ns();
        if interrupted.is_none_or(|t| now - t > REINTERRUPT_NS)
            && crate::drivers::virtio9p::only_waits()
        {
            interrupted = Some(now);
            cpu::outb(port::SNAPSHOT_INTERRUPT, 0);
        }
        if crate::time::monotonic_ns() > deadline {
            crate::drivers::virtio9p::hold(false);
            log::warn!(
                "a 9P request is still at the gateway (a socket's write or connect, or a terminal read, waits there): no snapshot"
            );
            refuse(Errno::EBUSY);
            return Err(Errno::EBUSY);
        }
        sched::sleep_ns(200_000);
    };
    // The program threads' registers go to their save areas.
    fpu::release();
    let s = SAVED.0.get();
    // SAFETY: only this thread touches SAVED, with interrupts off.
    unsafe {
        (*s).cr3 = cpu::cr3();
        (*s).record = Record {
            magic: MAGIC,
            resume_rip: resume_entry as *const () as u64,
            resume_rsp: STACK.0.get() as u64 + RESUME_STACK as u64,
            tsc: cpu::rdtsc(),
            status: PENDING,
            pad: 0,
        };
    }
    // SAFETY: interrupts are off until `save_then` returns; `rsp` is in a
    // static.
    let restored = unsafe { context::save_then(&raw mut (*s).rsp, ask_vmm, 0) } == 1;
    if restored {
        after_restore();
    }
    // SAFETY: as above; the VMM wrote the status before the guest went on.
    let status = unsafe { core::ptr::read_volatile(&raw const (*s).record.status) };
    crate::drivers::virtio9p::hold(false);
    cpu::irq_restore(irq);
    match (restored, status) {
        (true, _) => Ok(Outcome::Restored),
        (false, 0) => Ok(Outcome::Taken),
        (false, PENDING) => Err(Errno::ENOSYS),
        (false, e) => Err(Errno(e)),
    }
}

/// Tells the VMM that this snapshot will not be taken, and why (a
/// requester waits for the answer).
fn refuse(e: Errno) {
    let irq = cpu::irq_save();
    let s = SAVED.0.get();
    // SAFETY: only this thread touches SAVED, with interrupts off.
    unsafe {
        (*s).record = Record {
            magic: MAGIC,
            resume_rip: 0,
            resume_rsp: 0,
            tsc: 0,
            status: e.0,
            pad: 0,
        };
    }
    ask_vmm(0);
    cpu::irq_restore(irq);
}

/// Inside [`context::save_then`]: hands the record to the VMM, which
/// writes the snapshot before the guest goes on.
extern "C" fn ask_vmm(_: u64) {
    // SAFETY: the record's address; nothing writes it meanwhile.
    let at = mm::virt_to_phys(unsafe { &raw const (*SAVED.0.get()).record } as u64);
    cpu::outl(port::SNAPSHOT, at as u32);
}

/// Back in the snapshot thread of a restored partition, interrupts still
/// off: what the fresh vCPU and device need before anything else runs.
fn after_restore() {
    // SAFETY: read by this thread only.
    let tsc = unsafe { (*SAVED.0.get()).record.tsc };
    let now = cpu::rdtsc();
    if now < tsc {
        log::error!(
            "the TSC went back by {} ticks across the restore (a snapshot from before the host rebooted?): clocks and timers will be off",
            tsc - now
        );
    } else {
        crate::time::skip(now - tsc);
        crate::process::refresh_vdso_clock();
    }
    crate::drivers::virtio9p::restored();
    // Completions the device added before the snapshot whose interrupt the
    // old vCPU had not taken: their waiters are woken now.
    crate::drivers::virtio9p::poll();
    sched::timer_lost();
    *RESTORED_ARGS.lock() = crate::boot::restored_from_fdt();
}

/// Where a restored partition's vCPU starts (the VMM reads the address
/// from the record): on [`STACK`], interrupts off, with the VMM's boot
/// page tables and GDT.
#[unsafe(naked)]
unsafe extern "C" fn resume_entry() -> ! {
    core::arch::naked_asm!("and rsp, -16", "call {resume}", "ud2", resume = sym resume);
}

/// Loads what only the CPU held, then continues the snapshot thread.
extern "C" fn resume() -> ! {
    // The descriptor tables first: exceptions arrive through this IDT.
    gdt::init();
    trap::load();
    crate::arch::user::init();
    crate::arch::user::forget_fs_base();
    // SAFETY: written before the snapshot was taken and not since.
    let (cr3, rsp) = unsafe { ((*SAVED.0.get()).cr3, (*SAVED.0.get()).rsp) };
    // SAFETY: the saved root maps all of the kernel (every address space
    // does) at the addresses the boot tables give it, this stack included.
    unsafe { cpu::write_cr3(cr3) };
    if let Err(e) = apic::init() {
        panic!("the local APIC cannot be used after the restore ({e:?})");
    }
    // SAFETY: `rsp` is the snapshot thread's, saved by `save_then` in the
    // memory this partition was restored from; interrupts are off.
    unsafe { context::resume_saved(rsp) }
}
