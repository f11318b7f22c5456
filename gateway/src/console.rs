//! `/dev/cons`: where the partition's console output goes and where its input
//! comes from, plus the cancellation token that lets a `Tflush` interrupt a
//! read that is waiting for input.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

/// Locks a mutex, ignoring poisoning (a panicking holder leaves plain data behind).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

type Hook = Box<dyn FnOnce() + Send>;

/// A request's cancellation token. A `Tflush` (or a `Tversion`, or the end of
/// the session) cancels it; code that waits must check
/// [`Cancel::is_cancelled`] and register a wake-up with [`Cancel::on_cancel`].
#[derive(Default)]
pub struct Cancel {
    flag: AtomicBool,
    hooks: Mutex<Vec<Hook>>,
    /// A socket read's place in its connection's order of reads, given in
    /// the order the requests arrived (`net::Conv::queue_read`), with what
    /// gives it up should the request never reach the read.
    order: Mutex<Option<Order>>,
}

type Order = (u64, Box<dyn FnOnce() + Send>);

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Cancel {
    /// A token that is not cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Records the request's place in its connection's order of reads;
    /// `release` gives it up (see [`release_order`](Self::release_order)).
    pub(crate) fn set_order(&self, ticket: u64, release: impl FnOnce() + Send + 'static) {
        *lock(&self.order) = Some((ticket, Box::new(release)));
    }

    /// The request's place in its connection's order of reads (0: none),
    /// now the caller's to give up.
    pub(crate) fn take_order(&self) -> u64 {
        let order = lock(&self.order).take();
        order.map_or(0, |(ticket, _)| ticket)
    }

    /// Gives up the request's place in the order of reads, if no read took
    /// it (the request failed or was cancelled before reaching the socket):
    /// later reads of the connection would wait for it for ever.
    pub(crate) fn release_order(&self) {
        let order = lock(&self.order).take();
        if let Some((_, release)) = order {
            release();
        }
    }

    /// `true` once the request has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Runs `hook` when the token is cancelled (at once if it already is).
    /// Use it to wake a thread that waits on a condition variable: take the
    /// waiter's mutex in the hook before notifying, so no wake-up is lost.
    pub fn on_cancel(&self, hook: impl FnOnce() + Send + 'static) {
        let mut hooks = lock(&self.hooks);
        if self.is_cancelled() {
            drop(hooks);
            hook();
        } else {
            hooks.push(Box::new(hook));
        }
    }

    /// Cancels the token and runs the registered hooks.
    pub fn cancel(&self) {
        let hooks = {
            let mut hooks = lock(&self.hooks);
            self.flag.store(true, Ordering::SeqCst);
            std::mem::take(&mut *hooks)
        };
        for hook in hooks {
            hook();
        }
    }
}

/// The console behind `/dev/cons`.
///
/// `write` receives what the partition writes; `read` blocks until input is
/// available, the input ends (return `Ok(Some(vec![]))`) or `cancel` fires
/// (return `Ok(None)`: the request is answered `EINTR`).
pub trait Console: Send + Sync {
    /// The partition wrote `data` to `/dev/cons`.
    fn write(&self, data: &[u8]) -> io::Result<()>;
    /// The partition reads at most `max` bytes from `/dev/cons`.
    fn read(&self, max: usize, cancel: &Cancel) -> io::Result<Option<Vec<u8>>>;
}

/// A buffer of console input with blocking, cancellable reads.
#[derive(Default)]
struct InputQueue {
    state: Mutex<InputState>,
    ready: Condvar,
}

#[derive(Default)]
struct InputState {
    data: VecDeque<u8>,
    eof: bool,
}

impl InputQueue {
    fn push(&self, bytes: &[u8]) {
        lock(&self.state).data.extend(bytes);
        self.ready.notify_all();
    }

    fn close(&self) {
        lock(&self.state).eof = true;
        self.ready.notify_all();
    }

    fn read(self: &Arc<Self>, max: usize, cancel: &Cancel) -> Option<Vec<u8>> {
        let me = Arc::clone(self);
        cancel.on_cancel(move || {
            drop(lock(&me.state));
            me.ready.notify_all();
        });
        let mut st = lock(&self.state);
        loop {
            if cancel.is_cancelled() {
                return None;
            }
            if !st.data.is_empty() {
                let n = max.min(st.data.len());
                return Some(st.data.drain(..n).collect());
            }
            if st.eof || max == 0 {
                return Some(Vec::new());
            }
            st = self.ready.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The default console: output to the gateway's stdout, input from its stdin.
///
/// Stdin is read by a helper thread started on the first read, so a read
/// waiting for a line can be cancelled and a process that never reads the
/// console never consumes its stdin.
#[derive(Default)]
pub struct StdioConsole {
    input: Arc<InputQueue>,
    pump: OnceLock<()>,
}

impl StdioConsole {
    /// A console on the process's stdin and stdout.
    pub fn new() -> StdioConsole {
        StdioConsole::default()
    }

    fn start_pump(&self) {
        self.pump.get_or_init(|| {
            let input = Arc::clone(&self.input);
            let spawned = std::thread::Builder::new()
                .name("gateway-stdin".into())
                .spawn(move || {
                    let mut buf = [0u8; 4096];
                    let mut stdin = io::stdin();
                    loop {
                        match stdin.read(&mut buf) {
                            Ok(0) => break,
                            Ok(n) => input.push(buf.get(..n).unwrap_or_default()),
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => {
                                tracing::warn!("console: reading stdin: {e}");
                                break;
                            }
                        }
                    }
                    input.close();
                });
            if let Err(e) = spawned {
                tracing::warn!("console: cannot start the stdin reader: {e}");
                self.input.close();
            }
        });
    }
}

impl Console for StdioConsole {
    fn write(&self, data: &[u8]) -> io::Result<()> {
        let mut out = io::stdout().lock();
        out.write_all(data)?;
        out.flush()
    }

    fn read(&self, max: usize, cancel: &Cancel) -> io::Result<Option<Vec<u8>>> {
        self.start_pump();
        Ok(self.input.read(max, cancel))
    }
}

/// An in-memory console for tests and embedders: input is pushed with
/// [`MemConsole::push_input`], output is collected for [`MemConsole::output`].
#[derive(Default)]
pub struct MemConsole {
    input: Arc<InputQueue>,
    output: Mutex<Vec<u8>>,
}

impl MemConsole {
    /// An empty console.
    pub fn new() -> MemConsole {
        MemConsole::default()
    }

    /// Makes `bytes` available to readers of `/dev/cons`.
    pub fn push_input(&self, bytes: &[u8]) {
        self.input.push(bytes);
    }

    /// Ends the input: readers get end-of-file once the buffer is drained.
    pub fn close_input(&self) {
        self.input.close();
    }

    /// Everything written to `/dev/cons` so far.
    pub fn output(&self) -> Vec<u8> {
        lock(&self.output).clone()
    }
}

impl Console for MemConsole {
    fn write(&self, data: &[u8]) -> io::Result<()> {
        lock(&self.output).extend_from_slice(data);
        Ok(())
    }

    fn read(&self, max: usize, cancel: &Cancel) -> io::Result<Option<Vec<u8>>> {
        Ok(self.input.read(max, cancel))
    }
}
