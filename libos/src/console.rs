//! The partition's console: writes go to the user's stdout or stderr through
//! one hypercall per buffer (one VM exit), and the `log` facade writes the
//! kernel's own messages to stderr.

use core::fmt::{self, Write};

use astraea_abi::{ConsoleWrite, port};

use crate::arch::cpu::outl;
use crate::sync::IrqLock;

/// The descriptor the VMM reads. It lives in the kernel image, which is loaded
/// below 4 GiB, so its address fits the 32-bit port write.
static DESCRIPTOR: IrqLock<ConsoleWrite> = IrqLock::new(ConsoleWrite {
    fd: 0,
    pad: 0,
    addr: 0,
    len: 0,
});

/// Which host stream a write goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The user's stdout: program output.
    Stdout = 1,
    /// The user's stderr: the kernel's messages.
    Stderr = 2,
}

/// Where bytes outside the direct map (a kernel path running on a program's
/// stack) are copied for the VMM, which reads guest-physical memory.
static BOUNCE: crate::sync::IrqLock<[u8; 4096]> = crate::sync::IrqLock::new([0; 4096]);

/// Booted by another VMM (PVH): the console is the 16550 UART at COM1.
static UART: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
/// One writer at a time on the UART, so lines do not interleave bytewise.
static UART_LOCK: IrqLock<()> = IrqLock::new(());

/// Sends the console to the 16550 UART at COM1 (under another VMM, which
/// has no console hypercall).
pub fn use_uart() {
    UART.store(true, core::sync::atomic::Ordering::Relaxed);
}

/// Whether the console is the UART.
pub fn uart() -> bool {
    UART.load(core::sync::atomic::Ordering::Relaxed)
}

fn uart_write(bytes: &[u8]) {
    let _g = UART_LOCK.lock();
    for &b in bytes {
        // Wait for the transmit holding register to empty (LSR bit 5).
        let mut spins = 0u32;
        while crate::arch::cpu::inb(port::COM1 + 5) & 0x20 == 0 && spins < 100_000 {
            spins += 1;
        }
        crate::arch::cpu::outb(port::COM1, b);
    }
}

fn hypercall(port: u16, stream: Stream, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    if uart() {
        // Only text has a place on a UART; VMM records (cache dumps) do not.
        if port == port::CONSOLE || port == port::PANIC {
            uart_write(bytes);
        }
        return;
    }
    if (bytes.as_ptr() as u64) < crate::mm::DIRECT_MAP {
        for chunk in bytes.chunks(4096) {
            let mut b = BOUNCE.lock();
            b[..chunk.len()].copy_from_slice(chunk);
            hypercall(port, stream, &b[..chunk.len()]);
        }
        return;
    }
    let mut d = DESCRIPTOR.lock();
    *d = ConsoleWrite {
        fd: stream as u32,
        pad: 0,
        // Kernel memory is all in the direct map; the VMM wants GPAs.
        addr: crate::mm::virt_to_phys(bytes.as_ptr() as u64),
        len: bytes.len() as u64,
    };
    let gpa = crate::mm::virt_to_phys(&raw const *d as u64);
    outl(port, gpa as u32);
}

/// Which of the user's stdin (bit 0), stdout (bit 1) and stderr (bit 2) are
/// terminals on the host ([`astraea_abi::tty`]), as the VMM said at boot.
static TERMINALS: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
/// The host terminal's size: rows in the high half, columns in the low.
static WINSIZE: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(24 << 16 | 80);

/// Records what the VMM said about the user's terminal: the
/// [`astraea_abi::tty`] mask and, if it knows, the size (rows, columns).
pub fn set_terminal(mask: u32, size: Option<(u16, u16)>) {
    use core::sync::atomic::Ordering;
    TERMINALS.store(mask, Ordering::Relaxed);
    if let Some((rows, cols)) = size {
        WINSIZE.store(u32::from(rows) << 16 | u32::from(cols), Ordering::Relaxed);
    }
}

/// Whether the user's host stream `fd` (0 stdin, 1 stdout, 2 stderr) is a
/// terminal.
pub fn is_terminal(fd: u8) -> bool {
    fd < 3 && TERMINALS.load(core::sync::atomic::Ordering::Relaxed) & (1 << fd) != 0
}

/// The terminal's size: (rows, columns).
pub fn winsize() -> (u16, u16) {
    let v = WINSIZE.load(core::sync::atomic::Ordering::Relaxed);
    ((v >> 16) as u16, v as u16)
}

/// Hands `bytes` to the VMM through `port` (a [`port::CACHE_DUMP`] record).
pub fn to_vmm(port: u16, bytes: &[u8]) {
    hypercall(port, Stream::Stdout, bytes);
}

/// Writes bytes to a host stream.
pub fn write(stream: Stream, bytes: &[u8]) {
    hypercall(port::CONSOLE, stream, bytes);
}

/// Ends the partition as crashed with `msg` as the panic message.
pub fn panic_message(msg: &[u8]) {
    hypercall(port::PANIC, Stream::Stderr, msg);
    if uart() {
        // Our VMM ends the report's line itself; a UART does not.
        uart_write(b"\n");
    }
}

/// Formats into a fixed buffer and sends it in as few hypercalls as possible.
pub struct BufWriter<const N: usize> {
    stream: Stream,
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> BufWriter<N> {
    /// An empty writer for `stream`.
    pub const fn new(stream: Stream) -> Self {
        Self {
            stream,
            buf: [0; N],
            len: 0,
        }
    }

    /// Sends what is buffered.
    pub fn flush(&mut self) {
        write(self.stream, &self.buf[..self.len]);
        self.len = 0;
    }

    /// The bytes buffered so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Appends without flushing; drops what does not fit. For panic messages.
    pub fn push_truncating(&mut self, s: &str) {
        let n = s.len().min(N - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
    }
}

impl<const N: usize> Write for BufWriter<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut s = s.as_bytes();
        while !s.is_empty() {
            if self.len == N {
                self.flush();
            }
            let n = s.len().min(N - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&s[..n]);
            self.len += n;
            s = &s[n..];
        }
        Ok(())
    }
}

/// Formats `args` to `stream` (used by the print macros).
pub fn print_to(stream: Stream, args: fmt::Arguments<'_>) {
    let mut w = BufWriter::<256>::new(stream);
    let _ = w.write_fmt(args);
    w.flush();
}

/// Prints to the user's stdout.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::console::print_to($crate::console::Stream::Stdout, format_args!($($arg)*)) };
}

/// Prints a line to the user's stdout.
#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::console::print_to($crate::console::Stream::Stdout, format_args!("{}\n", format_args!($($arg)*))) };
}

/// Prints a line to the user's stderr.
#[macro_export]
macro_rules! eprintln {
    ($($arg:tt)*) => { $crate::console::print_to($crate::console::Stream::Stderr, format_args!("{}\n", format_args!($($arg)*))) };
}

struct Logger;

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::max_level()
    }

    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            let us = crate::time::monotonic_ns() / 1000;
            print_to(
                Stream::Stderr,
                format_args!(
                    "[{:>6}.{:06} {:5} {}] {}\n",
                    us / 1_000_000,
                    us % 1_000_000,
                    r.level(),
                    r.target(),
                    r.args()
                ),
            );
        }
    }

    fn flush(&self) {}
}

static LOGGER: Logger = Logger;

/// Installs the kernel logger at `level` (`error` … `trace`, `off`).
pub fn init_log(level: &str) {
    let filter = match level {
        "off" => log::LevelFilter::Off,
        "error" => log::LevelFilter::Error,
        "info" => log::LevelFilter::Info,
        "debug" => log::LevelFilter::Debug,
        "trace" => log::LevelFilter::Trace,
        _ => log::LevelFilter::Warn,
    };
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(filter);
}
