//! Where a partition's 9P requests go: a [`NinePBackend`] answers complete
//! T-message frames with complete R-message frames, each request on its own,
//! possibly out of order. The in-process gateway and the TCP forwarder (to a
//! remote gateway or any 9P server, such as diod) are backends.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

/// A reply continuation: called once with the complete R-message frame.
pub type Reply = Box<dyn FnOnce(Vec<u8>) + Send>;

/// Answers 9P requests.
pub trait NinePBackend: Send + Sync {
    /// Handles one complete T-message (size[4] included); `reply` is called
    /// exactly once, possibly later and on another thread.
    fn submit(&self, frame: Vec<u8>, reply: Reply);
}

/// The in-process gateway: one 9P session served straight from the
/// partition's queue, with no copy through a socket.
impl NinePBackend for astraea_gateway::Session {
    fn submit(&self, frame: Vec<u8>, reply: Reply) {
        astraea_gateway::Session::submit(self, frame, reply);
    }
}

/// Forwards frames over one TCP connection to a 9P server and routes the
/// answers back by tag.
pub struct TcpForwarder {
    writer: Mutex<TcpStream>,
    pending: Arc<Mutex<HashMap<u16, Reply>>>,
}

/// Largest frame accepted from the server (a little over 1 MiB msize).
const MAX_FRAME: usize = (1 << 20) + 4096;

impl TcpForwarder {
    /// Connects to `addr` (`host:port`) and starts the reader thread.
    pub fn connect(addr: &str) -> std::io::Result<Arc<Self>> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        let mut reader = stream.try_clone()?;
        let pending: Arc<Mutex<HashMap<u16, Reply>>> = Arc::default();
        let p = pending.clone();
        std::thread::Builder::new()
            .name("9p-tcp-reader".into())
            .spawn(move || {
                loop {
                    let mut size = [0u8; 4];
                    if reader.read_exact(&mut size).is_err() {
                        break;
                    }
                    let n = u32::from_le_bytes(size) as usize;
                    if !(7..=MAX_FRAME).contains(&n) {
                        tracing::error!(n, "9P server sent a bad frame size; closing");
                        break;
                    }
                    let mut frame = vec![0u8; n];
                    frame[..4].copy_from_slice(&size);
                    if reader.read_exact(&mut frame[4..]).is_err() {
                        break;
                    }
                    let tag = u16::from_le_bytes([frame[5], frame[6]]);
                    let reply = p.lock().unwrap_or_else(|e| e.into_inner()).remove(&tag);
                    match reply {
                        Some(r) => r(frame),
                        None => tracing::warn!(tag, "9P reply for an unknown tag dropped"),
                    }
                }
                // The server went away: fail everything still waiting.
                let waiting: Vec<_> = p
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .drain()
                    .collect();
                for (tag, r) in waiting {
                    r(rlerror(tag, libc::EIO as u32));
                }
            })?;
        Ok(Arc::new(Self {
            writer: Mutex::new(stream),
            pending,
        }))
    }
}

impl NinePBackend for TcpForwarder {
    fn submit(&self, frame: Vec<u8>, reply: Reply) {
        let Some(tag) = frame.get(5..7).map(|t| u16::from_le_bytes([t[0], t[1]])) else {
            reply(Vec::new());
            return;
        };
        {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            // A tag already in flight (a buggy or hostile guest): answered
            // here, so the earlier request keeps its own reply and neither
            // is lost.
            if pending.contains_key(&tag) {
                drop(pending);
                tracing::debug!(tag, "9P request reuses a tag in flight; refused");
                reply(rlerror(tag, libc::EINVAL as u32));
                return;
            }
            pending.insert(tag, reply);
        }
        let sent = self
            .writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .write_all(&frame);
        if sent.is_err() {
            let r = self
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&tag);
            if let Some(r) = r {
                r(rlerror(tag, libc::EIO as u32));
            }
        }
    }
}

/// An `Rlerror` frame.
pub fn rlerror(tag: u16, errno: u32) -> Vec<u8> {
    let mut f = Vec::with_capacity(11);
    f.extend_from_slice(&11u32.to_le_bytes());
    f.push(7); // Rlerror
    f.extend_from_slice(&tag.to_le_bytes());
    f.extend_from_slice(&errno.to_le_bytes());
    f
}
