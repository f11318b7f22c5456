//! Parses arbitrary bytes as an ELF executable; whatever parses is walked
//! and planned at two bases. Nothing may panic, and every plan must keep the
//! invariants the loader relies on.
#![no_main]

use astraea_libos::linux::elf::{Elf, ElfKind, LoadPlan, PAGE_SIZE};
use libfuzzer_sys::fuzz_target;

fn check(plan: &LoadPlan, file_len: u64) {
    assert!(!plan.segments.is_empty());
    assert_eq!(plan.span_start, plan.segments[0].vaddr_start);
    assert_eq!(
        plan.span_end,
        plan.segments[plan.segments.len() - 1].vaddr_end
    );
    assert!(plan.span_end - plan.span_start <= 1 << 40);
    assert!(plan.align.is_power_of_two() && plan.align >= PAGE_SIZE);
    let mut prev_end = plan.span_start;
    for s in &plan.segments {
        assert!(s.vaddr_start >= prev_end, "segments overlap");
        assert!(s.vaddr_start < s.vaddr_end);
        assert_eq!(s.vaddr_start % PAGE_SIZE, 0);
        assert_eq!(s.vaddr_end % PAGE_SIZE, 0);
        assert_eq!(s.file_offset % PAGE_SIZE, 0);
        assert!(s.file_offset + s.file_bytes <= file_len);
        assert_eq!(s.zero_from, s.vaddr_start + s.file_bytes);
        assert!(s.zero_from <= s.zero_to && s.zero_to == s.vaddr_end);
        assert_eq!(s.prot.bits() & !7, 0);
        prev_end = s.vaddr_end;
    }
    if let Some((start, end)) = plan.relro {
        assert!(start < end && start % PAGE_SIZE == 0 && end % PAGE_SIZE == 0);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(elf) = Elf::parse(data) else {
        return;
    };
    assert_eq!(elf.phdrs().count(), usize::from(elf.phnum()));
    if let ElfKind::Dynamic { interpreter } = elf.kind() {
        assert!(!interpreter.is_empty() && !interpreter.contains('\0'));
    }
    let _ = elf.phdr_vaddr();
    let file_len = data.len() as u64;
    for base in [0x5555_5555_4000, 0xffff_ffff_ffff_0000] {
        if let Ok(plan) = elf.load_plan(base) {
            check(&plan, file_len);
            if !elf.is_pie() {
                assert_eq!(plan.bias, 0);
            }
        }
    }
});
