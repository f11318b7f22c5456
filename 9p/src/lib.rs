//! A `no_std` + `alloc` codec for 9P2000.L, in the style of smoltcp's `wire` module.
//!
//! * [`Frame::new_checked`] validates one complete message (`size[4]` must
//!   equal the buffer length) and exposes `size`, `msg_type`, `tag` and `body`
//!   without copying.
//! * [`TMessage::decode`], [`RMessage::decode`] and [`Message::decode`] turn
//!   a frame into a typed message that borrows its strings ([`Str`]) and
//!   payloads (`&[u8]`) from the frame. Decoding is strict: unknown types,
//!   short fields, more than [`MAXWELEM`] walk elements and trailing bytes
//!   are all errors.
//! * `encode` / `encode_to_slice` write `size[4] type[1] tag[2] body`
//!   (little-endian) into a `Vec<u8>` or a `&mut [u8]`; re-encoding a decoded
//!   message reproduces the input bytes exactly.
//! * [`DirEntryIter`] and [`DirEntryWriter`] read and build `Rreaddir` data.
//! * [`encode_rread_header`] and friends produce the fixed headers of
//!   `Rread`/`Rreaddir`/`Twrite` for transports that send the payload from
//!   a separate buffer.
//!
//! No input can make the codec panic, read out of bounds, or allocate
//! memory proportional to a length field (decoding does not allocate at
//! all). The wire layouts follow diod's `protocol.md`; type numbers follow
//! Linux `include/net/9p/9p.h`.
//!
//! ```
//! use astraea_9p::{Frame, TMessage, Str, NOTAG, VERSION_9P2000L};
//!
//! let mut buf = Vec::new();
//! TMessage::Version { msize: 8192, version: Str::from(VERSION_9P2000L) }
//!     .encode(NOTAG, &mut buf)
//!     .unwrap();
//! let frame = Frame::new_checked(&buf).unwrap();
//! assert_eq!(frame.tag(), NOTAG);
//! match TMessage::decode(&frame).unwrap() {
//!     TMessage::Version { msize, version } => {
//!         assert_eq!(msize, 8192);
//!         assert_eq!(version, "9P2000.L");
//!     }
//!     _ => unreachable!(),
//! }
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// The codec handles untrusted bytes: make panicking constructs a build error.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unreachable,
    clippy::todo,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

extern crate alloc;

pub mod consts;
mod dirent;
mod error;
mod message;
mod wire;

pub use consts::*;
pub use dirent::{DirEntry, DirEntryIter, DirEntryWriter};
pub use error::Error;
pub use message::{
    Flock, Getlock, Message, RMessage, SetAttr, Stat, StatFs, TMessage, WalkNames, WalkNamesIter,
    WalkQids, WalkQidsIter, encode_rread_header, encode_rreaddir_header, encode_twrite_header,
};
pub use wire::{Frame, Header, Qid, Str};
