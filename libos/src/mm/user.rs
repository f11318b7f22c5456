//! User memory: the lower half of the one address space, where the program
//! lives (the kernel is in the upper half).

use super::frame::PAGE_SIZE;
use super::kernel::translate;
use super::phys_to_virt;
use crate::errno::Errno;

/// Lowest user address (Linux's default `vm.mmap_min_addr`).
pub const USER_MIN: u64 = 0x1_0000;
/// One past the highest user address (the canonical lower half, minus a page).
pub const USER_MAX: u64 = 0x7fff_ffff_f000;

/// Checks that `[addr, addr+len)` lies in user space.
pub fn check_range(addr: u64, len: u64) -> Result<(), Errno> {
    let end = addr.checked_add(len).ok_or(Errno::EFAULT)?;
    if addr < USER_MIN || end > USER_MAX {
        return Err(Errno::EFAULT);
    }
    Ok(())
}

/// Checks that the program could read `[addr, addr+len)` itself, faulting
/// its pages in; reads nothing (`EFAULT` where it could not).
pub fn check_readable(addr: u64, len: u64) -> Result<(), Errno> {
    check_range(addr, len)?;
    super::vma::ensure(addr, len, false)
}

/// Copies the program's `N` bytes at `addr` (a struct an argument points
/// to): `EFAULT` if any of them is in a page the program may not read,
/// also when another thread unmaps it meanwhile.
pub fn read_array<const N: usize>(addr: u64) -> Result<[u8; N], Errno> {
    check_range(addr, N as u64)?;
    let mut out = [0u8; N];
    // SAFETY: `out` has room for `N` bytes; the range was checked.
    match unsafe { copy_prefix(out.as_mut_ptr(), addr, N) } {
        n if n == N => Ok(out),
        _ => Err(Errno::EFAULT),
    }
}

/// The program's byte at `addr` (strings read up to their NUL).
pub fn read_byte(addr: u64) -> Result<u8, Errno> {
    read_array::<1>(addr).map(|[b]| b)
}

/// The program's NUL-terminated string at `addr` (a path, a name), read a
/// page at a time as Linux's `strncpy_from_user`: its bytes without the
/// NUL, at most `max`, and whether the NUL came within them. `EFAULT` only
/// where a byte before the NUL cannot be read.
pub fn read_cstr(addr: u64, max: usize) -> Result<(alloc::vec::Vec<u8>, bool), Errno> {
    let mut out = alloc::vec::Vec::new();
    let mut at = addr;
    while out.len() < max {
        let n = (PAGE_SIZE as u64 - at % PAGE_SIZE as u64).min((max - out.len()) as u64);
        let start = out.len();
        // A hole is an error only if no NUL came before it.
        let whole = read_append(&mut out, at, n).is_ok();
        if let Some(i) = out[start..].iter().position(|&b| b == 0) {
            out.truncate(start + i);
            return Ok((out, true));
        }
        if !whole {
            return Err(Errno::EFAULT);
        }
        at += n;
    }
    Ok((out, false))
}

/// Copies the program's `len` bytes at `addr` (an array of a length the
/// program gave): `EFAULT` as [`read_array`].
pub fn read_vec(addr: u64, len: u64) -> Result<alloc::vec::Vec<u8>, Errno> {
    // First, so that an absurd length fails before anything is allocated.
    check_readable(addr, len)?;
    let mut v = alloc::vec::Vec::new();
    read_append(&mut v, addr, len).map_err(|(_, e)| e)?;
    Ok(v)
}

/// Copies the program's `len` bytes at `addr` to `dst`: how many came
/// before a hole (a page the program may not read), `len` without one.
/// Safe against the pages going meanwhile (another thread's `munmap` while
/// the call waits or is preempted): a fault on the way ends the copy.
///
/// # Safety
/// `dst` is valid kernel memory for `len` bytes; `[addr, addr+len)` lies in
/// user space ([`check_range`]).
unsafe fn copy_prefix(dst: *mut u8, addr: u64, len: usize) -> usize {
    let mut done = 0;
    // A page is brought in by the fault itself (`trap::kernel_user_fault`)
    // when interrupts are on; otherwise here, before copying again. A page
    // that keeps going between the two is reported as a hole.
    for _ in 0..8 {
        // SAFETY: the caller's contract; a fault in the user range ends
        // the copy early instead of faulting in the kernel.
        let left = unsafe {
            crate::arch::user::copy_user(
                dst.add(done),
                (addr + done as u64) as *const u8,
                len - done,
            )
        };
        done = len - left;
        if left == 0 || super::vma::ensure(addr + done as u64, 1, false).is_err() {
            return done;
        }
    }
    done
}

/// Appends the program's bytes at `[addr, addr+len)` to `v` (see
/// [`copy_prefix`]); at a hole, `v` keeps the bytes before it and the error
/// says how many: `Err((n, EFAULT))` with `n` appended.
pub fn read_append(v: &mut alloc::vec::Vec<u8>, addr: u64, len: u64) -> Result<(), (usize, Errno)> {
    check_range(addr, len).map_err(|e| (0, e))?;
    let len = len as usize;
    v.reserve(len);
    let at = v.len();
    // SAFETY: `reserve` made room for `len` more bytes past `at`; the range
    // was checked. No zeroing first: a bulk send copies each byte once.
    let n = unsafe { copy_prefix(v.as_mut_ptr().add(at), addr, len) };
    // SAFETY: `copy_prefix` initialised exactly `n` bytes past `at`.
    unsafe { v.set_len(at + n) };
    if n == len {
        Ok(())
    } else {
        Err((n, Errno::EFAULT))
    }
}

/// Copies `bytes` to the program's memory at `addr`, as a write by the
/// program would (`EFAULT` where it may not write).
pub fn copy_in(addr: u64, bytes: &[u8]) -> Result<(), Errno> {
    check_range(addr, bytes.len() as u64)?;
    super::vma::ensure(addr, bytes.len() as u64, true)?;
    poke(addr, bytes)
}

/// Copies `bytes` to the program's memory at `addr` up to the first page
/// it may not write, as Linux's reads do: how many bytes went; `EFAULT`
/// when none could.
pub fn copy_in_prefix(addr: u64, bytes: &[u8]) -> Result<usize, Errno> {
    check_range(addr, bytes.len() as u64)?;
    let room = writable_prefix(&[(addr, bytes.len() as u64)], bytes.len() as u64) as usize;
    if room == 0 && !bytes.is_empty() {
        return Err(Errno::EFAULT);
    }
    poke(addr, &bytes[..room])?;
    Ok(room)
}

/// How many bytes of `pieces` (address, length) lie before the first page
/// the program may not write, counted up to `limit` (the pages faulted in
/// on the way, no further).
pub fn writable_prefix(pieces: &[(u64, u64)], limit: u64) -> u64 {
    let mut total = 0;
    for &(addr, len) in pieces {
        if total >= limit {
            break;
        }
        let len = len.min(limit - total);
        if check_range(addr, len).is_err() {
            return total;
        }
        let mut done = 0;
        while done < len {
            let va = addr + done;
            let n = (PAGE_SIZE as u64 - va % PAGE_SIZE as u64).min(len - done);
            if super::vma::ensure(va, n, true).is_err() {
                return total + done;
            }
            done += n;
        }
        total += len;
    }
    total
}

/// Fills the program's memory at `addr` with `bytes` whatever its
/// protection (the ELF loader fills read-only segments this way).
pub fn load(addr: u64, bytes: &[u8]) -> Result<(), Errno> {
    check_range(addr, bytes.len() as u64)?;
    super::vma::ensure(addr, bytes.len() as u64, false)?;
    poke(addr, bytes)
}

/// Writes `bytes` at `addr` of pages the program has mapped and present
/// (its vDSO's clock page), whatever their protection, without taking the
/// address space's locks: for a restored partition before its threads run.
pub fn rewrite(addr: u64, bytes: &[u8]) -> Result<(), Errno> {
    check_range(addr, bytes.len() as u64)?;
    poke(addr, bytes)
}

/// Writes through the direct map to present user pages.
fn poke(addr: u64, bytes: &[u8]) -> Result<(), Errno> {
    let mut done = 0usize;
    while done < bytes.len() {
        let va = addr + done as u64;
        let in_page = PAGE_SIZE - (va as usize % PAGE_SIZE);
        let n = in_page.min(bytes.len() - done);
        // Interrupts off from the lookup to the copy: no other thread can
        // unmap the page and free its frame in between.
        let irq = crate::arch::cpu::irq_save();
        let Some(t) = translate(va) else {
            crate::arch::cpu::irq_restore(irq);
            return Err(Errno::EFAULT);
        };
        let dst = phys_to_virt(t.pa) as *mut u8;
        // SAFETY: `t.pa` is the frame behind a mapped user page (it stays,
        // interrupts off); the kernel reaches it through the direct map;
        // `n` stays inside that page.
        unsafe { core::ptr::copy_nonoverlapping(bytes[done..].as_ptr(), dst, n) };
        crate::arch::cpu::irq_restore(irq);
        done += n;
    }
    Ok(())
}

/// Whether every page of `[addr, addr+len)` is mapped for the program now
/// with a mapping `ok` accepts.
fn every_page(addr: u64, len: u64, ok: impl Fn(super::paging::PteFlags) -> bool) -> bool {
    if check_range(addr, len).is_err() {
        return false;
    }
    let mut page = addr & !(PAGE_SIZE as u64 - 1);
    while page < addr + len {
        if !translate(page).is_some_and(|t| ok(t.flags)) {
            return false;
        }
        page += PAGE_SIZE as u64;
    }
    true
}

/// Whether every page of `[addr, addr+len)` is present and writable by the
/// program now (a private page, not one borrowed from the file cache), so
/// that a write there cannot fault. The caller keeps interrupts off for as
/// long as it relies on the answer (no other thread may unmap meanwhile).
pub fn present_writable(addr: u64, len: u64) -> bool {
    use super::paging::PteFlags;
    every_page(addr, len, |f| {
        f.contains(PteFlags::USER | PteFlags::WRITABLE) && !f.contains(PteFlags::BORROWED)
    })
}

/// Whether every page of `[addr, addr+len)` is present for the program now
/// (readable without a fault). As for [`present_writable`], the caller
/// keeps interrupts off while it relies on the answer.
pub fn present_readable(addr: u64, len: u64) -> bool {
    every_page(addr, len, |f| f.contains(super::paging::PteFlags::USER))
}

/// How many bytes from `addr` (up to `len`) lie in pages that are present
/// and writable now ([`present_writable`] page by page).
pub fn present_writable_prefix(addr: u64, len: u64) -> u64 {
    let mut done = 0;
    while done < len {
        let at = addr + done;
        let n = (PAGE_SIZE as u64 - at % PAGE_SIZE as u64).min(len - done);
        if !present_writable(at, n) {
            break;
        }
        done += n;
    }
    done
}

/// The 4-byte-aligned word at `addr` if its page is present for the program
/// now, read without faulting. The caller keeps interrupts off.
pub fn present_word(addr: u64) -> Option<u32> {
    check_range(addr, 4).ok()?;
    if !addr.is_multiple_of(4) {
        return None;
    }
    let t = translate(addr)?;
    if !t.flags.contains(super::paging::PteFlags::USER) {
        return None;
    }
    // SAFETY: a present user page (interrupts off: it stays); the word does
    // not cross it (aligned).
    Some(unsafe { core::ptr::read_volatile(addr as *const u32) })
}
