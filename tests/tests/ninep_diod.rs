//! A partition's files through its virtio-9p device, forwarded over TCP to
//! diod (Debian's 9P server, which nobody here wrote).

mod common;

#[cfg(test)]
mod tests {
    use super::common::{Peer, PeerExport, files_scenario};
    use astraea_tests::*;

    #[test]
    fn partition_lists_reads_writes_renames_and_deletes_through_diod() {
        if !kvm_available() {
            return;
        }
        let Some(ex) = PeerExport::start(Peer::Diod, "diod") else {
            return;
        };
        files_scenario(&ex);
    }

    #[test]
    fn descriptors_outside_guest_memory_are_refused() {
        if !kvm_available() {
            return;
        }
        let Some(ex) = PeerExport::start(Peer::Diod, "diod-hostile") else {
            return;
        };
        let r = ex.run("9p-hostile");
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(r.stdout.matches("refused:").count(), 4, "{r:?}");
        assert!(r.stdout.contains("device still serves"), "{r:?}");
    }

    #[test]
    fn unreachable_9p_server_is_a_clear_error() {
        if !kvm_available() {
            return;
        }
        let r = astraea_cmd(&["run", "--9p", "tcp:127.0.0.1:1"]);
        assert_eq!(r.code, 125, "{r:?}");
        assert!(
            r.stderr
                .contains("cannot connect to the 9P server at 127.0.0.1:1"),
            "{r:?}"
        );
    }
}
