//! The gateway: the 9P2000.L server on the controller that gives a partition
//! its files and console.
//!
//! * A [`Gateway`] holds the namespace built from a [`GatewayConfig`]: host
//!   directories exported read-only or read-write at guest paths (a
//!   directory that only holds a deeper mount point is the enclosing
//!   export's, as under a bind mount, or synthetic and read-only where
//!   that export has none),
//!   `/dev/cons` (the [`Console`]), `/env` (one file per variable) and
//!   `/net/tcp` when asked for (TCP connections as files, Plan 9 style,
//!   subject to a [`NetPolicy`]).
//! * A [`Session`] is one 9P connection: [`Session::submit`] takes one
//!   T-message frame and calls back once with the R-message frame. Requests
//!   run concurrently on a worker pool; `Tflush` follows flush(5).
//! * [`serve_stream`] serves a TCP or unix-socket byte stream with a session.
//!
//! Every path is resolved with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS)` beneath its export's root descriptor, so `..`
//! and symlinks cannot leave an export. The gateway runs with the launching
//! user's rights and never changes them.
//!
//! ```no_run
//! use astraea_gateway::{Export, Gateway, GatewayConfig};
//! let gw = Gateway::new(GatewayConfig {
//!     exports: vec![Export { host: "/srv/data".into(), guest: "/".into(), read_only: true }],
//!     ..GatewayConfig::default()
//! })?;
//! let listener = std::net::TcpListener::bind("127.0.0.1:5640")?;
//! for conn in listener.incoming() {
//!     let gw = gw.clone();
//!     let conn = conn?;
//!     std::thread::spawn(move || astraea_gateway::serve_stream(&gw, conn));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod console;
mod error;
mod namespace;
mod net;
mod netpolicy;
mod ops;
mod pool;
mod saved;
mod session;
mod stream;
mod sys;
mod vhost;

use std::path::PathBuf;
use std::sync::Arc;

pub use console::{Cancel, Console, MemConsole, StdioConsole};
pub use error::{Errno, GatewayError};
pub use net::{AllowAll, NetPolicy, Published, SavedConv};
pub use netpolicy::{AllowList, NetRule, NetRuleError};
pub use ops::MIN_MSIZE;
pub use saved::{
    RestoreReport, SaveError, SavedFid, SavedNetConv, SavedNode, SavedOpen, SavedSession,
};
pub use session::{Reply, Session, serve_here};
pub use stream::{Stream, serve_stream};
pub use sys::{raise_descriptor_limit, tolerate_file_size_limit};
pub use vhost::{
    KICK_POLL, MAX_TAG_LEN, PolledQueue, Request, VHOST_MOUNT_TAG, VHOST_QUEUE_SIZE, VhostError,
    VhostStats, VhostUserServer, gather_request, log_rejected_chain, scatter_reply, serve_kick,
};

/// The largest msize the gateway negotiates (1 MiB).
pub const MAX_MSIZE: u32 = 1 << 20;

/// Hard cap on worker threads (shared by all sessions of a gateway).
const MAX_WORKERS: usize = 1024;

/// A host directory exported into the guest's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// The host directory.
    pub host: PathBuf,
    /// Where it appears in the guest: an absolute path, `/` allowed.
    pub guest: String,
    /// Refuse every change (`EROFS`).
    pub read_only: bool,
}

/// What a [`Gateway`] serves and its limits.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The exported host directories.
    pub exports: Vec<Export>,
    /// The largest msize offered in `Rversion` (at least [`MIN_MSIZE`], at
    /// most [`MAX_MSIZE`]; default 1 MiB).
    pub max_msize: u32,
    /// Fids per session; more are refused with `EMFILE`.
    pub max_fids: usize,
    /// Requests in flight per session; more are refused with `EAGAIN`.
    pub max_outstanding: usize,
    /// The launch environment, served as `/env/NAME`.
    pub env: Vec<(String, String)>,
    /// Serve `/dev/cons`.
    pub console: bool,
    /// Serve `/net/tcp`: TCP connections made and accepted by the host for
    /// the client (the library OS's sockets). Off by default: a gateway
    /// listening on TCP must not turn into a proxy for whoever reaches it;
    /// `astraea run` turns it on for its partition (`--net`).
    pub net: bool,
    /// Which connects and announces `/net` allows (default: all).
    pub net_policy: Arc<dyn NetPolicy>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            exports: Vec::new(),
            max_msize: MAX_MSIZE,
            // A socket of the partition holds two fids (ctl, data) and, with
            // the streaming layer, a read in flight all the time.
            max_fids: 16384,
            max_outstanding: 16384,
            env: Vec::new(),
            console: true,
            net: false,
            net_policy: Arc::new(AllowAll),
        }
    }
}

/// The shared server state: namespace, limits, console and worker pool.
pub struct Gateway {
    pub(crate) ns: namespace::Namespace,
    pub(crate) max_msize: u32,
    pub(crate) max_fids: usize,
    pub(crate) max_outstanding: usize,
    pub(crate) console: Option<Arc<dyn Console>>,
    pub(crate) pool: pool::Pool,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field(
                "exports",
                &self.ns.exports.iter().map(|e| &e.host).collect::<Vec<_>>(),
            )
            .field("max_msize", &self.max_msize)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Builds the namespace; `/dev/cons` (if enabled) uses the process's stdio.
    pub fn new(cfg: GatewayConfig) -> Result<Arc<Gateway>, GatewayError> {
        Gateway::with_console(cfg, Arc::new(StdioConsole::new()))
    }

    /// Like [`Gateway::new`], with `/dev/cons` served by `console`.
    pub fn with_console(
        cfg: GatewayConfig,
        console: Arc<dyn Console>,
    ) -> Result<Arc<Gateway>, GatewayError> {
        if !(MIN_MSIZE..=MAX_MSIZE).contains(&cfg.max_msize) {
            return Err(GatewayError::InvalidConfig(format!(
                "max_msize {} is outside {MIN_MSIZE}..={MAX_MSIZE}",
                cfg.max_msize
            )));
        }
        if cfg.max_fids == 0 || cfg.max_outstanding == 0 {
            return Err(GatewayError::InvalidConfig(
                "max_fids and max_outstanding must be at least 1".into(),
            ));
        }
        let ns = namespace::Namespace::new(&cfg)?;
        Ok(Arc::new(Gateway {
            ns,
            max_msize: cfg.max_msize,
            max_fids: cfg.max_fids,
            max_outstanding: cfg.max_outstanding,
            console: cfg.console.then_some(console),
            pool: pool::Pool::new(2, MAX_WORKERS),
        }))
    }

    /// Worker threads the gateway runs now, and how many of them are busy
    /// with a request: one starts whenever every other is busy, and an idle
    /// one leaves after 30 s. Requests parked on the network hold none (for
    /// monitoring, and tests of that).
    pub fn worker_threads(&self) -> (usize, usize) {
        self.pool.threads()
    }

    /// Starts a new 9P connection whose replies may block (a socket).
    pub fn session(self: &Arc<Self>) -> Session {
        Session::new(Arc::clone(self), false)
    }

    /// Starts a new 9P connection whose replies never block: they go into a
    /// virtqueue in shared memory (the VMM's device, a vhost-user
    /// back end). A request that waited for the network is then answered
    /// on the network's poll thread when its socket is ready, without a
    /// hop through the worker pool (one host thread wake-up less per
    /// reply).
    pub fn session_nonblocking(self: &Arc<Self>) -> Session {
        Session::new(Arc::clone(self), true)
    }
}
