//! A restore's working set (REAP, ASPLOS '21): the guest pages a partition
//! restored from a snapshot touched in its first second, recorded beside
//! the snapshot (`FILE.ws`) by the first restore and mapped in the host
//! ahead of the vCPU by the later ones.
//!
//! A restored partition's RAM is the snapshot file mapped copy-on-write,
//! so each page it touches first costs a host page fault (a copy, if it
//! writes) and, on PVM, a shadow-page fault too, without KVM's
//! prefetching of neighbours (which needs host pages already mapped
//! writable). A `--warm` JVM's `Hello` touches ≈ 2,500 pages that way
//! between its restore and its exit. The record says which pages, and
//! whether they were written (`/proc/self/pagemap`: a page of a private
//! file mapping that was written is anonymous); a later restore populates
//! them from a thread beside the vCPU, written ones writable
//! (`MADV_POPULATE_WRITE`: copied now, off the vCPU's path), the others
//! readable.
//!
//! File: [`MAGIC`], then little-endian u64s: the snapshot's
//! `taken_unix_ns` and RAM size (a record of another snapshot at the same
//! path is ignored), the number of runs, and per run its first
//! guest-physical page (bit 63 set: written) and its length in pages.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use vm_memory::{GuestAddress, GuestMemoryBackend as _, GuestMemoryRegion as _};

use crate::memory::GuestMemory;
use crate::snapshot::Image;

/// The first bytes of a working-set record.
pub const MAGIC: &[u8; 16] = b"ASTRAEA-WS-v1\n\0\0";
/// How long after the restore the record is taken (at the latest: a
/// partition that exits sooner is recorded at its exit): the pages a
/// short command touches, or a cloned server's start and first answers —
/// not everything a long-running copy ever touches, which would make
/// every later copy own that much memory.
pub const RECORD_AFTER: Duration = Duration::from_secs(1);
const PAGE: u64 = 4096;
const WRITTEN: u64 = 1 << 63;

/// Consecutive guest pages touched the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Guest-physical address of the first page.
    pub gpa: u64,
    /// Pages.
    pub pages: u64,
    /// Written (else only read).
    pub written: bool,
}

/// Where `snapshot`'s record goes.
pub fn path(snapshot: &Path) -> PathBuf {
    let mut p = snapshot.as_os_str().to_owned();
    p.push(".ws");
    PathBuf::from(p)
}

/// Encodes a record.
pub fn encode(taken_unix_ns: u64, mem: u64, runs: &[Run]) -> Vec<u8> {
    let mut v = Vec::with_capacity(40 + runs.len() * 16);
    v.extend_from_slice(MAGIC);
    for x in [taken_unix_ns, mem, runs.len() as u64] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    for r in runs {
        let first = (r.gpa / PAGE) | if r.written { WRITTEN } else { 0 };
        v.extend_from_slice(&first.to_le_bytes());
        v.extend_from_slice(&r.pages.to_le_bytes());
    }
    v
}

/// Decodes a record of the snapshot taken at `taken_unix_ns` with `mem`
/// bytes of RAM; `None` if it is not one (another snapshot's, cut short,
/// or naming pages outside that RAM).
pub fn decode(bytes: &[u8], taken_unix_ns: u64, mem: u64) -> Option<Vec<Run>> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let mut words = rest
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()));
    if rest.len() % 8 != 0 || words.next()? != taken_unix_ns || words.next()? != mem {
        return None;
    }
    let n = words.next()?;
    if n > mem / PAGE || words.len() as u64 != n * 2 {
        return None;
    }
    let ranges = crate::memory::ram_ranges(mem);
    let mut runs = Vec::with_capacity(n as usize);
    while let (Some(first), Some(pages)) = (words.next(), words.next()) {
        let gpa = (first & !WRITTEN).checked_mul(PAGE)?;
        let len = pages.checked_mul(PAGE)?;
        let end = gpa.checked_add(len)?;
        // Each run within one RAM range.
        if pages == 0 || !ranges.iter().any(|&(s, l)| gpa >= s && end <= s + l) {
            return None;
        }
        runs.push(Run {
            gpa,
            pages,
            written: first & WRITTEN != 0,
        });
    }
    Some(runs)
}

/// The pages of guest RAM the host has mapped into this process now, as
/// runs: those of a private file mapping that are anonymous were written.
fn scan(mem: &GuestMemory) -> std::io::Result<Vec<Run>> {
    const PRESENT: u64 = 1 << 63;
    const FILE_OR_SHARED: u64 = 1 << 61;
    let pagemap = File::open("/proc/self/pagemap")?;
    let mut runs: Vec<Run> = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    for region in mem.iter() {
        let start = region.start_addr().0;
        let host =
            mem.get_host_address(GuestAddress(start))
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EFAULT))? as u64;
        let pages = region.len() / PAGE;
        let mut i = 0;
        while i < pages {
            let n = (pages - i).min(buf.len() as u64 / 8);
            let chunk = &mut buf[..(n * 8) as usize];
            pagemap.read_exact_at(chunk, (host / PAGE + i) * 8)?;
            for (j, e) in chunk.chunks_exact(8).enumerate() {
                let e = u64::from_le_bytes(e.try_into().unwrap_or_default());
                if e & PRESENT == 0 {
                    continue;
                }
                let gpa = start + (i + j as u64) * PAGE;
                let written = e & FILE_OR_SHARED == 0;
                match runs.last_mut() {
                    Some(r) if r.written == written && r.gpa + r.pages * PAGE == gpa => {
                        r.pages += 1
                    }
                    _ => runs.push(Run {
                        gpa,
                        pages: 1,
                        written,
                    }),
                }
            }
            i += n;
        }
    }
    Ok(runs)
}

/// What a restore does about its working set; dropping it ends that.
pub struct WorkingSet {
    record: Option<(mpsc::Sender<bool>, std::thread::JoinHandle<()>)>,
}

impl WorkingSet {
    /// For a partition whose RAM `image` was just mapped into `mem`: if
    /// the image has a record, populates the pages it names as written
    /// from a thread, beside the partition's set-up and then its vCPU; if
    /// not, starts the thread that takes one [`RECORD_AFTER`] the restore
    /// or at the partition's exit ([`WorkingSet::exited`]), whichever
    /// comes first.
    ///
    /// Only written pages: populating the read ones too (≈ 10,000 for a
    /// JVM, most of them mapped by the host's fault-around rather than
    /// touched) made a `--warm` Hello slower, not faster.
    pub fn start(image: &Image, mem: Arc<GuestMemory>) -> WorkingSet {
        let file = path(&image.path);
        let (taken, size) = (image.meta.taken_unix_ns, image.meta.mem);
        if let Some(runs) = std::fs::read(&file)
            .ok()
            .and_then(|b| decode(&b, taken, size))
        {
            let runs: Vec<Run> = runs.into_iter().filter(|r| r.written).collect();
            let spawned = std::thread::Builder::new()
                .name("working-set".into())
                .spawn(move || populate(&mem, &runs));
            if let Err(e) = spawned {
                tracing::debug!(error = %e, "no working-set thread");
            }
            return WorkingSet { record: None };
        }
        let (tx, rx) = mpsc::channel::<bool>();
        let spawned = std::thread::Builder::new()
            .name("working-set".into())
            .spawn(move || {
                // `false`: the partition failed; nothing worth keeping.
                if let Ok(false) = rx.recv_timeout(RECORD_AFTER) {
                    return;
                }
                record(&mem, &file, taken, size);
            });
        match spawned {
            Ok(h) => WorkingSet {
                record: Some((tx, h)),
            },
            Err(e) => {
                tracing::debug!(error = %e, "no working-set thread");
                WorkingSet { record: None }
            }
        }
    }

    /// The partition exited normally: a record not taken yet is taken now
    /// (before this process unmaps guest RAM).
    pub fn exited(mut self) {
        if let Some((tx, h)) = self.record.take() {
            let _ = tx.send(true);
            let _ = h.join();
        }
    }
}

impl Drop for WorkingSet {
    fn drop(&mut self) {
        if let Some((tx, h)) = self.record.take() {
            let _ = tx.send(false);
            let _ = h.join();
        }
    }
}

fn populate(mem: &GuestMemory, runs: &[Run]) {
    let t = std::time::Instant::now();
    let mut pages = 0;
    for r in runs {
        if let Err(e) = crate::memory::populate(mem, r.gpa, r.pages * PAGE, r.written) {
            tracing::debug!(error = %e, gpa = r.gpa, "working set: populating stopped");
            break;
        }
        pages += r.pages;
    }
    tracing::debug!(pages, elapsed = ?t.elapsed(), "working set populated");
}

/// Best effort: a snapshot in a directory this user cannot write has no
/// record, and restores of it go on as before.
fn record(mem: &GuestMemory, file: &Path, taken: u64, size: u64) {
    let runs = match scan(mem) {
        Ok(r) => r,
        Err(e) => {
            // A host without it (a kernel without CONFIG_PROC_PAGE_MONITOR,
            // a chroot without /proc): restores go on as before.
            tracing::debug!(error = %e, "working set: cannot read /proc/self/pagemap; later restores go on without it");
            return;
        }
    };
    let pages: u64 = runs.iter().map(|r| r.pages).sum();
    let tmp = file.with_extension(format!("ws.partial-{}", std::process::id()));
    let written = File::create(&tmp)
        .and_then(|mut f| f.write_all(&encode(taken, size, &runs)))
        .and_then(|()| std::fs::rename(&tmp, file));
    match written {
        Ok(()) => {
            tracing::debug!(pages, runs = runs.len(), file = %file.display(), "working set recorded")
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            // A snapshot in a directory this user cannot write is expected.
            if matches!(
                e.kind(),
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
            ) {
                tracing::debug!(error = %e, file = %file.display(), "working set not recorded");
            } else {
                tracing::warn!(error = %e, file = %file.display(), "working set not recorded");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_reject_others() {
        let mem = 512 << 20;
        let runs = vec![
            Run {
                gpa: 0x1000,
                pages: 3,
                written: true,
            },
            Run {
                gpa: 0x10_0000,
                pages: 1,
                written: false,
            },
        ];
        let b = encode(7, mem, &runs);
        assert_eq!(decode(&b, 7, mem), Some(runs.clone()));
        // Another snapshot's, another size, cut short, garbage.
        assert_eq!(decode(&b, 8, mem), None);
        assert_eq!(decode(&b, 7, mem * 2), None);
        assert_eq!(decode(&b[..b.len() - 8], 7, mem), None);
        assert_eq!(decode(b"ASTRAEA", 7, mem), None);
        // A run beyond RAM, or of no pages.
        let out = [Run {
            gpa: mem - 0x1000,
            pages: 2,
            written: false,
        }];
        assert_eq!(decode(&encode(7, mem, &out), 7, mem), None);
        let empty = [Run {
            gpa: 0,
            pages: 0,
            written: false,
        }];
        assert_eq!(decode(&encode(7, mem, &empty), 7, mem), None);
        // A count that does not match what follows.
        let mut lie = encode(7, mem, &runs);
        lie[32..40].copy_from_slice(&5u64.to_le_bytes());
        assert_eq!(decode(&lie, 7, mem), None);
    }

    #[test]
    fn path_is_beside_the_snapshot() {
        assert_eq!(
            path(Path::new("/c/abc.snap")),
            PathBuf::from("/c/abc.snap.ws")
        );
    }
}
