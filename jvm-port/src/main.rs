//! The bootable partition image: the library OS plus the program's launch.
//!
//! Without arguments the image reports what it booted and exits 0. With
//! arguments it runs `ARGS[0]` (a path in the partition's namespace) as a
//! Linux x86-64 program with the caller's environment; the program's
//! `exit_group` ends the partition with its status.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;

use astraea_libos::{BootConfig, eprintln, println, process, sched};

astraea_libos::entry!(main);

fn main(cfg: &BootConfig) -> i32 {
    let Some(prog) = cfg.args.first().cloned() else {
        println!(
            "Astraea {}: partition up, {} MiB RAM, {} vCPU, booted in {} us",
            astraea_libos::VERSION,
            cfg.mem_bytes() >> 20,
            cfg.cpus,
            cfg.boot_ns / 1000
        );
        return 0;
    };
    let argv = cfg.args.clone();
    let cwd = cfg.cwd.clone();
    let envp: Vec<String> = process::environment();
    // The program runs on a thread of its own: its kernel stack is the one
    // system calls and traps from ring 3 land on.
    let failed = alloc::sync::Arc::new(core::sync::atomic::AtomicU32::new(0));
    let f = failed.clone();
    let Some(t) = sched::spawn("init", move || {
        let e = process::exec(&prog, &argv, &envp, &cwd);
        eprintln!("astraea: cannot run {prog}: {e}");
        f.store(
            if e == astraea_libos::errno::Errno::ENOENT {
                127
            } else {
                126
            },
            core::sync::atomic::Ordering::SeqCst,
        );
    }) else {
        eprintln!("astraea: no memory for the program's thread");
        return 126;
    };
    // Waiting in 10 ms sleeps rather than a join keeps the timer running
    // while the program computes, so interrupts from ring 3 are routine
    // (the future scheduler of program threads needs them anyway).
    while t.thread().state() != sched::State::Dead {
        sched::sleep_ns(10_000_000);
    }
    t.join();
    failed.load(core::sync::atomic::Ordering::SeqCst) as i32
}
