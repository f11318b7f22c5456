//! A partition's files through its virtio-9p device, forwarded over TCP to
//! rs9p's unpfs (crates.io), a 9P server nobody here wrote.

mod common;

#[cfg(test)]
mod tests {
    use super::common::{Peer, PeerExport, files_scenario};
    use astraea_tests::*;

    #[test]
    fn partition_lists_reads_writes_renames_and_deletes_through_unpfs() {
        if !kvm_available() {
            return;
        }
        let Some(ex) = PeerExport::start(Peer::Unpfs, "unpfs") else {
            return;
        };
        files_scenario(&ex);
    }
}
