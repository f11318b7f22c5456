//! Proving a system-call site rewritable (`syscall::patch`): which
//! function of an ELF file holds it (its `.eh_frame_hdr` entry), and what
//! the instruction before its `syscall` is, decoded from the function's
//! first instruction so that its bounds are known, never guessed from bytes.
//! Pure: it reads the file through [`Reader`], so it runs (and is fuzzed)
//! on the host too. Nothing here may panic on any file's bytes.

use alloc::vec::Vec;

use iced_x86::{Code, Decoder, DecoderOptions, FlowControl};

/// Longest function prefix decoded to prove a site (bytes).
pub const MAX_DECODE: u64 = 256 * 1024;

/// Reads bytes of the file.
pub trait Reader {
    /// `len` bytes at file offset `at`, all of them or an error.
    fn read(&self, at: u64, len: u64) -> Result<Vec<u8>, &'static str>;
}

/// A site proven rewritable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// The instruction just before the `syscall`: no instruction-pointer-
    /// relative operand, no branch, so it can run unchanged elsewhere (in a
    /// stub). At least 5 bytes (room for `jmp rel32`), or at least 2 (room
    /// for `jmp rel8`) when `pads` offers a way on.
    pub prev: Vec<u8>,
    /// The site's address in the file's own terms (its `p_vaddr` space).
    pub site: u64,
    /// When `prev` is shorter than 5 bytes: runs `[start, end)` (same terms)
    /// of dead padding in the function within a `jmp rel8` of `prev`'s end,
    /// where a 5-byte `jmp rel32` can go.
    pub pads: Vec<(u64, u64)>,
    /// When `prev` is shorter than 5 bytes and no padding is near: the
    /// instruction before it, at least 5 bytes and movable as `prev` is
    /// (glibc's `__lll_lock_wait`: `mov eax, 202; xor sil, 0x80; syscall`).
    /// It becomes the `jmp rel32`; the stub runs both. `prev` keeps its
    /// bytes, so a branch to it still reaches the trapping `syscall`.
    pub lead: Vec<u8>,
}

/// Proves the `syscall` at file offset `site` rewritable.
pub fn prove_site(r: &dyn Reader, site: u64) -> Result<Proof, &'static str> {
    let elf = Elf::read(r)?;
    let seg = elf.load_at_offset(site).ok_or("no segment holds it")?;
    let site_v = seg
        .vaddr
        .checked_add(site - seg.offset)
        .ok_or("address overflow")?;
    let (func, len) = elf.function_at(r, site_v)?;
    let end = func.checked_add(len).ok_or("address overflow")?;
    if site_v.checked_add(2).is_none_or(|e| e > end) || site_v - func > MAX_DECODE {
        return Err("outside its function's unwind entry");
    }
    let code = elf.read_vaddr(r, func, site_v + 2 - func)?;
    let prev_len = match prove(&code, func, site_v) {
        Ok(n) => n,
        Err(PREV_SHORT) => prove_with(&code, func, site_v, 2)?,
        Err(e) => return Err(e),
    } as usize;
    let at = code.len() - 2 - prev_len;
    let prev = code[at..at + prev_len].to_vec();
    if prev_len >= 5 {
        return Ok(Proof {
            prev,
            site: site_v,
            pads: Vec::new(),
            lead: Vec::new(),
        });
    }
    // A short instruction becomes `jmp rel8` to dead padding nearby, which
    // holds the `jmp rel32` to the stub.
    let whole = elf.read_vaddr(r, func, len.min(MAX_DECODE))?;
    let from = site_v - prev_len as u64 + 2;
    let pads: Vec<(u64, u64)> = dead_runs(&whole, func)?
        .into_iter()
        .filter_map(|(a, b)| {
            // The part of the run a `jmp rel8` from `from` reaches with all
            // 5 bytes of a `jmp rel32`.
            let lo = a.max(from.saturating_sub(128));
            let hi = b.min(from + 127 + 5);
            (hi >= lo + 5).then_some((lo, hi))
        })
        .collect();
    if pads.is_empty() {
        let lead = prove_lead(&code, func, site_v)?;
        let lead = code[at - lead as usize..at].to_vec();
        return Ok(Proof {
            prev,
            site: site_v,
            pads,
            lead,
        });
    }
    Ok(Proof {
        prev,
        site: site_v,
        pads,
        lead: Vec::new(),
    })
}

/// The length of the instruction two before the `syscall` at `site`, when
/// it is at least 5 bytes and movable (see [`Proof::lead`]).
fn prove_lead(code: &[u8], func: u64, site: u64) -> Result<u64, &'static str> {
    const NONE: &str = "the instruction before it is short and no dead padding is near";
    match before_site(code, func, site)? {
        (Some(l), p) if movable(&p) && movable(&l) && l.len() >= 5 => Ok(l.len() as u64),
        _ => Err(NONE),
    }
}

const PREV_SHORT: &str = "the instruction before it is shorter than a jump";

/// The function's dead padding: runs of `nop`/`int3` instructions that
/// follow a `ret` or an unconditional `jmp` (nothing falls into them), hold
/// no target of any branch in the function, and come before any other code.
/// Refused altogether (an error) if the function has an indirect branch,
/// whose targets cannot be known.
pub fn dead_runs(code: &[u8], func: u64) -> Result<Vec<(u64, u64)>, &'static str> {
    use iced_x86::Mnemonic;
    let mut d = Decoder::with_ip(64, code, func, DecoderOptions::NONE);
    let mut targets = Vec::new();
    let mut runs = Vec::new();
    let mut run: Option<(u64, u64)> = None;
    let mut after_exit = false;
    while d.can_decode() {
        let i = d.decode();
        if i.is_invalid() {
            break;
        }
        let pad = matches!(i.mnemonic(), Mnemonic::Nop | Mnemonic::Int3);
        match (pad, &mut run) {
            (true, Some(r)) => r.1 = i.next_ip(),
            (true, None) if after_exit => run = Some((i.ip(), i.next_ip())),
            (true, None) => {}
            (false, r) => {
                if let Some(done) = r.take() {
                    runs.push(done);
                }
            }
        }
        match i.flow_control() {
            FlowControl::IndirectBranch => return Err("an indirect branch in its function"),
            FlowControl::UnconditionalBranch
            | FlowControl::ConditionalBranch
            | FlowControl::Call => {
                targets.push(i.near_branch_target());
            }
            _ => {}
        }
        if !pad {
            after_exit = matches!(
                i.flow_control(),
                FlowControl::Return | FlowControl::UnconditionalBranch
            );
        }
    }
    // A run still open at the end may continue past what was decoded.
    Ok(runs
        .into_iter()
        .filter(|&(a, b)| !targets.iter().any(|&t| t >= a && t < b))
        .collect())
}

/// Decodes `code` (the bytes at `func`) up to the `syscall` at `site`; the
/// instruction just before it must be one that can run elsewhere unchanged
/// (no instruction-pointer-relative operand, no branch) and be at least as
/// long as a `jmp rel32`. Returns its length.
pub fn prove(code: &[u8], func: u64, site: u64) -> Result<u64, &'static str> {
    prove_with(code, func, site, 5)
}

/// [`prove`], with the instruction before at least `min_len` bytes.
fn prove_with(code: &[u8], func: u64, site: u64, min_len: usize) -> Result<u64, &'static str> {
    let (_, p) = before_site(code, func, site)?;
    if p.len() < min_len {
        return Err(PREV_SHORT);
    }
    if !movable(&p) {
        return Err("the instruction before it cannot be moved");
    }
    Ok(p.len() as u64)
}

/// Whether `i` runs unchanged at another address: no instruction-pointer-
/// relative operand, no branch, not itself a `syscall`.
fn movable(i: &iced_x86::Instruction) -> bool {
    !i.is_ip_rel_memory_operand()
        && i.flow_control() == FlowControl::Next
        && i.code() != Code::Syscall
}

/// Decodes `code` (the bytes at `func`) up to the `syscall` at `site`:
/// the two instructions before it (the first absent at the function's
/// second instruction).
fn before_site(
    code: &[u8],
    func: u64,
    site: u64,
) -> Result<(Option<iced_x86::Instruction>, iced_x86::Instruction), &'static str> {
    let mut d = Decoder::with_ip(64, code, func, DecoderOptions::NONE);
    let mut last: [Option<iced_x86::Instruction>; 2] = [None, None];
    while d.can_decode() {
        let i = d.decode();
        if i.is_invalid() {
            return Err("undecodable code before it");
        }
        if i.ip() == site {
            if i.code() != Code::Syscall {
                return Err("not a syscall instruction");
            }
            let p = last[1].ok_or("first instruction of its function")?;
            return Ok((last[0], p));
        }
        if i.ip() > site {
            return Err("the syscall is inside another instruction");
        }
        last = [last[1], Some(i)];
    }
    Err("the function ends before it")
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

fn read_exact(r: &dyn Reader, at: u64, len: u64) -> Result<Vec<u8>, &'static str> {
    if len > MAX_DECODE + 64 {
        return Err("read too large");
    }
    let b = r.read(at, len)?;
    if b.len() as u64 != len {
        return Err("short read of the file");
    }
    Ok(b)
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
    fn read(r: &dyn Reader) -> Result<Self, &'static str> {
        let h = read_exact(r, 0, 64)?;
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
        let ph = read_exact(r, phoff, phentsize * phnum)?;
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
            .and_then(|s| s.offset.checked_add(vaddr - s.vaddr))
    }

    fn read_vaddr(&self, r: &dyn Reader, vaddr: u64, len: u64) -> Result<Vec<u8>, &'static str> {
        let off = self.offset_of(vaddr).ok_or("address not in the file")?;
        read_exact(r, off, len)
    }

    /// The function (start, length) whose unwind entry covers `vaddr`.
    fn function_at(&self, r: &dyn Reader, vaddr: u64) -> Result<(u64, u64), &'static str> {
        let (hv, ho, hs) = self.eh_frame_hdr;
        let bad = "malformed .eh_frame_hdr";
        let h = read_exact(r, ho, hs.min(16))?;
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
            let at = ho.checked_add(12 + i * 8).ok_or(bad)?;
            let e = read_exact(r, at, 8)?;
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
        let len = self.fde_range(r, fde)?;
        Ok((start, len))
    }

    /// The `pc_range` of the FDE at `fde`.
    fn fde_range(&self, r: &dyn Reader, fde: u64) -> Result<u64, &'static str> {
        let bad = "malformed FDE";
        let f = self.read_vaddr(r, fde, 32)?;
        if u32_at(&f, 0).ok_or(bad)? == 0xffff_ffff {
            return Err("64-bit unwind entries are not read");
        }
        let cie_ptr = u64::from(u32_at(&f, 4).ok_or(bad)?);
        let cie = fde
            .checked_add(4)
            .and_then(|a| a.checked_sub(cie_ptr))
            .ok_or(bad)?;
        let enc = self.cie_pointer_encoding(r, cie)?;
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
    fn cie_pointer_encoding(&self, r: &dyn Reader, cie: u64) -> Result<u8, &'static str> {
        let bad = "malformed CIE";
        let c = self.read_vaddr(r, cie, 64)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    struct Bytes(Vec<u8>);

    impl Reader for Bytes {
        fn read(&self, at: u64, len: u64) -> Result<Vec<u8>, &'static str> {
            let end = at.checked_add(len).ok_or("overflow")?;
            self.0
                .get(at as usize..end as usize)
                .map(<[u8]>::to_vec)
                .ok_or("past the end")
        }
    }

    /// Every `0f 05` pair of the host's libc: the real `syscall`s among them
    /// are proven or refused, the rest refused, and nothing panics; most of
    /// glibc's sites are provable (a `mov eax, imm32` before them).
    #[test]
    fn libc_sites() {
        let path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
        let Ok(bytes) = std::fs::read(path) else {
            eprintln!("\n*** SKIPPED: no {path} ***\n");
            return;
        };
        let r = Bytes(bytes);
        let mut proven = 0;
        let mut padded = 0;
        let mut led = 0;
        for i in 0..r.0.len() - 1 {
            if r.0[i] == 0x0f
                && r.0[i + 1] == 0x05
                && let Ok(p) = prove_site(&r, i as u64)
            {
                assert!((2..=15).contains(&p.prev.len()));
                assert!(p.prev.len() >= 5 || !p.pads.is_empty() || p.lead.len() >= 5);
                assert!(p.lead.is_empty() || (p.pads.is_empty() && p.prev.len() < 5));
                proven += 1;
                if !p.pads.is_empty() {
                    padded += 1;
                }
                if !p.lead.is_empty() {
                    led += 1;
                }
            }
        }
        assert!(proven > 300, "only {proven} sites proven in {path}");
        assert!(
            padded > 10,
            "only {padded} sites reach dead padding in {path}"
        );
        assert!(led > 0, "no site moves two instructions in {path}");
        eprintln!(
            "{path}: {proven} sites proven, {padded} through padding, {led} moving two instructions"
        );
    }

    #[test]
    fn dead_padding_is_only_what_nothing_reaches() {
        // je +3; xor eax,eax; syscall; ret; nop*5; (the je's target) ret
        let code = [
            0x74, 0x0a, 0x31, 0xc0, 0x0f, 0x05, 0xc3, 0x90, 0x90, 0x90, 0x90, 0x90, 0xc3,
        ];
        assert_eq!(dead_runs(&code, 0x100), Ok(vec![(0x107, 0x10c)]));
        // The same with the je aimed into the padding: nothing is dead.
        let mut c2 = code;
        c2[1] = 0x06;
        assert_eq!(dead_runs(&c2, 0x100), Ok(vec![]));
        // Padding reached by falling through is not dead.
        let c3 = [0x31, 0xc0, 0x90, 0x90, 0x90, 0x90, 0x90, 0xc3];
        assert_eq!(dead_runs(&c3, 0), Ok(vec![]));
        // An indirect jump anywhere: refused.
        let c4 = [0xff, 0xe0, 0x90, 0x90, 0x90, 0x90, 0x90, 0xc3];
        assert!(dead_runs(&c4, 0).is_err());
    }

    #[test]
    fn garbage_is_refused() {
        assert!(prove_site(&Bytes(vec![]), 0).is_err());
        assert!(prove_site(&Bytes(b"\x7fELF\x02\x01".to_vec()), 3).is_err());
        let mut b = vec![0u8; 4096];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        assert!(prove_site(&Bytes(b), 100).is_err());
    }

    #[test]
    fn the_instruction_before_must_be_movable() {
        // mov eax, 39; syscall
        assert_eq!(
            prove(&[0xb8, 39, 0, 0, 0, 0x0f, 0x05], 0x1000, 0x1005),
            Ok(5)
        );
        // mov r9, [rsp + 8]; syscall
        assert_eq!(
            prove(&[0x4c, 0x8b, 0x4c, 0x24, 0x08, 0x0f, 0x05], 0, 5),
            Ok(5)
        );
        // xor eax, eax; syscall: too short
        assert!(prove(&[0x31, 0xc0, 0x0f, 0x05], 0, 2).is_err());
        // mov eax, [rip + 0x10]; syscall: instruction-pointer-relative
        assert!(prove(&[0x8b, 0x05, 0x10, 0, 0, 0, 0x0f, 0x05], 0, 6).is_err());
        // the "syscall" is the tail of mov eax, 0x050f0000
        assert!(prove(&[0xb8, 0, 0, 0x0f, 0x05], 0, 3).is_err());
        // a call before it
        assert!(prove(&[0xe8, 0, 0, 0, 0, 0x0f, 0x05], 0, 5).is_err());
    }

    #[test]
    fn two_instructions_move_when_the_first_is_long() {
        // mov eax, 202; xor sil, 0x80; syscall (glibc's __lll_lock_wait)
        let code = [0xb8, 0xca, 0, 0, 0, 0x40, 0x80, 0xf6, 0x80, 0x0f, 0x05];
        assert_eq!(prove_lead(&code, 0x100, 0x109), Ok(5));
        // xor edx, edx; xor sil, 0x80; syscall: both short
        let code = [0x31, 0xd2, 0x40, 0x80, 0xf6, 0x80, 0x0f, 0x05];
        assert!(prove_lead(&code, 0, 6).is_err());
        // mov eax, [rip + 0x10]; xor sil, 0x80; syscall: the first is relative
        let code = [
            0x8b, 0x05, 0x10, 0, 0, 0, 0x40, 0x80, 0xf6, 0x80, 0x0f, 0x05,
        ];
        assert!(prove_lead(&code, 0, 10).is_err());
        // mov eax, 202; jmp +0; syscall: the second is a branch
        let code = [0xb8, 0xca, 0, 0, 0, 0xeb, 0x00, 0x0f, 0x05];
        assert!(prove_lead(&code, 0, 7).is_err());
    }
}
