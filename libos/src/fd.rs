//! The process's file descriptors: the console, and files of the 9P
//! namespace (each an open fid with its own offset).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::errno::Errno;
use crate::p9::Fid;
use crate::sync::IrqLock;

/// What a descriptor refers to.
pub enum File {
    /// The user's console: reads come from stdin, writes go to stdout/stderr.
    Console {
        /// 1 (stdout) or 2 (stderr) for writes; 0 reads.
        fd: u8,
    },
    /// An open 9P file or directory.
    P9 {
        /// The open fid.
        fid: Fid,
        /// The file position.
        offset: IrqLock<u64>,
        /// The path it was opened by.
        path: String,
        /// `O_*` flags it was opened with.
        flags: u32,
    },
}

impl Drop for File {
    fn drop(&mut self) {
        if let (File::P9 { fid, .. }, Some(c)) = (&*self, crate::p9::mounted()) {
            c.clunk(*fid);
        }
    }
}

/// The descriptor table (one process).
pub static TABLE: IrqLock<Vec<Option<Arc<File>>>> = IrqLock::new(Vec::new());

/// Most descriptors open at once.
pub const MAX_FDS: usize = 4096;

/// Puts the console on 0, 1 and 2.
pub fn init_stdio() {
    let mut t = TABLE.lock();
    t.clear();
    for fd in 0..3u8 {
        t.push(Some(Arc::new(File::Console { fd })));
    }
}

/// The file behind `fd`.
pub fn get(fd: u64) -> Result<Arc<File>, Errno> {
    let t = TABLE.lock();
    t.get(fd as usize)
        .and_then(|f| f.clone())
        .ok_or(Errno::EBADF)
}

/// Installs `f` at the lowest free descriptor.
pub fn install(f: File) -> Result<u64, Errno> {
    let mut t = TABLE.lock();
    let f = Some(Arc::new(f));
    if let Some(i) = t.iter().position(Option::is_none) {
        t[i] = f;
        return Ok(i as u64);
    }
    if t.len() >= MAX_FDS {
        return Err(Errno::EMFILE);
    }
    t.push(f);
    Ok(t.len() as u64 - 1)
}

/// Closes `fd` (the fid is clunked when the last reference goes).
pub fn close(fd: u64) -> Result<(), Errno> {
    let old = {
        let mut t = TABLE.lock();
        t.get_mut(fd as usize)
            .and_then(Option::take)
            .ok_or(Errno::EBADF)?
    };
    drop(old);
    Ok(())
}

/// The current directory, as an absolute path in the namespace.
pub static CWD: IrqLock<String> = IrqLock::new(String::new());

/// Resolves `path` against the current directory (`.` and `..` folded).
pub fn absolute(path: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let base = if path.starts_with('/') {
        String::new()
    } else {
        CWD.lock().clone()
    };
    for c in base.split('/').chain(path.split('/')) {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(String::from(c)),
        }
    }
    let mut out = String::from("/");
    out.push_str(&parts.join("/"));
    out
}
