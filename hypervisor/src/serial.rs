//! COM1, a 16550 UART (vm-superio) whose output goes to the user's stdout.
//! The library OS uses the console hypercall instead (one exit per write, not
//! per byte); the UART is there for anything that expects a PC.

use std::io::Stdout;

use astraea_abi::port;
use vm_superio::{Serial, Trigger};

/// The UART raises no interrupt: the guest polls it.
struct NoIrq;

impl Trigger for NoIrq {
    type E = std::convert::Infallible;
    fn trigger(&self) -> Result<(), Self::E> {
        Ok(())
    }
}

/// COM1 at its usual ports.
pub struct Com1(Serial<NoIrq, vm_superio::serial::NoEvents, Stdout>);

impl Com1 {
    /// A UART writing to stdout.
    pub fn new() -> Self {
        Self(Serial::new(NoIrq, std::io::stdout()))
    }

    /// Whether `p` is one of the UART's eight ports.
    pub fn covers(p: u16) -> bool {
        (port::COM1..port::COM1 + 8).contains(&p)
    }

    /// A guest `out` to the UART.
    pub fn write(&mut self, p: u16, data: &[u8]) {
        if let Some(&b) = data.first()
            && let Err(e) = self.0.write((p - port::COM1) as u8, b)
        {
            tracing::debug!(?e, "serial write failed");
        }
    }

    /// A guest `in` from the UART.
    pub fn read(&mut self, p: u16, data: &mut [u8]) {
        let v = self.0.read((p - port::COM1) as u8);
        data.fill(0);
        if let Some(d) = data.first_mut() {
            *d = v;
        }
    }
}

impl Default for Com1 {
    fn default() -> Self {
        Self::new()
    }
}
