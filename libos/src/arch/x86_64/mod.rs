//! x86-64: CPU instructions, descriptor tables, traps, the local APIC and the
//! context switch. All of the kernel's inline assembly lives here.
pub mod apic;
pub mod context;
pub mod cpu;
pub mod direct;
pub mod fpu;
pub mod gdt;
pub mod pvh;
pub mod trap;
pub mod user;
