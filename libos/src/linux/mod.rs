//! The Linux personality's pure pieces of `execve`: parsing an ELF executable
//! into a load plan ([`elf`]) and laying out the initial process stack
//! ([`stack`]). Neither touches memory or the CPU, so both are unit-tested
//! and fuzzed on the host; the loader that maps the plan lives with the
//! address-space code.

pub mod elf;
pub mod stack;
pub mod unwind;
