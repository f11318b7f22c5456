//! Rewriting system-call sites for direct entry (`--syscall-entry direct`,
//! see `arch::x86_64::direct` and `docs/syscall-entry.md`).
//!
//! A site is rewritten the first time it traps, in a private, read-only,
//! executable file mapping, when the instruction before its `syscall` is
//! proven movable: the function containing the site is found in the file's
//! `.eh_frame_hdr` and decoded from its first instruction, so that
//! instruction's bounds are known (never guessed from bytes), and it must
//! be at least 5 bytes long, with no instruction-pointer-relative operand
//! and no branch (glibc's `mov eax, imm32` before nearly every `syscall`,
//! or `mov r9, [rsp + 8]` in `syscall()`). It becomes `jmp rel32` to a
//! per-site stub (the rest of it `int3`); the `syscall` after it stays, so
//! code that jumps straight to it still traps as before, and no saved
//! instruction pointer can be inside a changed instruction. The stub:
//!
//! ```text
//!   <the moved instruction>
//!   lea  r11, [rip + 8]      ; where a served call goes on (after `syscall`)
//!   jmp  [region header]     ; the direct entry
//!   syscall                  ; a declined call traps here, as at the site
//!   jmp  site + 2
//! ```
//!
//! Nothing touches the program's stack; rcx and r11 are clobbered as by
//! `syscall`. Sites that cannot be proven keep trapping and keep working.

use alloc::collections::BTreeSet;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use iced_x86::{Code, Decoder, DecoderOptions};

use crate::fd::File;
use crate::sync::IrqLock;

/// Bytes per stub slot.
const SLOT: u64 = 48;
/// Bytes per stub region (its first slot holds the direct entry's address).
const REGION: u64 = 64 * 1024;
/// How far a `jmp rel32` reaches, with room for the region itself.
const REACH: u64 = (1 << 31) - 2 * REGION;
/// Longest function prefix decoded to prove a site (bytes).
const MAX_DECODE: u64 = 256 * 1024;

struct Sites {
    /// Sites already looked at, rewritten or not.
    tried: BTreeSet<u64>,
    /// Stub regions: (start, bytes used).
    regions: Vec<(u64, u64)>,
    patched: u64,
    refused: u64,
}

static SITES: IrqLock<Sites> = IrqLock::new(Sites {
    tried: BTreeSet::new(),
    regions: Vec::new(),
    patched: 0,
    refused: 0,
});

/// (sites rewritten, sites left trapping) so far.
pub fn stats() -> (u64, u64) {
    let s = SITES.lock();
    (s.patched, s.refused)
}

/// Called on a trapped system call from the program: the `syscall` at
/// `site` with number `nr` in rax. Rewrites the site if it can (once).
pub fn on_trap(site: u64, nr: u64) {
    if !crate::arch::direct::enabled() {
        return;
    }
    if !SITES.lock().tried.insert(site) {
        return;
    }
    let r = rewrite(site);
    let mut s = SITES.lock();
    match r {
        Ok(stub) => {
            s.patched += 1;
            drop(s);
            log::debug!("system call {nr} at {site:#x}: rewritten, stub at {stub:#x}");
        }
        Err(why) => {
            s.refused += 1;
            drop(s);
            log::debug!("system call {nr} at {site:#x}: keeps trapping ({why})");
        }
    }
}

fn rewrite(site: u64) -> Result<u64, &'static str> {
    let (file, start, end, offset) =
        crate::mm::vma::text_area(site).ok_or("not in a private read-only file mapping")?;
    if site + 2 > end {
        return Err("crosses the mapping's edge");
    }
    let elf = Elf::read(&file)?;
    let site_off = offset + (site - start);
    let seg = elf.load_at_offset(site_off).ok_or("no segment holds it")?;
    let bias = site.wrapping_sub(seg.vaddr + (site_off - seg.offset));
    let site_v = site - bias;
    let (func, len) = elf.function_at(&file, site_v)?;
    if site_v + 2 > func + len || site_v - func > MAX_DECODE {
        return Err("outside its function's unwind entry");
    }
    let code = elf.read_vaddr(&file, func, site_v + 2 - func)?;
    let prev_len = prove(&code, func, site_v)?;
    let prev = site - prev_len;
    if prev < start {
        return Err("crosses the mapping's edge");
    }
    // The program's code must still be the file's.
    let tail = &code[code.len() - prev_len as usize - 2..];
    let now = crate::mm::user::slice(prev, prev_len + 2).map_err(|_| "unreadable")?;
    if now != tail {
        return Err("the code in memory differs from the file");
    }
    let stub = alloc_slot(site)?;
    let bytes = stub_bytes(stub, &tail[..prev_len as usize], site).ok_or("stub out of reach")?;
    crate::mm::user::load(stub, &bytes).map_err(|_| "cannot write the stub")?;
    let rel = rel32(prev + 5, stub).ok_or("stub out of reach")?;
    let mut jmp = [0xccu8; 15];
    jmp[0] = 0xe9;
    jmp[1..5].copy_from_slice(&rel.to_le_bytes());
    crate::mm::vma::patch_text(prev, &jmp[..prev_len as usize])
        .map_err(|_| "cannot write the site")?;
    Ok(stub)
}

/// Decodes `code` (the bytes at `func`) up to the `syscall` at `site`; the
/// instruction just before it must be one that can run elsewhere unchanged
/// (no instruction-pointer-relative operand, no branch) and be at least as
/// long as a `jmp rel32`. Returns its length.
fn prove(code: &[u8], func: u64, site: u64) -> Result<u64, &'static str> {
    use iced_x86::FlowControl;
    let mut d = Decoder::with_ip(64, code, func, DecoderOptions::NONE);
    let mut prev: Option<iced_x86::Instruction> = None;
    while d.can_decode() {
        let i = d.decode();
        if i.is_invalid() {
            return Err("undecodable code before it");
        }
        if i.ip() == site {
            if i.code() != Code::Syscall {
                return Err("not a syscall instruction");
            }
            let p = prev.ok_or("first instruction of its function")?;
            if p.len() < 5 {
                return Err("the instruction before it is shorter than a jump");
            }
            if p.is_ip_rel_memory_operand()
                || p.flow_control() != FlowControl::Next
                || p.code() == Code::Syscall
            {
                return Err("the instruction before it cannot be moved");
            }
            return Ok(p.len() as u64);
        }
        if i.ip() > site {
            return Err("the syscall is inside another instruction");
        }
        prev = Some(i);
    }
    Err("the function ends before it")
}

fn rel32(from: u64, to: u64) -> Option<i32> {
    i32::try_from(to.wrapping_sub(from) as i64).ok()
}

/// The stub at `stub` for the site whose preceding instruction is `prev`.
fn stub_bytes(stub: u64, prev: &[u8], site: u64) -> Option<[u8; SLOT as usize]> {
    let region = stub & !(REGION - 1);
    let mut b = [0xccu8; SLOT as usize];
    let l = prev.len();
    b[..l].copy_from_slice(prev);
    let at = stub + l as u64;
    // lea r11, [rip + 8]: the continuation, after the `syscall` below.
    b[l..l + 7].copy_from_slice(&[0x4c, 0x8d, 0x1d, 8, 0, 0, 0]);
    // jmp [rip + disp32]: through the region's header word.
    b[l + 7] = 0xff;
    b[l + 8] = 0x25;
    let disp = rel32(at + 13, region)?;
    b[l + 9..l + 13].copy_from_slice(&disp.to_le_bytes());
    b[l + 13] = 0x0f;
    b[l + 14] = 0x05;
    b[l + 15] = 0xe9;
    let back = rel32(at + 20, site + 2)?;
    b[l + 16..l + 20].copy_from_slice(&back.to_le_bytes());
    Some(b)
}

/// A free stub slot within reach of `site` (a new region if needed).
fn alloc_slot(site: u64) -> Result<u64, &'static str> {
    {
        let mut s = SITES.lock();
        for r in s.regions.iter_mut() {
            let at = r.0 + r.1;
            if r.1 + SLOT <= REGION && rel32(site, at).is_some() && rel32(at + SLOT, site).is_some()
            {
                r.1 += SLOT;
                return Ok(at);
            }
        }
    }
    use crate::mm::vma::{PROT_EXEC, PROT_READ};
    // Regions are aligned to their size, so a stub finds its header.
    let raw = crate::mm::vma::map_near(
        site,
        REACH,
        2 * REGION,
        PROT_READ | PROT_EXEC,
        "[astraea-stubs]",
    )
    .map_err(|_| "no room for stubs within 2 GiB")?;
    let region = raw.next_multiple_of(REGION);
    let _ = crate::mm::vma::unmap(raw, region - raw);
    let _ = crate::mm::vma::unmap(region + REGION, raw + 2 * REGION - (region + REGION));
    let entry = crate::arch::direct::entry_address().to_le_bytes();
    crate::mm::user::load(region, &entry).map_err(|_| "cannot write the stub region")?;
    let mut s = SITES.lock();
    s.regions.push((region, 2 * SLOT));
    Ok(region + SLOT)
}

/// The parts of an ELF file needed to find a function.
struct Elf {
    loads: Vec<Segment>,
    /// (vaddr, file offset, size) of `.eh_frame_hdr`.
    eh_frame_hdr: (u64, u64, u64),
}

#[derive(Clone, Copy)]
struct Segment {
    vaddr: u64,
    offset: u64,
    filesz: u64,
}

fn read_exact(file: &Arc<File>, at: u64, len: u64) -> Result<Vec<u8>, &'static str> {
    let mut buf = vec![0u8; len as usize];
    let mut got = 0usize;
    while got < buf.len() {
        match super::read::pread_kernel(file, at + got as u64, &mut buf[got..]) {
            Ok(0) | Err(_) => return Err("short read of the file"),
            Ok(n) => got += n,
        }
    }
    Ok(buf)
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl Elf {
    fn read(file: &Arc<File>) -> Result<Self, &'static str> {
        let h = read_exact(file, 0, 64)?;
        if h[..4] != *b"\x7fELF" || h[4] != 2 || h[5] != 1 {
            return Err("not a 64-bit little-endian ELF file");
        }
        let bad = "malformed ELF header";
        let phoff = u64_at(&h, 32).ok_or(bad)?;
        let phentsize = u64::from(u16_at(&h, 54).ok_or(bad)?);
        let phnum = u64::from(u16_at(&h, 56).ok_or(bad)?);
        if phentsize < 56 || phnum > 128 {
            return Err(bad);
        }
        let ph = read_exact(file, phoff, phentsize * phnum)?;
        let mut loads = Vec::new();
        let mut hdr = None;
        for i in 0..phnum as usize {
            let p = &ph[i * phentsize as usize..];
            let kind = u32_at(p, 0).ok_or(bad)?;
            let seg = Segment {
                offset: u64_at(p, 8).ok_or(bad)?,
                vaddr: u64_at(p, 16).ok_or(bad)?,
                filesz: u64_at(p, 32).ok_or(bad)?,
            };
            match kind {
                1 => loads.push(seg),
                0x6474_e550 => hdr = Some((seg.vaddr, seg.offset, seg.filesz)),
                _ => {}
            }
        }
        Ok(Self {
            loads,
            eh_frame_hdr: hdr.ok_or("no .eh_frame_hdr")?,
        })
    }

    fn load_at_offset(&self, off: u64) -> Option<Segment> {
        self.loads
            .iter()
            .copied()
            .find(|s| off >= s.offset && off - s.offset < s.filesz)
    }

    fn offset_of(&self, vaddr: u64) -> Option<u64> {
        self.loads
            .iter()
            .find(|s| vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz)
            .map(|s| s.offset + (vaddr - s.vaddr))
    }

    fn read_vaddr(&self, file: &Arc<File>, vaddr: u64, len: u64) -> Result<Vec<u8>, &'static str> {
        let off = self.offset_of(vaddr).ok_or("address not in the file")?;
        read_exact(file, off, len)
    }

    /// The function (start, length) whose unwind entry covers `vaddr`.
    fn function_at(&self, file: &Arc<File>, vaddr: u64) -> Result<(u64, u64), &'static str> {
        let (hv, ho, hs) = self.eh_frame_hdr;
        let bad = "malformed .eh_frame_hdr";
        let h = read_exact(file, ho, hs.min(16))?;
        // version 1; eh_frame_ptr any 4-byte encoding; count udata4; table
        // datarel|sdata4 (what every linker writes).
        if h.len() < 12
            || h[0] != 1
            || h[1] & 0x0f != 0x0b && h[1] & 0x0f != 0x03
            || h[2] != 0x03
            || h[3] != 0x3b
        {
            return Err("unsupported .eh_frame_hdr encoding");
        }
        let count = u64::from(u32_at(&h, 8).ok_or(bad)?);
        if 12 + count * 8 > hs {
            return Err(bad);
        }
        let entry = |i: u64| -> Result<(u64, u64), &'static str> {
            let e = read_exact(file, ho + 12 + i * 8, 8)?;
            let loc = hv.wrapping_add(u32_at(&e, 0).ok_or(bad)? as i32 as i64 as u64);
            let fde = hv.wrapping_add(u32_at(&e, 4).ok_or(bad)? as i32 as i64 as u64);
            Ok((loc, fde))
        };
        // The last entry starting at or below `vaddr`.
        let (mut lo, mut hi) = (0u64, count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if entry(mid)?.0 <= vaddr {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            return Err("no unwind entry covers it");
        }
        let (start, fde) = entry(lo - 1)?;
        let len = self.fde_range(file, fde)?;
        Ok((start, len))
    }

    /// The `pc_range` of the FDE at `fde`.
    fn fde_range(&self, file: &Arc<File>, fde: u64) -> Result<u64, &'static str> {
        let bad = "malformed FDE";
        let f = self.read_vaddr(file, fde, 32)?;
        if u32_at(&f, 0).ok_or(bad)? == 0xffff_ffff {
            return Err("64-bit unwind entries are not read");
        }
        let cie_ptr = u64::from(u32_at(&f, 4).ok_or(bad)?);
        let cie = (fde + 4).checked_sub(cie_ptr).ok_or(bad)?;
        let enc = self.cie_pointer_encoding(file, cie)?;
        let size = match enc & 0x0f {
            0x02 | 0x0a => 2,
            0x03 | 0x0b => 4,
            0x00 | 0x04 | 0x0c => 8,
            _ => return Err("unsupported pointer encoding"),
        };
        let at = 8 + size;
        Ok(match size {
            2 => u64::from(u16_at(&f, at).ok_or(bad)?),
            4 => u64::from(u32_at(&f, at).ok_or(bad)?),
            _ => u64_at(&f, at).ok_or(bad)?,
        })
    }

    /// The FDE pointer encoding a CIE's augmentation gives ('R').
    fn cie_pointer_encoding(&self, file: &Arc<File>, cie: u64) -> Result<u8, &'static str> {
        let bad = "malformed CIE";
        let c = self.read_vaddr(file, cie, 64)?;
        if u32_at(&c, 4).ok_or(bad)? != 0 {
            return Err(bad);
        }
        let version = *c.get(8).ok_or(bad)?;
        let mut i = 9;
        let aug_start = i;
        while *c.get(i).ok_or(bad)? != 0 {
            i += 1;
        }
        let aug = &c[aug_start..i];
        i += 1;
        let uleb = |i: &mut usize| -> Result<u64, &'static str> {
            let mut v = 0u64;
            let mut shift = 0;
            loop {
                let b = *c.get(*i).ok_or(bad)?;
                *i += 1;
                v |= u64::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    return Ok(v);
                }
                shift += 7;
                if shift > 63 {
                    return Err(bad);
                }
            }
        };
        uleb(&mut i)?; // code alignment
        uleb(&mut i)?; // data alignment (sleb: only skipped)
        if version == 1 {
            i += 1;
        } else {
            uleb(&mut i)?;
        }
        if aug.first() != Some(&b'z') {
            return Ok(0); // absolute pointers
        }
        uleb(&mut i)?; // augmentation data length
        for &ch in &aug[1..] {
            match ch {
                b'R' => return c.get(i).copied().ok_or(bad),
                b'L' => i += 1,
                b'P' => {
                    let penc = *c.get(i).ok_or(bad)?;
                    i += 1 + match penc & 0x0f {
                        0x02 | 0x0a => 2,
                        0x03 | 0x0b => 4,
                        _ => 8,
                    };
                }
                b'S' | b'B' => {}
                _ => return Err("unknown CIE augmentation"),
            }
        }
        Ok(0)
    }
}
