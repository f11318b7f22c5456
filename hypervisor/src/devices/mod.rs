//! Devices of a partition: the virtio-mmio transport and the 9P device behind it.
pub mod virtio9p;
