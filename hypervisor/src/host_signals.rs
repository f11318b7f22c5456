//! Signals sent to `astraea run` go to the partition's program, as if the
//! program were the process: a supervisor's SIGTERM runs a JVM's shutdown
//! hooks, Ctrl-C on the terminal interrupts it, SIGQUIT prints its thread
//! dump. The exit status is then the program's own (143 for a JVM that
//! SIGTERM stopped, as on the host).
//!
//! [`install`] blocks the forwarded signals in the calling thread before any
//! other thread exists (so every thread inherits the mask and none takes
//! them by the default action) and starts a thread that takes them with
//! `sigwait`. While a partition runs ([`attach`]) each signal is added to
//! [`take`]'s set and the guest is interrupted on
//! [`astraea_abi::host_signal::VECTOR`]; it reads the set from
//! [`astraea_abi::port::HOST_SIGNALS`]. Without a partition (before boot,
//! after exit) a terminating signal ends this process with `128 + signal`,
//! as the default action would. A program that ignores them can still be
//! stopped: the third SIGINT/SIGTERM/SIGHUP ends the partition at once.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use kvm_ioctls::VmFd;

/// The signals forwarded to the program.
pub const FORWARDED: [libc::c_int; 4] = [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM];

/// How many terminating signals end the partition without the program.
const FORCE_AFTER: u32 = 3;

/// Signals not yet read by the guest (bit `n - 1` for signal `n`).
static PENDING: AtomicU32 = AtomicU32::new(0);
/// The running partition's VM, while there is one.
static TARGET: Mutex<Option<Arc<VmFd>>> = Mutex::new(None);

/// Blocks [`FORWARDED`] in the calling thread and starts the thread that
/// forwards them. Call it first in `main`, before any thread is started.
pub fn install() -> std::io::Result<()> {
    let mut terminating = 0;
    install_with(move |sig| forward(sig, &mut terminating))
}

/// Blocks [`FORWARDED`] in the calling thread and starts a thread that calls
/// `on` with each one that arrives (`astraea deploy` stops its deployment).
/// Call it first in `main`, before any thread is started.
pub fn install_with(mut on: impl FnMut(libc::c_int) + Send + 'static) -> std::io::Result<()> {
    let set = signal_set();
    // SAFETY: `set` is an initialised sigset_t; pthread_sigmask only reads it.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc));
    }
    std::thread::Builder::new()
        .name("astraea-signals".into())
        .spawn(move || {
            loop {
                let mut sig: libc::c_int = 0;
                // SAFETY: `set` is initialised and blocked in every thread;
                // `sig` is a valid place for the result.
                if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                    on(sig);
                }
            }
        })?;
    Ok(())
}

/// The signals forwarded since the last call (the guest's port read).
pub fn take() -> u32 {
    PENDING.swap(0, Ordering::AcqRel)
}

/// Forwards signals to `vm`'s guest until the returned guard is dropped.
pub fn attach(vm: Arc<VmFd>) -> Attached {
    *TARGET.lock().unwrap_or_else(|e| e.into_inner()) = Some(vm);
    Attached(())
}

/// Ends forwarding to a partition when dropped.
pub struct Attached(());

impl Drop for Attached {
    fn drop(&mut self) {
        *TARGET.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set it is given; sigaddset only
    // adds valid signal numbers to it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in FORWARDED {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Forwards `sig` to the attached partition; `terminating` counts the
/// terminating signals forwarded so far.
fn forward(sig: libc::c_int, terminating: &mut u32) {
    let ends = sig != libc::SIGQUIT;
    let target = TARGET.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let Some(vm) = target else {
        if ends {
            // No program to take it: the default action.
            std::process::exit(128 + sig);
        }
        return;
    };
    if ends {
        *terminating += 1;
        if *terminating >= FORCE_AFTER {
            eprintln!(
                "astraea: signal {sig} received {terminating} times: stopping the partition without waiting for its program"
            );
            std::process::exit(128 + sig);
        }
    }
    tracing::info!("signal {sig}: forwarded to the partition's program");
    PENDING.fetch_or(1 << (sig - 1), Ordering::AcqRel);
    let msi = kvm_bindings::kvm_msi {
        address_lo: 0xfee0_0000, // boot CPU, physical destination
        data: u32::from(astraea_abi::host_signal::VECTOR),
        ..Default::default()
    };
    if let Err(e) = vm.signal_msi(msi) {
        tracing::warn!("cannot interrupt the partition for signal {sig}: {e}");
    }
}
