//! Device drivers. The only device today is the virtio-9p transport to the
//! gateway.
pub mod virtio9p;
