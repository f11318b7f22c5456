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
//! per-site stub (the rest of it `int3`); an instruction of 2 to 4 bytes
//! becomes `jmp rel8` to a `jmp rel32` placed in dead padding of the same
//! function (alignment `nop`s after a `ret` or `jmp` that no branch
//! targets, in a function without indirect branches), as `read`'s
//! `xor eax, eax` needs; without such padding, when the instruction
//! before the short one is itself movable and at least 5 bytes long, both
//! move into the stub and only that first one becomes the `jmp rel32`
//! (the short one keeps its bytes). The `syscall` after it stays, so
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

use crate::fd::File;
use crate::linux::unwind;
use crate::sync::IrqLock;

/// Bytes per stub slot.
const SLOT: u64 = 48;
/// Bytes per stub region (its first slot holds the direct entry's address).
const REGION: u64 = 64 * 1024;
/// How far a `jmp rel32` reaches, with room for the region itself.
const REACH: u64 = (1 << 31) - 2 * REGION;

struct Sites {
    /// Sites already looked at, rewritten or not.
    tried: BTreeSet<u64>,
    /// Stub regions: (start, bytes used).
    regions: Vec<(u64, u64)>,
    /// Starts of the 5-byte trampolines placed in dead padding.
    pads_used: BTreeSet<u64>,
    patched: u64,
    refused: u64,
}

static SITES: IrqLock<Sites> = IrqLock::new(Sites {
    tried: BTreeSet::new(),
    regions: Vec::new(),
    pads_used: BTreeSet::new(),
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
    let reader = FileReader(&file);
    let proof = unwind::prove_site(&reader, offset + (site - start))?;
    // What the stub runs before its entry: the instruction before the
    // `syscall`, and the one before that when it takes the jump.
    let moved = [&proof.lead[..], &proof.prev[..]].concat();
    let moved_len = moved.len() as u64;
    let prev_len = proof.prev.len() as u64;
    let prev = site
        .checked_sub(moved_len)
        .filter(|&p| p >= start)
        .ok_or("crosses the mapping's edge")?;
    // The program's code must still be the file's.
    let now = crate::mm::user::read_vec(prev, moved_len + 2).map_err(|_| "unreadable")?;
    if now[..moved_len as usize] != moved[..] || now[moved_len as usize..] != [0x0f, 0x05] {
        return Err("the code in memory differs from the file");
    }
    let stub = alloc_slot(site)?;
    let bytes = stub_bytes(stub, &moved, site).ok_or("stub out of reach")?;
    crate::mm::user::load(stub, &bytes).map_err(|_| "cannot write the stub")?;
    let mut jmp = [0xccu8; 15];
    // Only the first moved instruction changes (`lead`'s successor keeps
    // its bytes, whole instructions either way).
    let jmp_len = if proof.lead.is_empty() {
        prev_len
    } else {
        proof.lead.len() as u64
    };
    if jmp_len >= 5 {
        let rel = rel32(prev + 5, stub).ok_or("stub out of reach")?;
        jmp[0] = 0xe9;
        jmp[1..5].copy_from_slice(&rel.to_le_bytes());
    } else {
        // `jmp rel8` to a trampoline in dead padding, `jmp rel32` on from
        // there. The trampoline is written first: nothing runs it before
        // the site jumps to it.
        let bias = site.wrapping_sub(proof.site);
        // In the site's own page: a discarded private copy (MADV_DONTNEED)
        // then reverts the jump and its trampoline together.
        let page = prev & !0xfff;
        if (site + 1) & !0xfff != page {
            return Err("a short instruction across a page edge");
        }
        let t = take_pad(&proof.pads, bias, page.max(start), (page + 0x1000).min(end))?;
        let rel = rel32(t + 5, stub).ok_or("stub out of reach")?;
        let mut tramp = [0xe9u8, 0, 0, 0, 0];
        tramp[1..].copy_from_slice(&rel.to_le_bytes());
        crate::mm::vma::patch_text(t, &tramp).map_err(|_| "cannot write the trampoline")?;
        let rel8 =
            i8::try_from(t.wrapping_sub(prev + 2) as i64).map_err(|_| "padding out of reach")?;
        jmp[0] = 0xeb;
        jmp[1] = rel8 as u8;
    }
    crate::mm::vma::patch_text(prev, &jmp[..jmp_len as usize])
        .map_err(|_| "cannot write the site")?;
    Ok(stub)
}

/// A free 5-byte window in the proven padding runs (file addresses, moved
/// by `bias` into this mapping) within `[start, end)`, marked used.
fn take_pad(pads: &[(u64, u64)], bias: u64, start: u64, end: u64) -> Result<u64, &'static str> {
    let mut s = SITES.lock();
    for &(a, b) in pads {
        let (a, b) = (a.wrapping_add(bias), b.wrapping_add(bias));
        let mut t = a;
        while t + 5 <= b {
            let clash = s
                .pads_used
                .range(t.saturating_sub(4)..t + 5)
                .next()
                .is_some();
            if !clash && t >= start && t + 5 <= end {
                s.pads_used.insert(t);
                return Ok(t);
            }
            t += 1;
        }
    }
    Err("no free dead padding in its page")
}

/// Reads a mapped file for `unwind` (through the file cache).
struct FileReader<'a>(&'a Arc<File>);

impl unwind::Reader for FileReader<'_> {
    fn read(&self, at: u64, len: u64) -> Result<Vec<u8>, &'static str> {
        if len > 1 << 20 {
            return Err("read too large");
        }
        let mut buf = vec![0u8; len as usize];
        let mut got = 0usize;
        while got < buf.len() {
            match super::read::pread_kernel(self.0, at + got as u64, &mut buf[got..]) {
                Ok(0) | Err(_) => return Err("short read of the file"),
                Ok(n) => got += n,
            }
        }
        Ok(buf)
    }
}

fn rel32(from: u64, to: u64) -> Option<i32> {
    i32::try_from(to.wrapping_sub(from) as i64).ok()
}

/// The stub at `stub` for the site whose preceding instructions are `prev`.
fn stub_bytes(stub: u64, prev: &[u8], site: u64) -> Option<[u8; SLOT as usize]> {
    let region = stub & !(REGION - 1);
    let mut b = [0xccu8; SLOT as usize];
    let l = prev.len();
    if l + 20 > SLOT as usize {
        return None;
    }
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
