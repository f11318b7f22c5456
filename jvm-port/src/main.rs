//! The bootable partition image: the library OS plus the JVM's launch policy.
//!
//! Today the image boots, reports what it found and exits 0; the Linux
//! personality (issue 4) makes it load and run the program named in its
//! arguments.
#![no_std]
#![no_main]

use astraea_libos::{BootConfig, eprintln, println};

astraea_libos::entry!(main);

fn main(cfg: &BootConfig) -> i32 {
    println!(
        "Astraea {}: partition up, {} MiB RAM, {} vCPU, booted in {} us",
        astraea_libos::VERSION,
        cfg.mem_bytes() >> 20,
        cfg.cpus,
        cfg.boot_ns / 1000
    );
    if let Some(prog) = cfg.args.first() {
        eprintln!(
            "astraea-kernel: cannot run {prog:?}: running programs arrives with the Linux personality"
        );
        return 127;
    }
    0
}
