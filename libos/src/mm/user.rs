//! User memory: the lower half of the one address space, where the program
//! lives (the kernel is in the upper half).

use super::frame::PAGE_SIZE;
use super::kernel::{alloc_frames, map_user_page, translate, unmap_user_page};
use super::paging::PteFlags;
use super::phys_to_virt;
use crate::errno::Errno;

/// Lowest user address (Linux's default `vm.mmap_min_addr`).
pub const USER_MIN: u64 = 0x1_0000;
/// One past the highest user address (the canonical lower half, minus a page).
pub const USER_MAX: u64 = 0x7fff_ffff_f000;

/// Page protection of a user mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prot {
    /// Writable.
    pub write: bool,
    /// Executable.
    pub exec: bool,
}

/// Checks that `[addr, addr+len)` lies in user space.
pub fn check_range(addr: u64, len: u64) -> Result<(), Errno> {
    let end = addr.checked_add(len).ok_or(Errno::EFAULT)?;
    if addr < USER_MIN || end > USER_MAX {
        return Err(Errno::EFAULT);
    }
    Ok(())
}

/// The program's bytes at `[addr, addr+len)`, if all of it is mapped.
pub fn slice(addr: u64, len: u64) -> Result<&'static [u8], Errno> {
    check_range(addr, len)?;
    let mut page = addr & !(PAGE_SIZE as u64 - 1);
    while page < addr + len {
        let t = translate(page).ok_or(Errno::EFAULT)?;
        if !t.flags.contains(PteFlags::USER) {
            return Err(Errno::EFAULT);
        }
        page += PAGE_SIZE as u64;
    }
    // SAFETY: every page of the range is mapped user memory in the one
    // address space; the program may change it concurrently, as with any
    // Linux read of user memory, which only affects the bytes read.
    Ok(unsafe { core::slice::from_raw_parts(addr as *const u8, len as usize) })
}

/// Maps fresh zeroed pages over `[addr, addr+len)` (page-aligned) for the
/// program with `prot`.
pub fn map_anonymous(addr: u64, len: u64, prot: Prot) -> Result<(), Errno> {
    check_range(addr, len)?;
    if !addr.is_multiple_of(PAGE_SIZE as u64) {
        return Err(Errno::EINVAL);
    }
    let mut flags = PteFlags::PRESENT | PteFlags::USER;
    if prot.write {
        flags |= PteFlags::WRITABLE;
    }
    if !prot.exec {
        flags |= PteFlags::NO_EXECUTE;
    }
    let mut va = addr;
    while va < addr + len {
        let pa = alloc_frames(1, 1).ok_or(Errno::ENOMEM)?;
        // SAFETY: a fresh frame owned by this mapping, in the direct map.
        unsafe { core::ptr::write_bytes(phys_to_virt(pa) as *mut u8, 0, PAGE_SIZE) };
        map_user_page(va, pa, flags)?;
        va += PAGE_SIZE as u64;
    }
    Ok(())
}

/// Copies `bytes` into mapped user memory at `addr` (the kernel writes
/// through its direct map, so read-only user pages can be filled).
pub fn copy_in(addr: u64, bytes: &[u8]) -> Result<(), Errno> {
    check_range(addr, bytes.len() as u64)?;
    let mut done = 0usize;
    while done < bytes.len() {
        let va = addr + done as u64;
        let t = translate(va).ok_or(Errno::EFAULT)?;
        let in_page = PAGE_SIZE - (va as usize % PAGE_SIZE);
        let n = in_page.min(bytes.len() - done);
        let dst = phys_to_virt(t.pa) as *mut u8;
        // SAFETY: `t.pa` is the frame behind a mapped user page; the kernel
        // reaches it through the direct map; `n` stays inside that page.
        unsafe { core::ptr::copy_nonoverlapping(bytes[done..].as_ptr(), dst, n) };
        done += n;
    }
    Ok(())
}

/// Unmaps whatever user pages lie in `[addr, addr+len)` (page-aligned) and
/// frees their frames.
pub fn unmap(addr: u64, len: u64) -> Result<(), Errno> {
    check_range(addr, len)?;
    let mut va = addr & !(PAGE_SIZE as u64 - 1);
    while va < addr + len {
        unmap_user_page(va);
        va += PAGE_SIZE as u64;
    }
    Ok(())
}
