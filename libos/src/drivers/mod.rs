//! Device drivers. The only device today is the virtio-9p transport to the
//! gateway; which of its doorbells to ring is a policy of its own
//! (`doorbell`), tested on the host.
pub mod doorbell;
#[cfg(target_os = "none")]
pub mod virtio9p;
