//! 9P2000.L codec (being written).
#![no_std]
