//! Serving a byte stream (TCP or unix socket): frames are read on the
//! calling thread, handled concurrently, and replies are written whole, in
//! the order they complete.

use std::io::{self, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use astraea_9p::HEADER_LEN;

use crate::console::lock;
use crate::{Gateway, GatewayError};

/// How long a closing stream waits for the replies still in flight.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// A bidirectional byte stream that can be split into a reader and a writer.
pub trait Stream: Read + Write + Send + Sized + 'static {
    /// A second handle on the same stream (used for writing replies).
    fn try_clone(&self) -> io::Result<Self>;
    /// Closes both directions (best effort).
    fn shutdown(&self) {}
}

impl Stream for TcpStream {
    fn try_clone(&self) -> io::Result<Self> {
        TcpStream::try_clone(self)
    }

    fn shutdown(&self) {
        let _ = TcpStream::shutdown(self, std::net::Shutdown::Both);
    }
}

impl Stream for UnixStream {
    fn try_clone(&self) -> io::Result<Self> {
        UnixStream::try_clone(self)
    }

    fn shutdown(&self) {
        let _ = UnixStream::shutdown(self, std::net::Shutdown::Both);
    }
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` on a clean end of stream
/// before the first byte.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<bool> {
    let mut done = 0;
    while let Some(rest) = buf.get_mut(done..).filter(|b| !b.is_empty()) {
        match r.read(rest) {
            Ok(0) if done == 0 => return Ok(false),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Serves one byte stream (TCP or unix socket) until EOF or a framing error,
/// with requests handled concurrently.
///
/// A frame whose `size[4]` is below 7 or above the negotiated msize closes
/// the stream ([`GatewayError::Framing`]); a well-sized frame with bad
/// contents gets `Rlerror(EINVAL)` and the stream goes on. When the stream
/// ends, outstanding requests are cancelled and the session's fids released.
pub fn serve_stream<S: Stream>(gw: &Arc<Gateway>, stream: S) -> Result<(), GatewayError> {
    let writer = Arc::new(Mutex::new(stream.try_clone()?));
    let mut reader = BufReader::with_capacity(64 * 1024, stream);
    let session = gw.session();
    let result = loop {
        let mut size = [0u8; 4];
        match read_full(&mut reader, &mut size) {
            Ok(true) => {}
            Ok(false) => break Ok(()),
            Err(e) => break Err(e.into()),
        }
        let size = u32::from_le_bytes(size);
        let msize = session.msize();
        let Some(len) = usize::try_from(size)
            .ok()
            .filter(|&n| n >= HEADER_LEN && size <= msize)
        else {
            tracing::warn!(size, msize, "closing a 9P stream: bad message size");
            break Err(GatewayError::Framing { size, msize });
        };
        let mut frame = vec![0u8; len];
        let (head, body) = frame.split_at_mut(4);
        head.copy_from_slice(&size.to_le_bytes());
        match read_full(&mut reader, body) {
            Ok(true) => {}
            Ok(false) => break Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
            Err(e) => break Err(e.into()),
        }
        let writer = Arc::clone(&writer);
        session.submit(
            frame,
            Box::new(move |reply| {
                let mut w = lock(&writer);
                if let Err(e) = w.write_all(&reply).and_then(|()| w.flush()) {
                    tracing::debug!("dropping a reply: {e}");
                }
            }),
        );
    };
    // Answer what is still in flight before closing (a client that
    // half-closed still gets its replies; blocked reads are cancelled after
    // a grace period).
    session.shutdown(SHUTDOWN_WAIT);
    lock(&writer).shutdown();
    drop(session);
    result
}
