//! Snapshot files of whole partitions (`astraea run --snapshot FILE`,
//! `astraea snapshot`, `astraea run --from FILE`).
//!
//! The library OS saves its own CPU context in guest memory and hands the
//! VMM a record naming where to resume (`libos/src/snapshot.rs`); the VMM
//! writes out guest RAM, the 9P device's ring position and the gateway
//! session's fids. A restore maps the file's RAM copy-on-write over the new
//! partition's memory — partitions restored from one file share its
//! unchanged pages in the host's page cache — and starts the vCPU at the
//! record's resume address.
//!
//! Layout: 16 bytes of [`MAGIC`], the length of the metadata (u64, little
//! endian), the metadata ([`Meta`], JSON: TOML took ≈ 1 ms to read), zeros up to the next 4 KiB, then
//! guest RAM: each RAM range at its offset in the partition's memfd (the
//! ranges one after another). Pages of zeros are holes (not stored).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use vm_memory::{GuestAddress, GuestMemoryBackend as _, GuestMemoryRegion as _};

use crate::devices::virtio9p::DeviceState;
use crate::error::VmmError;
use crate::memory::GuestMemory;

/// The first bytes of a snapshot file.
pub const MAGIC: &[u8; 16] = b"ASTRAEA-SNAP-v1\n";
/// [`Meta::format`] of this version.
pub const FORMAT: u32 = 2;
const PAGE: u64 = 4096;

/// What a snapshot holds besides guest RAM.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    /// [`FORMAT`].
    pub format: u32,
    /// Guest RAM in bytes.
    pub mem: u64,
    /// The `astraea run` arguments (before `--`, and the program after it)
    /// that built the partition: a restore builds the same one.
    pub recipe: Vec<String>,
    /// The directory `astraea run` ran in (the recipe's relative paths).
    pub cwd: PathBuf,
    /// The host kind the partition ran on (`pvm` or `kvm`): a library OS
    /// set up for one cannot go on on the other.
    pub host: String,
    /// The kernel image's guest-physical range.
    pub kernel: (u64, u64),
    /// Where the vCPU resumes (a kernel address), as a hex string.
    pub resume_rip: String,
    /// The stack it resumes on, as a hex string.
    pub resume_rsp: String,
    /// The guest's TSC when the snapshot was taken.
    pub tsc: u64,
    /// The TSC frequency (kHz), if KVM said.
    pub tsc_khz: Option<u32>,
    /// Wall-clock time of the snapshot, ns since the Unix epoch.
    pub taken_unix_ns: u64,
    /// The 9P device, if the partition had one set up.
    pub device: Option<DeviceState>,
    /// The built-in gateway's session, if the partition used one.
    pub session: Option<astraea_gateway::SavedSession>,
}

impl Meta {
    /// The resume address and stack.
    pub fn resume(&self) -> Result<(u64, u64), String> {
        let hex = |s: &str| {
            u64::from_str_radix(s.trim_start_matches("0x"), 16)
                .map_err(|e| format!("bad address {s:?}: {e}"))
        };
        Ok((hex(&self.resume_rip)?, hex(&self.resume_rsp)?))
    }
}

/// The hex form [`Meta`] keeps addresses in (readable, and signed-integer
/// formats cannot hold the upper half).
pub fn hex(v: u64) -> String {
    format!("{v:#x}")
}

/// An opened snapshot file.
#[derive(Debug)]
pub struct Image {
    /// The file, for mapping its RAM.
    pub file: File,
    /// Its path, for messages.
    pub path: PathBuf,
    /// Its metadata.
    pub meta: Meta,
    /// Where its RAM starts in the file.
    pub data_offset: u64,
}

impl Image {
    /// Opens and checks a snapshot file.
    pub fn open(path: &Path) -> Result<Image, VmmError> {
        let bad = |reason: String| VmmError::Snapshot {
            path: path.to_path_buf(),
            reason,
        };
        let mut file = File::open(path).map_err(|e| bad(e.to_string()))?;
        let mut head = [0u8; 24];
        file.read_exact(&mut head)
            .map_err(|_| bad("too short to be a snapshot".into()))?;
        if &head[..16] != MAGIC {
            return Err(bad(
                "not an Astraea snapshot (made by `astraea run --snapshot` or `astraea snapshot`)"
                    .into(),
            ));
        }
        let len = u64::from_le_bytes(head[16..24].try_into().unwrap_or_default());
        if len > 64 << 20 {
            return Err(bad(format!("its metadata claims {len} bytes")));
        }
        let mut text = vec![0u8; len as usize];
        file.read_exact(&mut text)
            .map_err(|_| bad("its metadata is cut short".into()))?;
        let text = String::from_utf8(text).map_err(|_| bad("its metadata is not text".into()))?;
        if text.starts_with("format = ") {
            return Err(bad(format!(
                "it was made by an older astraea (format 1), this one reads format {FORMAT}: take it again"
            )));
        }
        let meta: Meta = serde_json::from_str(&text)
            .map_err(|e| bad(format!("its metadata is invalid: {e}")))?;
        if meta.format != FORMAT {
            return Err(bad(format!(
                "it is format {}, this astraea reads format {FORMAT}",
                meta.format
            )));
        }
        let data_offset = (24 + len).next_multiple_of(PAGE);
        let size = file.metadata().map_err(|e| bad(e.to_string()))?.len();
        if size < data_offset + meta.mem {
            return Err(bad(format!(
                "it holds {size} bytes, fewer than its {} MiB of RAM",
                meta.mem >> 20
            )));
        }
        Ok(Image {
            file,
            path: path.to_path_buf(),
            meta,
            data_offset,
        })
    }

    /// Maps the snapshot's RAM over `mem` (copy-on-write).
    pub fn map_into(&self, mem: &GuestMemory) -> Result<(), VmmError> {
        for (gpa, len, off) in ram_layout(mem) {
            crate::memory::overlay_file_at(mem, gpa, &self.file, self.data_offset + off, len)?;
        }
        Ok(())
    }
}

/// Each RAM region: (guest-physical start, length, offset in the RAM image).
fn ram_layout(mem: &GuestMemory) -> Vec<(u64, u64, u64)> {
    let mut off = 0;
    mem.iter()
        .map(|r| {
            let e = (r.start_addr().0, r.len(), off);
            off += r.len();
            e
        })
        .collect()
}

/// The guest-physical ranges from `gpa` (`len` bytes, at `file_off` in
/// `file`: the partition's memfd, or a snapshot) that hold data: the
/// file's allocated extents.
fn memfd_data(file: &File, file_off: u64, gpa: u64, len: u64) -> Vec<(u64, u64)> {
    let fd = file.as_raw_fd();
    let mut out = Vec::new();
    let mut at = file_off;
    let end = file_off + len;
    while at < end {
        // SAFETY: lseek on a descriptor we own; it only moves its offset.
        let data = unsafe { libc::lseek(fd, at as libc::off_t, libc::SEEK_DATA) };
        if data < 0 || data as u64 >= end {
            break;
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
        let hole = if hole < 0 {
            end
        } else {
            (hole as u64).min(end)
        };
        out.push((gpa + (data as u64 - file_off), gpa + (hole - file_off)));
        at = hole;
    }
    out
}

/// Writes a snapshot of `mem` with `meta` to `path` (through a temporary
/// file renamed into place, so a reader never sees half of one). Only
/// pages that may hold data are read: the memfd's allocated extents, the
/// ranges in `mapped` (RAM mapped from a file: a cache image) and, in a
/// partition restored from `restored`, that file's data extents and the
/// pages the partition has touched since. Returns the bytes of RAM stored.
pub fn write(
    path: &Path,
    meta: &Meta,
    mem: &GuestMemory,
    mapped: &[(u64, u64)],
    restored: Option<&Image>,
) -> Result<u64, String> {
    // One per process: two partitions may write the same file at once.
    let tmp = path.with_extension(format!("partial-{}", std::process::id()));
    let r = write_to(&tmp, path, meta, mem, mapped, restored);
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

fn write_to(
    tmp: &Path,
    path: &Path,
    meta: &Meta,
    mem: &GuestMemory,
    mapped: &[(u64, u64)],
    restored: Option<&Image>,
) -> Result<u64, String> {
    let text =
        serde_json::to_string_pretty(meta).map_err(|e| format!("encoding the metadata: {e}"))?;
    let data_offset = (24 + text.len() as u64).next_multiple_of(PAGE);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(tmp)
        .map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let io = |e: std::io::Error| format!("writing {}: {e}", tmp.display());
    f.write_all(MAGIC).map_err(io)?;
    f.write_all(&(text.len() as u64).to_le_bytes())
        .map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    let mut stored = 0u64;
    for (gpa, len, off) in ram_layout(mem) {
        let region = mem
            .find_region(GuestAddress(gpa))
            .ok_or_else(|| format!("{gpa:#x} is not guest RAM"))?;
        let mut ranges = match region.file_offset() {
            Some(fo) => memfd_data(fo.file(), fo.start(), gpa, len),
            None => vec![(gpa, gpa + len)],
        };
        for &(s, e) in mapped {
            let (s, e) = (s.max(gpa), e.min(gpa + len));
            if s < e {
                ranges.push((s, e));
            }
        }
        let host = mem
            .get_host_address(GuestAddress(gpa))
            .map_err(|e| e.to_string())? as *const u8;
        if let Some(img) = restored {
            ranges.extend(memfd_data(&img.file, img.data_offset + off, gpa, len));
            ranges.extend(resident(host, gpa, len));
        }
        ranges.sort_unstable();
        let mut done = gpa;
        for (s, e) in ranges {
            let (s, e) = (s.max(done) & !(PAGE - 1), e.next_multiple_of(PAGE));
            if s >= e {
                continue;
            }
            // SAFETY: [s, e) lies in this region's mapping (clamped to it
            // above), which `mem` keeps mapped; the vCPU is stopped in the
            // snapshot exit and the 9P device is idle, so nothing writes it.
            let bytes = unsafe {
                std::slice::from_raw_parts(host.add((s - gpa) as usize), (e - s) as usize)
            };
            stored += write_nonzero(&f, bytes, data_offset + off + (s - gpa)).map_err(io)?;
            done = e;
        }
    }
    let total: u64 = ram_layout(mem).iter().map(|r| r.1).sum();
    f.set_len(data_offset + total).map_err(io)?;
    drop(f);
    std::fs::rename(tmp, path).map_err(|e| format!("cannot rename {}: {e}", tmp.display()))?;
    Ok(stored)
}

/// The guest-physical ranges of the region at `gpa` (`len` bytes, mapped at
/// `host`) whose pages are in memory (`mincore`): in RAM mapped from a
/// snapshot, the pages the partition wrote (its own copies) or read.
fn resident(host: *const u8, gpa: u64, len: u64) -> Vec<(u64, u64)> {
    let pages = (len / PAGE) as usize;
    let mut vec = vec![0u8; pages];
    // SAFETY: `host` is the page-aligned start of a mapping of `len` bytes
    // that `mem` keeps; mincore only fills `vec` (one byte per page).
    if unsafe { libc::mincore(host as *mut libc::c_void, len as usize, vec.as_mut_ptr()) } != 0 {
        // Unknown: read it all.
        return vec![(gpa, gpa + len)];
    }
    runs(vec.iter().map(|b| b & 1 != 0))
        .into_iter()
        .map(|(a, b)| (gpa + a as u64 * PAGE, gpa + b as u64 * PAGE))
        .collect()
}

/// Writes the pages of `bytes` that are not all zeros at `at` onwards (runs
/// of them in one write); returns the bytes written.
fn write_nonzero(f: &File, bytes: &[u8], at: u64) -> std::io::Result<u64> {
    let page = PAGE as usize;
    let mut written = 0u64;
    for (s, e) in runs(bytes.chunks_exact(page).map(|p| p.iter().any(|&b| b != 0))) {
        f.write_all_at(&bytes[s * page..e * page], at + (s * page) as u64)?;
        written += ((e - s) * page) as u64;
    }
    Ok(written)
}

/// The runs of `true` in `flags`, as index ranges `[start, end)`.
fn runs(flags: impl Iterator<Item = bool>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut run: Option<usize> = None;
    // One past the end is `false`, to close the last run.
    for (i, on) in flags.chain(std::iter::once(false)).enumerate() {
        match (run, on) {
            (None, true) => run = Some(i),
            (Some(s), false) => {
                out.push((s, i));
                run = None;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_of_pages() {
        let f = |v: &[u8]| super::runs(v.iter().map(|&b| b != 0));
        assert_eq!(f(&[]), vec![]);
        assert_eq!(f(&[0, 1, 1, 0, 1]), vec![(1, 3), (4, 5)]);
        assert_eq!(f(&[1, 1]), vec![(0, 2)]);
    }
}
