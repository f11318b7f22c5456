//! The vhost-user back end, driven by the `vhost` crate's frontend from this
//! test process: the test plays both the VMM (memory table, vring setup,
//! kick and call eventfds) and the guest driver (descriptors and rings in
//! memfd-backed "guest" memory).

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::os::fd::FromRawFd;
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    use astraea_9p::{NOFID, NONUNAME, NOTAG, RMessage, Str, TMessage, VERSION_9P2000L, WalkNames};
    use astraea_gateway::{
        Export, Gateway, GatewayConfig, VHOST_MOUNT_TAG, VhostStats, VhostUserServer,
    };
    use vhost::vhost_user::message::{
        VhostUserConfigFlags, VhostUserProtocolFeatures, VhostUserVirtioFeatures,
    };
    use vhost::vhost_user::{Frontend, VhostUserFrontend};
    use vhost::{VhostBackend, VhostUserMemoryRegionInfo, VringConfigData};
    use vm_memory::{
        Address, Bytes, FileOffset, GuestAddress, GuestMemoryBackend, GuestMemoryMmap,
    };
    use vmm_sys_util::eventfd::{EFD_NONBLOCK, EventFd};

    const TIMEOUT: Duration = Duration::from_secs(10);
    const QUEUE_SIZE: u16 = 64;
    /// Guest RAM: 1 MiB at 0, and 1 MiB above a "hole" at 4 GiB (like the
    /// VMM's split around the 32-bit MMIO hole), both in one memfd.
    const LOW: u64 = 0;
    const HIGH: u64 = 1 << 32;
    const REGION: u64 = 1 << 20;
    const DESC: u64 = 0x1000;
    const AVAIL: u64 = 0x2000;
    const USED: u64 = 0x3000;
    const F_VERSION_1: u64 = 1 << 32;
    const F_MOUNT_TAG: u64 = 1;
    const DESC_F_NEXT: u16 = 1;
    const DESC_F_WRITE: u16 = 2;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("astraea-vhost-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A gateway exporting `dir`, serving one VMM on a socket in `dir`.
    fn start_server(dir: &Path) -> (PathBuf, Arc<VhostStats>, JoinHandle<()>) {
        let export = dir.join("export");
        std::fs::create_dir_all(&export).unwrap();
        std::fs::write(export.join("hello.txt"), "hello over vhost-user\n").unwrap();
        let gw = Gateway::new(GatewayConfig {
            exports: vec![Export {
                host: export,
                guest: "/".into(),
                read_only: false,
            }],
            console: false,
            ..GatewayConfig::default()
        })
        .unwrap();
        let sock = dir.join("vhost.sock");
        let mut server = VhostUserServer::bind(&gw, &sock).unwrap();
        let stats = server.stats();
        let t = std::thread::spawn(move || server.serve_one().unwrap());
        (sock, stats, t)
    }

    fn memfd(size: u64) -> File {
        // SAFETY: memfd_create takes a NUL-terminated name and flags and
        // returns a new descriptor or -1; it touches no memory of ours.
        let fd = unsafe { libc::memfd_create(c"vhost-test-ram".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
        // SAFETY: `fd` was just created and is owned by nothing else.
        let f = unsafe { File::from_raw_fd(fd) };
        f.set_len(size).unwrap();
        f
    }

    /// The VMM and guest-driver halves of one virtio-9p device.
    struct Vmm {
        frontend: Frontend,
        mem: GuestMemoryMmap,
        kick: EventFd,
        call: EventFd,
        avail_idx: u16,
        used_seen: u16,
        next_buf: u64,
    }

    impl Vmm {
        fn connect(sock: &Path) -> Self {
            let file = Arc::new(memfd(2 * REGION));
            let mem = GuestMemoryMmap::from_ranges_with_files([
                (
                    GuestAddress(LOW),
                    REGION as usize,
                    Some(FileOffset::from_arc(file.clone(), 0)),
                ),
                (
                    GuestAddress(HIGH),
                    REGION as usize,
                    Some(FileOffset::from_arc(file, REGION)),
                ),
            ])
            .unwrap();
            let mut frontend = Frontend::connect(sock, 1).unwrap();
            frontend.set_owner().unwrap();
            let features = frontend.get_features().unwrap();
            assert_eq!(
                features & (F_VERSION_1 | F_MOUNT_TAG),
                F_VERSION_1 | F_MOUNT_TAG
            );
            let proto = VhostUserFeatures::PROTOCOL;
            assert_ne!(features & proto, 0, "the back end offers protocol features");
            let offered = frontend.get_protocol_features().unwrap();
            assert!(offered.contains(VhostUserProtocolFeatures::CONFIG));
            frontend
                .set_protocol_features(
                    offered
                        & (VhostUserProtocolFeatures::CONFIG
                            | VhostUserProtocolFeatures::REPLY_ACK),
                )
                .unwrap();
            frontend.set_hdr_flags(vhost::vhost_user::message::VhostUserHeaderFlag::NEED_REPLY);
            frontend
                .set_features(F_VERSION_1 | F_MOUNT_TAG | proto)
                .unwrap();
            let regions: Vec<_> = mem
                .iter()
                .map(|r| VhostUserMemoryRegionInfo::from_guest_region(r).unwrap())
                .collect();
            frontend.set_mem_table(&regions).unwrap();
            frontend.set_vring_num(0, QUEUE_SIZE).unwrap();
            let hva = |gpa: u64| mem.get_host_address(GuestAddress(gpa)).unwrap() as u64;
            frontend
                .set_vring_addr(
                    0,
                    &VringConfigData {
                        queue_max_size: 256,
                        queue_size: QUEUE_SIZE,
                        flags: 0,
                        desc_table_addr: hva(DESC),
                        used_ring_addr: hva(USED),
                        avail_ring_addr: hva(AVAIL),
                        log_addr: None,
                    },
                )
                .unwrap();
            frontend.set_vring_base(0, 0).unwrap();
            let kick = EventFd::new(EFD_NONBLOCK).unwrap();
            let call = EventFd::new(EFD_NONBLOCK).unwrap();
            frontend.set_vring_call(0, &call).unwrap();
            frontend.set_vring_kick(0, &kick).unwrap();
            frontend.set_vring_enable(0, true).unwrap();
            Vmm {
                frontend,
                mem,
                kick,
                call,
                avail_idx: 0,
                used_seen: 0,
                next_buf: HIGH,
            }
        }

        fn set_desc(&self, i: u16, addr: u64, len: u32, flags: u16, next: u16) {
            let at = GuestAddress(DESC + 16 * u64::from(i));
            self.mem.write_obj(addr, at).unwrap();
            self.mem.write_obj(len, at.unchecked_add(8)).unwrap();
            self.mem.write_obj(flags, at.unchecked_add(12)).unwrap();
            self.mem.write_obj(next, at.unchecked_add(14)).unwrap();
        }

        /// Posts a chain (request, reply room) at descriptors `2*slot`, `2*slot+1`,
        /// without kicking.
        fn post(&mut self, slot: u16, req: (u64, u32), reply: (u64, u32)) {
            let (d0, d1) = (2 * slot, 2 * slot + 1);
            self.set_desc(d0, req.0, req.1, DESC_F_NEXT, d1);
            self.set_desc(d1, reply.0, reply.1, DESC_F_WRITE, 0);
            let ring = GuestAddress(AVAIL + 4 + 2 * u64::from(self.avail_idx % QUEUE_SIZE));
            self.mem.write_obj(d0, ring).unwrap();
            self.avail_idx = self.avail_idx.wrapping_add(1);
            std::sync::atomic::fence(Ordering::SeqCst);
            self.mem
                .write_obj(self.avail_idx, GuestAddress(AVAIL + 2))
                .unwrap();
        }

        /// Room for a request and its reply in the high region.
        fn buffers(&mut self, req: &[u8], room: u32) -> ((u64, u32), (u64, u32)) {
            let r = self.next_buf;
            self.mem.write_slice(req, GuestAddress(r)).unwrap();
            let w = r + 0x1000;
            self.next_buf += 0x1000 + u64::from(room).next_multiple_of(0x1000);
            ((r, req.len() as u32), (w, room))
        }

        /// Waits for the next used element: (head, len).
        fn wait_used(&mut self) -> (u16, u32) {
            let t0 = Instant::now();
            loop {
                let idx: u16 = self.mem.read_obj(GuestAddress(USED + 2)).unwrap();
                if idx != self.used_seen {
                    let e = GuestAddress(USED + 4 + 8 * u64::from(self.used_seen % QUEUE_SIZE));
                    let id: u32 = self.mem.read_obj(e).unwrap();
                    let len: u32 = self.mem.read_obj(e.unchecked_add(4)).unwrap();
                    self.used_seen = self.used_seen.wrapping_add(1);
                    return (id as u16, len);
                }
                assert!(t0.elapsed() < TIMEOUT, "no used buffer within {TIMEOUT:?}");
                std::thread::sleep(Duration::from_millis(1));
            }
        }

        /// One request, start to finish; returns the reply frame.
        fn rpc(&mut self, msg: &TMessage<'_>, tag: u16) -> Vec<u8> {
            let mut req = Vec::new();
            msg.encode(tag, &mut req).unwrap();
            let (r, w) = self.buffers(&req, 8192);
            self.post(0, r, w);
            self.kick.write(1).unwrap();
            let (head, len) = self.wait_used();
            assert_eq!(head, 0);
            assert!(len >= 7, "empty reply");
            let mut reply = vec![0u8; len as usize];
            self.mem.read_slice(&mut reply, GuestAddress(w.0)).unwrap();
            reply
        }
    }

    /// `VhostUserVirtioFeatures::PROTOCOL_FEATURES` as a plain bit.
    struct VhostUserFeatures;
    impl VhostUserFeatures {
        const PROTOCOL: u64 = VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits();
    }

    fn join_within(t: JoinHandle<()>, what: &str) {
        let t0 = Instant::now();
        while !t.is_finished() {
            assert!(t0.elapsed() < TIMEOUT, "{what} did not finish");
            std::thread::sleep(Duration::from_millis(10));
        }
        t.join().unwrap();
    }

    #[test]
    fn requests_round_trip_through_shared_memory() {
        let dir = temp_dir("rt");
        let (sock, stats, server) = start_server(&dir);
        let mut vmm = Vmm::connect(&sock);

        // The config space: le16 tag length, then the tag.
        let (_, cfg) = vmm
            .frontend
            .get_config(0, 2 + 7, VhostUserConfigFlags::empty(), &[0; 9])
            .unwrap();
        assert_eq!(
            u16::from_le_bytes([cfg[0], cfg[1]]) as usize,
            VHOST_MOUNT_TAG.len()
        );
        assert_eq!(&cfg[2..], VHOST_MOUNT_TAG.as_bytes());

        let reply = vmm.rpc(
            &TMessage::Version {
                msize: 65536,
                version: Str::from(VERSION_9P2000L),
            },
            NOTAG,
        );
        match RMessage::from_bytes(&reply).unwrap() {
            (NOTAG, RMessage::Version { msize, version }) => {
                assert_eq!(
                    (msize, version.to_string().as_str()),
                    (65536, VERSION_9P2000L)
                );
            }
            other => panic!("Tversion answered {other:?}"),
        }
        let reply = vmm.rpc(
            &TMessage::Attach {
                fid: 0,
                afid: NOFID,
                uname: Str::from("test"),
                aname: Str::from(""),
                n_uname: NONUNAME,
            },
            1,
        );
        assert!(matches!(
            RMessage::from_bytes(&reply).unwrap(),
            (1, RMessage::Attach { .. })
        ));
        let names = [Str::from("hello.txt")];
        let reply = vmm.rpc(
            &TMessage::Walk {
                fid: 0,
                newfid: 1,
                names: WalkNames::new(&names).unwrap(),
            },
            2,
        );
        assert!(matches!(
            RMessage::from_bytes(&reply).unwrap(),
            (2, RMessage::Walk { .. })
        ));
        let reply = vmm.rpc(&TMessage::Lopen { fid: 1, flags: 0 }, 3);
        assert!(matches!(
            RMessage::from_bytes(&reply).unwrap(),
            (3, RMessage::Lopen { .. })
        ));
        let reply = vmm.rpc(
            &TMessage::Read {
                fid: 1,
                offset: 0,
                count: 4096,
            },
            4,
        );
        match RMessage::from_bytes(&reply).unwrap() {
            (4, RMessage::Read { data }) => assert_eq!(data, b"hello over vhost-user\n"),
            other => panic!("Tread answered {other:?}"),
        }
        // Every completion interrupted the "guest".
        assert!(vmm.call.read().unwrap() >= 1);
        assert_eq!(stats.replies.load(Ordering::Relaxed), 5);

        // Many requests in flight at once, answered in any order.
        let n = 16u16;
        let mut rooms = Vec::new();
        for slot in 0..n {
            let mut req = Vec::new();
            TMessage::Getattr {
                fid: 1,
                request_mask: 0x7ff,
            }
            .encode(100 + slot, &mut req)
            .unwrap();
            let (r, w) = vmm.buffers(&req, 4096);
            vmm.post(slot, r, w);
            rooms.push(w.0);
        }
        vmm.kick.write(1).unwrap();
        let mut heads: Vec<u16> = (0..n).map(|_| vmm.wait_used().0).collect();
        heads.sort_unstable();
        assert_eq!(heads, (0..n).map(|s| 2 * s).collect::<Vec<_>>());
        for (slot, w) in rooms.iter().enumerate() {
            let mut hdr = [0u8; 7];
            vmm.mem.read_slice(&mut hdr, GuestAddress(*w)).unwrap();
            let size = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]) as usize;
            let mut reply = vec![0u8; size];
            vmm.mem.read_slice(&mut reply, GuestAddress(*w)).unwrap();
            match RMessage::from_bytes(&reply).unwrap() {
                (tag, RMessage::Getattr { .. }) => assert_eq!(tag, 100 + slot as u16),
                other => panic!("Tgetattr answered {other:?}"),
            }
        }

        // The VMM goes away: the server returns.
        drop(vmm);
        join_within(server, "serve_one after the frontend disconnected");
        assert!(!sock.exists() || std::fs::remove_file(&sock).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn hostile_chains_are_answered_empty_and_the_device_keeps_serving() {
        let dir = temp_dir("hostile");
        let (sock, stats, server) = start_server(&dir);
        let mut vmm = Vmm::connect(&sock);
        let mut tversion = Vec::new();
        TMessage::Version {
            msize: 8192,
            version: Str::from(VERSION_9P2000L),
        }
        .encode(NOTAG, &mut tversion)
        .unwrap();
        let (good_req, good_reply) = vmm.buffers(&tversion, 4096);
        let hostile: [((u64, u32), (u64, u32)); 5] = [
            // Request in the gap between the two regions.
            ((REGION + 0x1000, 64), good_reply),
            // Reply room in the gap.
            (good_req, (0x8000_0000, 4096)),
            // A range that runs off the end of a region.
            (good_req, (HIGH + REGION - 16, 4096)),
            // An address that wraps around.
            ((u64::MAX - 8, 64), good_reply),
            // A request too short to be 9P.
            ((good_req.0, 3), good_reply),
        ];
        for (req, reply) in hostile {
            vmm.post(0, req, reply);
            vmm.kick.write(1).unwrap();
            assert_eq!(vmm.wait_used(), (0, 0), "{req:x?} {reply:x?}");
        }
        assert_eq!(stats.rejected.load(Ordering::Relaxed), 5);
        // Still serving.
        vmm.post(0, good_req, good_reply);
        vmm.kick.write(1).unwrap();
        let (_, len) = vmm.wait_used();
        let mut reply = vec![0u8; len as usize];
        vmm.mem
            .read_slice(&mut reply, GuestAddress(good_reply.0))
            .unwrap();
        assert!(matches!(
            RMessage::from_bytes(&reply).unwrap(),
            (NOTAG, RMessage::Version { .. })
        ));
        drop(vmm);
        join_within(server, "serve_one after the frontend disconnected");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bind_refuses_a_path_that_is_not_a_socket() {
        let dir = temp_dir("bind");
        let gw = Gateway::new(GatewayConfig::default()).unwrap();
        let file = dir.join("not-a-socket");
        std::fs::write(&file, "keep me").unwrap();
        let err = VhostUserServer::bind(&gw, &file).unwrap_err();
        assert!(err.to_string().contains("cannot listen"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
        let err = VhostUserServer::bind(&gw, dir.join("missing/sock")).unwrap_err();
        assert!(err.to_string().contains("directory exists"), "{err}");
        // A stale socket is replaced, and removed again when the server goes.
        let sock = dir.join("stale.sock");
        drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
        assert!(sock.exists());
        let mut server = VhostUserServer::bind(&gw, &sock).unwrap();
        assert!(server.set_tag("").is_err());
        assert!(server.set_tag(&"x".repeat(257)).is_err());
        server.set_tag("other").unwrap();
        drop(server);
        assert!(!sock.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
