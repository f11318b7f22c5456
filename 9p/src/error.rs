//! The codec's error type.

use core::fmt;

/// Everything that can go wrong while decoding or encoding a 9P2000.L message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[expect(
    clippy::error_impl_error,
    reason = "the public name `astraea_9p::Error` mirrors smoltcp's `wire::Error`; \
              callers refer to it through the crate path"
)]
pub enum Error {
    /// The input ended before a header, field, string or payload was complete.
    Truncated,
    /// The `size[4]` field disagrees with the length of the buffer (or is
    /// smaller than the 7-byte header).
    SizeMismatch,
    /// The type byte is not a 9P2000.L message type.
    UnknownType(u8),
    /// The type byte is valid but of the wrong direction: an R-message where
    /// a T-message was expected, or the reverse.
    UnexpectedType(u8),
    /// A `Twalk` carries (or would carry) more than [`MAXWELEM`](crate::MAXWELEM) names.
    TooManyWalkNames,
    /// An `Rwalk` carries (or would carry) more than [`MAXWELEM`](crate::MAXWELEM) qids.
    TooManyWalkQids,
    /// A string to encode is longer than 65535 bytes.
    StringTooLong,
    /// Bytes remain after the last field of a message.
    TrailingBytes,
    /// The output buffer (or a readdir byte budget) is too small.
    BufferTooSmall,
    /// The encoded message or a payload would exceed `u32::MAX` bytes.
    MessageTooLarge,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated => f.write_str("9P message truncated"),
            Error::SizeMismatch => f.write_str("9P size field does not match the buffer length"),
            Error::UnknownType(ty) => write!(f, "unknown 9P2000.L message type {ty}"),
            Error::UnexpectedType(ty) => {
                write!(f, "9P message type {ty} has the wrong direction (T/R)")
            }
            Error::TooManyWalkNames => f.write_str("more than 16 walk names"),
            Error::TooManyWalkQids => f.write_str("more than 16 walk qids"),
            Error::StringTooLong => f.write_str("string longer than 65535 bytes"),
            Error::TrailingBytes => f.write_str("trailing bytes after 9P message"),
            Error::BufferTooSmall => f.write_str("output buffer too small"),
            Error::MessageTooLarge => f.write_str("9P message larger than 4 GiB"),
        }
    }
}

impl core::error::Error for Error {}
