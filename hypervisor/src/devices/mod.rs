//! Devices of a partition: the virtio-mmio transport and the 9P device behind
//! it, served in process or by a vhost-user gateway.
pub mod vhost_user;
pub mod virtio9p;
