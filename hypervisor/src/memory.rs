//! Guest RAM: one memfd, mapped shared, so that another process (a vhost-user
//! gateway) can map the same pages later.

use std::fs::File;
use std::os::fd::FromRawFd;

use astraea_abi::layout::{HIGH_RAM_START, MMIO_HOLE_START};
use vm_memory::{FileOffset, GuestAddress, GuestMemoryMmap};

use crate::error::VmmError;

/// Guest memory as the VMM sees it.
pub type GuestMemory = GuestMemoryMmap<()>;

/// Largest partition this VMM creates (64 GiB): the boot page tables and
/// the FDT memory node cover this much.
pub const MAX_MEM: u64 = 64 << 30;

/// Parses `512M`, `2G`, `1T`, `65536K` or a plain byte count.
pub fn parse_mem_size(s: &str) -> Result<u64, VmmError> {
    let t = s.trim();
    let err = || VmmError::MemParse(s.to_string());
    let (num, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(err()),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let n: u64 = num.trim().parse().map_err(|_| err())?;
    n.checked_mul(1u64 << shift)
        .filter(|&v| v > 0)
        .ok_or_else(err)
}

/// The guest-physical RAM ranges for `size` bytes: everything below the 32-bit
/// MMIO hole, the rest from 4 GiB up.
pub fn ram_ranges(size: u64) -> Vec<(u64, u64)> {
    if size <= MMIO_HOLE_START {
        vec![(0, size)]
    } else {
        vec![
            (0, MMIO_HOLE_START),
            (HIGH_RAM_START, size - MMIO_HOLE_START),
        ]
    }
}

/// Creates `size` bytes of guest RAM backed by one memfd.
pub fn create(size: u64) -> Result<GuestMemory, VmmError> {
    // SAFETY: memfd_create takes a NUL-terminated name and flags; it returns a
    // new fd or -1 and touches no memory of ours.
    let fd = unsafe { libc::memfd_create(c"astraea-guest-ram".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(VmmError::Memory(format!(
            "memfd_create: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: fd was just returned by memfd_create and is owned by nothing else.
    let file = unsafe { File::from_raw_fd(fd) };
    file.set_len(size)
        .map_err(|e| {
            // Guest RAM is a memory file: `ulimit -f` (hard) bounds it too.
            let hint = if e.raw_os_error() == Some(libc::EFBIG) {
                " (guest RAM is a memory file, and this process's hard file size limit, `ulimit -Hf`, is below it: raise it, or set only a soft one with `ulimit -Sf`, which the program keeps)"
            } else {
                ""
            };
            VmmError::Memory(format!("cannot size guest RAM to {size} bytes: {e}{hint}"))
        })?;
    let file = std::sync::Arc::new(file);
    let mut offset = 0u64;
    let ranges: Vec<_> = ram_ranges(size)
        .into_iter()
        .map(|(gpa, len)| {
            let r = (
                GuestAddress(gpa),
                len as usize,
                Some(FileOffset::from_arc(file.clone(), offset)),
            );
            offset += len;
            r
        })
        .collect();
    GuestMemoryMmap::from_ranges_with_files(ranges).map_err(|e| VmmError::MemoryMap {
        mib: size >> 20,
        reason: match e {
            vm_memory::mmap::FromRangesError::MmapRegion(
                vm_memory::mmap::MmapRegionError::Mmap(io),
            ) => io.to_string(),
            e => e.to_string(),
        },
    })
}

/// A file mapped read-only, for reading the kernel image: only the pages
/// looked at (the headers and the loadable segments, not the debug
/// information that makes up most of a kernel built with it) are read, from
/// the host's page cache, instead of the whole file being copied into fresh
/// memory (10 MB took 10 ms of every start, mostly first touches of the
/// buffer's pages).
pub struct MappedFile {
    ptr: *mut libc::c_void,
    len: usize,
}

impl MappedFile {
    /// Maps the whole of `file` (an empty file is an empty slice).
    pub fn open(path: &std::path::Path) -> std::io::Result<Self> {
        use std::os::fd::AsRawFd;
        let file = File::open(path)?;
        let len = usize::try_from(file.metadata()?.len())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::FileTooLarge))?;
        if len == 0 {
            return Ok(Self {
                ptr: std::ptr::null_mut(),
                len: 0,
            });
        }
        // SAFETY: a new private read-only mapping of an open file, placed by
        // the kernel; nothing else refers to that range.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self { ptr, len })
    }
}

impl std::ops::Deref for MappedFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `ptr..ptr+len` is this object's readable mapping, alive
        // until drop. (A file truncated under it would fault: the kernel
        // image is not rewritten in place while a partition starts.)
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: the mapping made in `open`, unmapped once; no slice
            // of it outlives `self` (they borrow it).
            unsafe { libc::munmap(self.ptr, self.len) };
        }
    }
}

/// This machine's RAM plus swap in bytes (`/proc/meminfo`), if known.
pub fn host_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = |key: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((kib("MemTotal:")? + kib("SwapTotal:").unwrap_or(0)) * 1024)
}

/// Maps `file` (read-only on disk, copy-on-write in memory) over guest RAM
/// at `gpa`, instead of copying it there: the guest sees the host's page
/// cache pages until it writes. Only for guest memory no other process
/// maps (a vhost-user gateway would still see the memfd underneath).
pub fn overlay_file(mem: &GuestMemory, gpa: u64, file: &File, len: u64) -> Result<(), VmmError> {
    overlay_file_at(mem, gpa, file, 0, len)
}

/// [`overlay_file`] from byte `offset` of `file` (a multiple of 4 KiB).
pub fn overlay_file_at(
    mem: &GuestMemory,
    gpa: u64,
    file: &File,
    offset: u64,
    len: u64,
) -> Result<(), VmmError> {
    use std::os::fd::AsRawFd;
    use vm_memory::{GuestMemoryBackend as _, GuestMemoryRegion as _};
    let len = len.next_multiple_of(4096);
    let region = mem
        .find_region(GuestAddress(gpa))
        .ok_or_else(|| VmmError::Boot(format!("{gpa:#x} is not guest RAM")))?;
    if !gpa.is_multiple_of(4096)
        || !offset.is_multiple_of(4096)
        || gpa + len > region.start_addr().0 + region.len()
    {
        return Err(VmmError::Boot(format!(
            "the range {gpa:#x}+{len:#x} does not lie in one RAM region"
        )));
    }
    let host = mem
        .get_host_address(GuestAddress(gpa))
        .map_err(|e| VmmError::Boot(e.to_string()))?;
    // SAFETY: `host..host+len` is part of this process's mapping of guest
    // RAM (one region, checked above), page-aligned; replacing it with a
    // private mapping of `file` keeps it readable and writable at the same
    // address, so every reference into guest memory stays valid. No vCPU
    // runs yet, and KVM follows the change through its MMU notifier.
    let p = unsafe {
        libc::mmap(
            host.cast(),
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_FIXED,
            file.as_raw_fd(),
            offset as libc::off_t,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(VmmError::Boot(format!(
            "mapping a file over guest RAM: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Allocates the first `bytes` of guest RAM in the host from a background
/// thread (`MADV_POPULATE_WRITE` on our mapping, 2 MiB at a time), while
/// the partition boots. The library OS hands out the lowest frames first,
/// so these are the pages it touches first; a page the host has already
/// allocated costs the guest's first touch (a shadow-page fault on PVM) and
/// the gateway's first write into it (a reply buffer) much less. Best
/// effort: a host that refuses (an old kernel, no memory) leaves the pages
/// to be allocated on demand as before.
pub fn prefault_in_background(mem: std::sync::Arc<GuestMemory>, bytes: u64) {
    use vm_memory::{GuestMemoryBackend as _, GuestMemoryRegion as _};
    let Some(first) = mem.iter().next().map(|r| r.len()) else {
        return;
    };
    let len = bytes.min(first);
    let spawned = std::thread::Builder::new()
        .name("prefault".into())
        .spawn(move || {
            let t = std::time::Instant::now();
            let chunk = 2u64 << 20;
            let mut done = 0u64;
            while done < len {
                let n = chunk.min(len - done);
                if let Err(e) = populate(&mem, done, n, true) {
                    tracing::debug!(error = %e, "prefault stopped");
                    break;
                }
                done += n;
            }
            tracing::debug!(mib = done >> 20, elapsed = ?t.elapsed(), "prefaulted guest RAM");
        });
    if let Err(e) = spawned {
        tracing::debug!(error = %e, "no prefault thread");
    }
}

/// Has the host map `[gpa, gpa+len)` of guest RAM into this process now
/// (`MADV_POPULATE_WRITE` if `write`: allocated, or copied from the file a
/// snapshot maps; else `MADV_POPULATE_READ`), so that the guest's first
/// touch of those pages does not wait for a host page fault. The range must
/// lie in one RAM region.
pub fn populate(mem: &GuestMemory, gpa: u64, len: u64, write: bool) -> std::io::Result<()> {
    use vm_memory::{GuestMemoryBackend as _, GuestMemoryRegion as _};
    let region = mem
        .find_region(GuestAddress(gpa))
        .filter(|r| gpa + len <= r.start_addr().0 + r.len())
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EFAULT))?;
    let host = region
        .get_host_address(vm_memory::MemoryRegionAddress(gpa - region.start_addr().0))
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EFAULT))?;
    let advice = if write {
        libc::MADV_POPULATE_WRITE
    } else {
        libc::MADV_POPULATE_READ
    };
    // SAFETY: `[host, host+len)` lies in the mapping of one RAM region,
    // which `mem` keeps mapped for the call; populating only makes the
    // host map pages, it never changes what the guest sees in them (a
    // written page of a private file mapping is copied first).
    let r = unsafe { libc::madvise(host.cast(), len as usize, advice) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_mem_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_mem_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_mem_size("64K").unwrap(), 64 << 10);
        assert_eq!(parse_mem_size("4096").unwrap(), 4096);
        assert_eq!(parse_mem_size("1T").unwrap(), 1 << 40);
        for bad in ["", "M", "12X", "-1M", "0", "1.5G", "99999999999999999999G"] {
            assert!(parse_mem_size(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn ranges_skip_the_hole() {
        assert_eq!(ram_ranges(512 << 20), vec![(0, 512 << 20)]);
        assert_eq!(
            ram_ranges(4 << 30),
            vec![
                (0, MMIO_HOLE_START),
                (HIGH_RAM_START, (4 << 30) - MMIO_HOLE_START)
            ]
        );
    }

    #[test]
    fn memfd_memory_is_usable() {
        use vm_memory::Bytes;
        let m = create(8 << 20).unwrap();
        m.write_obj(0xdead_beef_u32, GuestAddress(0x1000)).unwrap();
        assert_eq!(
            m.read_obj::<u32>(GuestAddress(0x1000)).unwrap(),
            0xdead_beef
        );
    }
}
