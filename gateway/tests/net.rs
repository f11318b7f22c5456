//! `/net/tcp` through the in-memory client, against real host sockets.

mod common;

// Wrapped in a test module for `clippy::tests_outside_test_module`.
#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use astraea_9p::*;
    use astraea_gateway::{Gateway, GatewayConfig, MemConsole, NetPolicy};

    use crate::common::*;

    const ENOENT: u32 = libc::ENOENT as u32;
    const EINTR: u32 = libc::EINTR as u32;
    const EINVAL: u32 = libc::EINVAL as u32;
    const EACCES: u32 = libc::EACCES as u32;
    const ECONNREFUSED: u32 = libc::ECONNREFUSED as u32;
    const EADDRINUSE: u32 = libc::EADDRINUSE as u32;

    fn gateway_with(cfg: GatewayConfig) -> Arc<Gateway> {
        Gateway::with_console(cfg, Arc::new(MemConsole::new())).unwrap()
    }

    /// A client of a gateway that serves nothing but `/net` (and `/env`, `/dev`).
    struct Net {
        c: Client,
        next_fid: AtomicU32,
    }

    impl Net {
        fn new() -> Net {
            Net::with(GatewayConfig::default())
        }

        /// `cfg` with the network on (it is off by default).
        fn with(cfg: GatewayConfig) -> Net {
            Net::exactly(GatewayConfig { net: true, ..cfg })
        }

        fn exactly(cfg: GatewayConfig) -> Net {
            Net::on(&gateway_with(cfg))
        }

        /// A new session of `gw`.
        fn on(gw: &Arc<Gateway>) -> Net {
            Net {
                c: Client::attached(gw),
                next_fid: AtomicU32::new(100),
            }
        }

        fn fid(&self) -> u32 {
            self.next_fid.fetch_add(1, Ordering::Relaxed)
        }

        /// Walks to `path` and opens it read-write; returns the fid.
        fn open(&self, path: &str) -> Result<u32, u32> {
            self.open_with(path, P9_DOTL_RDWR)
        }

        fn open_with(&self, path: &str, flags: u32) -> Result<u32, u32> {
            let fid = self.fid();
            self.c.walk_path(fid, path)?;
            if let Err(e) = self.c.lopen(fid, flags) {
                self.c.clunk(fid).unwrap();
                return Err(e);
            }
            Ok(fid)
        }

        fn read_text(&self, fid: u32) -> String {
            String::from_utf8(self.c.read(fid, 0, 256).unwrap()).unwrap()
        }

        /// Opens `clone`: the ctl fid and the connection number.
        fn clone_conv(&self) -> (u32, usize) {
            let ctl = self.open("net/tcp/clone").unwrap();
            let n = self.read_text(ctl).parse().unwrap();
            (ctl, n)
        }

        fn ctl(&self, ctl: u32, text: &str) -> Result<(), u32> {
            let n = self.c.write(ctl, 0, text.as_bytes())?;
            assert_eq!(n as usize, text.len());
            Ok(())
        }

        fn file(&self, n: usize, name: &str) -> String {
            self.file_of("tcp", n, name)
        }

        fn file_of(&self, proto: &str, n: usize, name: &str) -> String {
            let fid = self
                .open_with(&format!("net/{proto}/{n}/{name}"), P9_DOTL_RDONLY)
                .unwrap();
            let text = self.read_text(fid);
            self.c.clunk(fid).unwrap();
            text
        }

        /// Connects a new connection to `addr`: (ctl fid, data fid, N).
        fn dial(&self, addr: SocketAddr) -> (u32, u32, usize) {
            let (ctl, n) = self.clone_conv();
            self.ctl(ctl, &format!("connect {}!{}", addr.ip(), addr.port()))
                .unwrap();
            let data = self.open(&format!("net/tcp/{n}/data")).unwrap();
            (ctl, data, n)
        }

        fn write_all(&self, fid: u32, mut data: &[u8]) {
            while !data.is_empty() {
                let chunk = &data[..data.len().min(64 * 1024)];
                let n = self.c.write(fid, 0, chunk).unwrap() as usize;
                assert!(n > 0 && n <= chunk.len());
                data = &data[n..];
            }
        }

        fn read_exact(&self, fid: u32, len: usize) -> Vec<u8> {
            let mut out = Vec::new();
            while out.len() < len {
                let want = (len - out.len()).min(64 * 1024) as u32;
                let chunk = self.c.read(fid, 0, want).unwrap();
                assert!(!chunk.is_empty(), "EOF after {} of {len} bytes", out.len());
                out.extend(chunk);
            }
            out
        }
    }

    fn listener() -> (TcpListener, SocketAddr) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        (l, a)
    }

    /// A host socket bound to a loopback port and not listening: a connect
    /// to it is refused for as long as it is held (a closed port could be
    /// taken by another test meanwhile).
    fn refusing_port() -> (socket2::Socket, SocketAddr) {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        s.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .unwrap();
        let a = s.local_addr().unwrap().as_socket().unwrap();
        (s, a)
    }

    fn port_of(local: &str) -> u16 {
        local
            .strip_prefix("127.0.0.1!")
            .and_then(|p| p.strip_suffix('\n'))
            .unwrap()
            .parse()
            .unwrap()
    }

    fn accept(l: &TcpListener) -> TcpStream {
        let (s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        s
    }

    fn host_read_exact(s: &mut TcpStream, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        s.read_exact(&mut buf).unwrap();
        buf
    }

    fn read_req(fid: u32, tag: u16) -> Vec<u8> {
        encode(
            tag,
            &TMessage::Read {
                fid,
                offset: 0,
                count: 4096,
            },
        )
    }

    /// The soft limit on open files.
    fn fd_limit() -> usize {
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
        limits
            .lines()
            .find_map(|l| l.strip_prefix("Max open files"))
            .and_then(|l| l.split_whitespace().next())
            .map_or(1024, |v| v.parse().unwrap_or(usize::MAX))
    }

    /// A gateway with the network on that takes `n` requests in flight.
    fn busy_gateway(n: usize) -> Arc<Gateway> {
        gateway_with(GatewayConfig {
            net: true,
            max_outstanding: n + 64,
            ..GatewayConfig::default()
        })
    }

    /// Dials `n` connections, each accepted by the host: (data fid, host).
    fn dial_many(net: &Net, n: usize) -> Vec<(u32, TcpStream)> {
        let (l, addr) = listener();
        (0..n)
            .map(|_| {
                let (_ctl, data, _) = net.dial(addr);
                (data, accept(&l))
            })
            .collect()
    }

    /// Waits until a reply arrives on none of `rx` for a moment: the
    /// requests are parked (or at least not answered).
    fn none_answered(rx: &[std::sync::mpsc::Receiver<Vec<u8>>]) {
        std::thread::sleep(Duration::from_millis(200));
        for r in rx {
            assert!(r.try_recv().is_err(), "a read completed without data");
        }
    }

    fn threads() -> usize {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn tree_is_listed_and_walkable() {
        let net = Net::new();
        let root = net.c.ls("/").unwrap();
        assert!(root.contains(&"net".to_string()), "{root:?}");
        assert_eq!(net.c.ls("net").unwrap(), vec!["ifaces", "tcp", "udp"]);
        // The host's interfaces: loopback among them, read-only.
        let fid = net.open_with("net/ifaces", P9_DOTL_RDONLY).unwrap();
        let ifaces = net.read_text(fid);
        net.c.clunk(fid).unwrap();
        assert!(
            ifaces.lines().any(|l| l.starts_with("iface lo 1 ")),
            "{ifaces}"
        );
        assert!(
            ifaces.contains("inet lo 127.0.0.1 255.0.0.0 -\n"),
            "{ifaces}"
        );
        let fid = net.fid();
        net.c.walk_path(fid, "net/ifaces").unwrap();
        assert_eq!(net.c.lopen(fid, P9_DOTL_WRONLY), Err(libc::EACCES as u32));
        net.c.clunk(fid).unwrap();
        assert_eq!(net.c.ls("net/udp").unwrap(), vec!["clone"]);
        assert_eq!(net.c.ls("net/tcp").unwrap(), vec!["clone"]);
        let (ctl, n) = net.clone_conv();
        assert_eq!(n, 0);
        assert_eq!(net.c.ls("net/tcp").unwrap(), vec!["0", "clone"]);
        assert_eq!(
            net.c.ls("net/tcp/0").unwrap(),
            vec!["ctl", "data", "listen", "local", "remote", "status"]
        );
        assert_eq!(net.file(0, "status"), "Closed\n");
        assert_eq!(net.file(0, "ctl"), "0");
        // `..` from a connection file's directory leads back up.
        let fid = net.fid();
        net.c.walk_path(fid, "net/tcp/0").unwrap();
        net.c.walk(fid, fid, &["..", "..", "..", "net"]).unwrap();
        net.c.clunk(fid).unwrap();
        // Read-only files cannot be opened for writing.
        let fid = net.fid();
        net.c.walk_path(fid, "net/tcp/0/status").unwrap();
        assert_eq!(net.c.lopen(fid, P9_DOTL_WRONLY), Err(libc::EACCES as u32));
        net.c.clunk(fid).unwrap();
        // The last clunk frees the number.
        net.c.clunk(ctl).unwrap();
        assert_eq!(net.c.walk_path(net.fid(), "net/tcp/0"), Err(ENOENT));
        assert_eq!(net.c.ls("net/tcp").unwrap(), vec!["clone"]);
        // A gateway configured without the network (the default) has no /net.
        let off = Net::exactly(GatewayConfig::default());
        assert_eq!(off.c.walk_path(1, "net"), Err(ENOENT));
    }

    /// Multicast options through `sockopt`: set on the host socket (its
    /// errno is the answer), hostile text refused, TCP refused.
    #[test]
    fn udp_multicast_options_reach_the_host_socket() {
        let net = Net::new();
        let ctl = net.open("net/udp/clone").unwrap();
        let join = "sockopt 0 35 ef4d4d1f00000000"; // 239.77.77.31, any interface
        // No host socket yet: the client binds first.
        assert_eq!(net.ctl(ctl, join), Err(libc::EINVAL as u32));
        net.ctl(ctl, "headers").unwrap();
        net.ctl(ctl, "announce 0.0.0.0!0").unwrap();
        net.ctl(ctl, join).unwrap();
        assert_eq!(net.ctl(ctl, join), Err(libc::EADDRINUSE as u32));
        // Not a multicast group; an interface index that does not exist.
        assert_eq!(
            net.ctl(ctl, "sockopt 0 35 0a01020300000000"),
            Err(libc::EINVAL as u32)
        );
        assert_eq!(
            net.ctl(ctl, "sockopt 0 35 ef4d4d2000000000e7030000"),
            Err(libc::ENODEV as u32)
        );
        net.ctl(ctl, "sockopt 0 33 05000000").unwrap();
        net.ctl(ctl, "sockopt 0 36 ef4d4d1f00000000").unwrap();
        assert_eq!(
            net.ctl(ctl, "sockopt 0 36 ef4d4d1f00000000"),
            Err(libc::EADDRNOTAVAIL as u32)
        );
        let long = format!("sockopt 0 35 {}", "00".repeat(40));
        for (text, e) in [
            ("sockopt 1 2 01000000", libc::ENOPROTOOPT),
            ("sockopt 6 1 01000000", libc::ENOPROTOOPT),
            ("sockopt 0 35 zz", libc::EINVAL),
            ("sockopt 0 35 0", libc::EINVAL),
            ("sockopt 0", libc::EINVAL),
            ("sockopt -1 -1 00", libc::ENOPROTOOPT),
            (long.as_str(), libc::EINVAL),
        ] {
            assert_eq!(net.ctl(ctl, text), Err(e as u32), "{text}");
        }
        // A TCP connection takes none of them.
        let (tcp, _) = net.clone_conv();
        assert_eq!(net.ctl(tcp, join), Err(libc::EINVAL as u32));
    }

    /// One UDP datagram each way through `/net/udp` in `headers` mode: the
    /// header carries the peer's address; the policy is checked for every
    /// datagram's destination.
    #[test]
    fn udp_datagrams_with_headers() {
        let host = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        host.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let haddr = host.local_addr().unwrap();
        let net = Net::new();
        let ctl = net.open("net/udp/clone").unwrap();
        let n: usize = net.read_text(ctl).parse().unwrap();
        assert_eq!(net.ctl(ctl, "nodelay"), Err(libc::EINVAL as u32));
        net.ctl(ctl, "headers").unwrap();
        net.ctl(ctl, "announce 127.0.0.1!0").unwrap();
        let local = net.file_of("udp", n, "local");
        let port: u16 = local.trim().rsplit_once('!').unwrap().1.parse().unwrap();
        assert_ne!(port, 0, "{local}");
        let data = net.open(&format!("net/udp/{n}/data")).unwrap();
        // Host to partition.
        host.send_to(b"ping", ("127.0.0.1", port)).unwrap();
        let got = net.c.read(data, 0, 70_000).unwrap();
        assert_eq!(got.len(), 52 + 4);
        assert_eq!(
            &got[..16],
            &std::net::Ipv4Addr::LOCALHOST.to_ipv6_mapped().octets()
        );
        assert_eq!(u16::from_be_bytes([got[48], got[49]]), haddr.port());
        assert_eq!(u16::from_be_bytes([got[50], got[51]]), port);
        assert_eq!(&got[52..], b"ping");
        // Partition to host: the header names the destination.
        let mut out = got[..52].to_vec();
        out.extend_from_slice(b"pong!");
        assert_eq!(net.c.write(data, 0, &out).unwrap() as usize, out.len());
        let mut buf = [0u8; 64];
        let (m, from) = host.recv_from(&mut buf).unwrap();
        assert_eq!((&buf[..m], from.port()), (&b"pong!"[..], port));
        // A header too short, and a destination of port 0.
        assert_eq!(net.c.write(data, 0, b"short"), Err(libc::EINVAL as u32));
        let mut zero = out.clone();
        zero[48] = 0;
        zero[49] = 0;
        assert_eq!(net.c.write(data, 0, &zero), Err(libc::EINVAL as u32));
        net.c.clunk(data).unwrap();
        net.c.clunk(ctl).unwrap();

        // A policy that allows nothing refuses every datagram's destination.
        let none = Net::with(GatewayConfig {
            net_policy: Arc::new(astraea_gateway::AllowList::new(Vec::new())),
            ..GatewayConfig::default()
        });
        let ctl = none.open("net/udp/clone").unwrap();
        assert_eq!(
            none.ctl(ctl, "announce 127.0.0.1!0"),
            Err(libc::EACCES as u32)
        );
        assert_eq!(
            none.ctl(ctl, &format!("connect 127.0.0.1!{}", haddr.port())),
            Err(libc::EACCES as u32)
        );
    }

    #[test]
    fn dial_and_exchange() {
        let (l, addr) = listener();
        let net = Net::new();
        let (ctl, data, n) = net.dial(addr);
        let mut host = accept(&l);
        assert_eq!(net.file(n, "status"), "Established\n");
        assert_eq!(
            net.file(n, "remote"),
            format!("127.0.0.1!{}\n", addr.port())
        );
        let peer = host.peer_addr().unwrap();
        assert_eq!(net.file(n, "local"), format!("127.0.0.1!{}\n", peer.port()));
        net.ctl(ctl, "nodelay").unwrap();
        net.ctl(ctl, "keepalive\n").unwrap();

        net.write_all(data, b"hello from the partition");
        assert_eq!(host_read_exact(&mut host, 24), b"hello from the partition");
        host.write_all(b"hello from the host").unwrap();
        assert_eq!(net.read_exact(data, 19), b"hello from the host");

        // The peer closes: reads see end-of-file, every time.
        host.shutdown(Shutdown::Write).unwrap();
        assert_eq!(net.c.read(data, 0, 100).unwrap(), b"");
        assert_eq!(net.c.read(data, 0, 100).unwrap(), b"");
        // A second connection on the same gateway gets the next number.
        let (ctl2, data2, n2) = net.dial(addr);
        assert_ne!(n, n2);
        let _host2 = accept(&l);
        // Clunking the last fid closes the host socket.
        net.c.clunk(data).unwrap();
        net.c.clunk(ctl).unwrap();
        let mut rest = Vec::new();
        host.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        assert_eq!(
            net.c.walk_path(net.fid(), &format!("net/tcp/{n}")),
            Err(ENOENT)
        );
        net.c.clunk(data2).unwrap();
        net.c.clunk(ctl2).unwrap();
    }

    /// On a gateway shared by several partitions, a session cannot open
    /// another's connections: not their data, ctl or listen files.
    #[test]
    fn sessions_cannot_open_each_others_connections() {
        let (l, addr) = listener();
        let gw = gateway_with(GatewayConfig {
            net: true,
            ..GatewayConfig::default()
        });
        let a = Net::on(&gw);
        let b = Net::on(&gw);
        let (ctl, data, n) = a.dial(addr);
        let _host = accept(&l);
        for file in ["data", "ctl", "listen", "status", "remote"] {
            assert_eq!(
                b.open_with(&format!("net/tcp/{n}/{file}"), P9_DOTL_RDONLY),
                Err(ENOENT),
                "{file}"
            );
        }
        // Its own are still its own.
        assert_eq!(a.file(n, "status"), "Established\n");
        a.c.clunk(data).unwrap();
        a.c.clunk(ctl).unwrap();
    }

    /// Writes parked for a peer that never reads are bounded per session
    /// (the gateway holds a copy of each): past the budget a write is
    /// refused with EAGAIN instead of pinning more host memory.
    #[test]
    fn parked_writes_are_bounded() {
        let (l, addr) = listener();
        let net = Net::new();
        let (ctl, data, _) = net.dial(addr);
        let _host = accept(&l);
        let chunk = vec![7u8; (1 << 20) - 4096];
        let mut parked = Vec::new();
        let mut refused = false;
        for _ in 0..400 {
            let frame = encode(
                net.c.tag(),
                &TMessage::Write {
                    fid: data,
                    offset: 0,
                    data: &chunk,
                },
            );
            let rx = net.c.send_raw(frame);
            match rx.recv_timeout(Duration::from_millis(5)) {
                Ok(reply) if errno_of(&reply) == Some(libc::EAGAIN as u32) => {
                    refused = true;
                    break;
                }
                Ok(reply) => assert_eq!(errno_of(&reply), None),
                Err(_) => parked.push(rx),
            }
        }
        assert!(refused, "{} writes parked, none refused", parked.len());
        assert!(parked.len() >= 200, "only {} parked", parked.len());
        // Hanging up answers the parked writes, and frees the budget.
        net.ctl(ctl, "hangup").unwrap();
        for rx in parked {
            rx.recv_timeout(TIMEOUT).expect("a parked write's answer");
        }
        net.c.clunk(data).unwrap();
        net.c.clunk(ctl).unwrap();
    }

    #[test]
    fn hangup_ends_the_connection() {
        let (l, addr) = listener();
        let net = Net::new();
        let (ctl, data, n) = net.dial(addr);
        let mut host = accept(&l);
        net.ctl(ctl, "hangup").unwrap();
        let mut rest = Vec::new();
        host.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        assert_eq!(net.file(n, "status"), "Closed\n");
        assert_eq!(net.c.read(data, 0, 10).unwrap(), b"");
        assert_eq!(net.c.write(data, 0, b"x"), Err(libc::EPIPE as u32));
    }

    #[test]
    fn reset_and_closed_peer_errors() {
        let (l, addr) = listener();
        let net = Net::new();
        let (_ctl, data, _) = net.dial(addr);
        let host = accept(&l);
        net.write_all(data, b"unread");
        // Closing with unread data makes the host send a reset; peek (not
        // read) so the data is known to have arrived first.
        let mut buf = [0u8; 6];
        let mut seen = 0;
        while seen < buf.len() {
            seen = host.peek(&mut buf).unwrap();
        }
        drop(host);
        assert_eq!(net.c.read(data, 0, 100), Err(libc::ECONNRESET as u32));
        assert_eq!(net.c.write(data, 0, b"more"), Err(libc::EPIPE as u32));
    }

    #[test]
    fn announce_and_listen() {
        let net = Net::new();
        let (ctl, n) = net.clone_conv();
        net.ctl(ctl, "announce 127.0.0.1!0").unwrap();
        assert_eq!(net.file(n, "status"), "Listen\n");
        let local = net.file(n, "local");
        let port: u16 = local
            .strip_prefix("127.0.0.1!")
            .and_then(|p| p.strip_suffix('\n'))
            .unwrap()
            .parse()
            .unwrap();
        assert_ne!(port, 0);

        let caller = std::thread::spawn(move || {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.set_read_timeout(Some(TIMEOUT)).unwrap();
            s.write_all(b"ping").unwrap();
            let pong = host_read_exact(&mut s, 4);
            (s.local_addr().unwrap(), pong)
        });
        // Blocks until the call arrives; the fid is then the call's ctl.
        let call = net.open(&format!("net/tcp/{n}/listen")).unwrap();
        let m: usize = net.read_text(call).parse().unwrap();
        assert_ne!(m, n);
        assert_eq!(net.file(m, "status"), "Established\n");
        let data = net.open(&format!("net/tcp/{m}/data")).unwrap();
        assert_eq!(net.read_exact(data, 4), b"ping");
        net.write_all(data, b"pong");
        let (caller_addr, pong) = caller.join().unwrap();
        assert_eq!(pong, b"pong");
        assert_eq!(
            net.file(m, "remote"),
            format!("127.0.0.1!{}\n", caller_addr.port())
        );
        assert_eq!(net.file(m, "local"), format!("127.0.0.1!{port}\n"));
        // The announced connection still listens.
        assert_eq!(net.file(n, "status"), "Listen\n");
        // Writes to the opened listen fid are ctl writes of the call.
        net.ctl(call, "nodelay").unwrap();
        assert_eq!(net.ctl(call, "bogus"), Err(EINVAL));
    }

    /// The socket API's steps: `bind` takes the port but refuses calls
    /// (as Linux does for a bound socket), `listen` starts taking them.
    #[test]
    fn bind_then_listen() {
        let net = Net::new();
        let (ctl, n) = net.clone_conv();
        net.ctl(ctl, "reuseaddr").unwrap();
        net.ctl(ctl, "bind 127.0.0.1!0").unwrap();
        assert_eq!(net.file(n, "status"), "Closed\n");
        let port = port_of(&net.file(n, "local"));
        assert_ne!(port, 0);
        let refused = TcpStream::connect(("127.0.0.1", port)).unwrap_err();
        assert_eq!(refused.raw_os_error(), Some(ECONNREFUSED as i32));
        // Not listening: no calls to wait for.
        assert_eq!(net.open(&format!("net/tcp/{n}/listen")), Err(EINVAL));
        // Bound once only.
        assert_eq!(net.ctl(ctl, "bind 127.0.0.1!0"), Err(EINVAL));
        net.ctl(ctl, "listen 4").unwrap();
        assert_eq!(net.file(n, "status"), "Listen\n");
        net.ctl(ctl, "listen 8").unwrap();
        let caller = std::thread::spawn(move || TcpStream::connect(("127.0.0.1", port)).unwrap());
        let call = net.open(&format!("net/tcp/{n}/listen")).unwrap();
        let m: usize = net.read_text(call).parse().unwrap();
        let host = caller.join().unwrap();
        assert_eq!(
            net.file(m, "remote"),
            format!("127.0.0.1!{}\n", host.local_addr().unwrap().port())
        );
        // `listen` needs a bound TCP connection; its backlog is a number.
        let (ctl2, _) = net.clone_conv();
        assert_eq!(net.ctl(ctl2, "listen"), Err(EINVAL));
        assert_eq!(net.ctl(ctl2, "listen many"), Err(EINVAL));
        assert_eq!(net.ctl(ctl2, "listen 70000"), Err(EINVAL));
    }

    /// `reuseport` set after `bind` reaches the bound host socket (Linux's
    /// conflict check looks at both sockets' flags as they are then).
    #[test]
    fn reuseport_after_bind() {
        let net = Net::new();
        let (a, n) = net.clone_conv();
        net.ctl(a, "bind 127.0.0.1!0").unwrap();
        let port = port_of(&net.file(n, "local"));
        let (b, _) = net.clone_conv();
        net.ctl(b, "reuseport").unwrap();
        assert_eq!(
            net.ctl(b, &format!("bind 127.0.0.1!{port}")),
            Err(EADDRINUSE)
        );
        net.ctl(a, "reuseport").unwrap();
        let (c, _) = net.clone_conv();
        net.ctl(c, "reuseport").unwrap();
        net.ctl(c, &format!("bind 127.0.0.1!{port}")).unwrap();
        // Taken back (what a later bind then meets is the host kernel's
        // business: it caches the port's sharing state).
        net.ctl(a, "reuseport off").unwrap();
        net.ctl(a, "reuseaddr off").unwrap();
        assert_eq!(net.ctl(a, "reuseport maybe"), Err(EINVAL));
    }

    /// `v6only` before `bind` makes an IPv6 wildcard listener refuse IPv4
    /// calls, as `IPV6_V6ONLY` does; without it the listener is dual-stack.
    #[test]
    fn v6only_listener_refuses_ipv4() {
        if std::net::TcpListener::bind("[::1]:0").is_err() {
            eprintln!("\n*** SKIPPED: no IPv6 loopback here. ***\n");
            return;
        }
        let net = Net::new();
        for v6only in [true, false] {
            let (ctl, n) = net.clone_conv();
            if v6only {
                net.ctl(ctl, "v6only").unwrap();
            }
            net.ctl(ctl, "bind [::]!0").unwrap();
            net.ctl(ctl, "listen 4").unwrap();
            let local = net.file(n, "local");
            let port: u16 = local
                .trim_end()
                .rsplit_once('!')
                .unwrap()
                .1
                .parse()
                .unwrap();
            let v4 = TcpStream::connect(("127.0.0.1", port));
            assert_eq!(v4.is_err(), v6only, "v6only {v6only}: {v4:?}");
            TcpStream::connect(("::1", port)).unwrap();
            net.c.clunk(ctl).unwrap();
        }
    }

    /// `connect` after `bind` dials from the bound port; a policy that
    /// refuses listening refuses `bind` too.
    #[test]
    fn connect_after_bind_keeps_the_port() {
        let (l, addr) = listener();
        let net = Net::new();
        let (ctl, n) = net.clone_conv();
        net.ctl(ctl, "bind 127.0.0.1!0").unwrap();
        let port = port_of(&net.file(n, "local"));
        net.ctl(ctl, &format!("connect 127.0.0.1!{}", addr.port()))
            .unwrap();
        let host = accept(&l);
        assert_eq!(host.peer_addr().unwrap().port(), port);
        assert_eq!(net.file(n, "status"), "Established\n");
        assert_eq!(port_of(&net.file(n, "local")), port);

        let net = Net::with(GatewayConfig {
            net_policy: Arc::new(OnlyPort(addr.port())),
            ..GatewayConfig::default()
        });
        let (ctl, _) = net.clone_conv();
        assert_eq!(net.ctl(ctl, "bind 127.0.0.1!0"), Err(EACCES));
    }

    #[test]
    fn listen_is_flushable() {
        let net = Net::new();
        let (ctl, n) = net.clone_conv();
        net.ctl(ctl, "announce 127.0.0.1!0").unwrap();
        let fid = net.fid();
        net.c
            .walk_path(fid, &format!("net/tcp/{n}/listen"))
            .unwrap();
        let log = Log::default();
        let open = net.c.send_logged(
            encode(
                300,
                &TMessage::Lopen {
                    fid,
                    flags: P9_DOTL_RDWR,
                },
            ),
            &log,
        );
        assert!(open.recv_timeout(Duration::from_millis(100)).is_err());
        let flush = net
            .c
            .send_logged(encode(301, &TMessage::Flush { oldtag: 300 }), &log);
        assert_eq!(errno_of(&open.recv_timeout(TIMEOUT).unwrap()), Some(EINTR));
        flush.recv_timeout(TIMEOUT).unwrap();
        assert_eq!(log.tags(), vec![300, 301]);
        // Not-announced connections cannot listen.
        let (_ctl2, n2) = net.clone_conv();
        assert_eq!(net.open(&format!("net/tcp/{n2}/listen")), Err(EINVAL));
    }

    #[test]
    fn refused_connect_gets_the_host_errno() {
        let (_held, addr) = refusing_port();
        let net = Net::new();
        let (ctl, n) = net.clone_conv();
        let cmd = format!("connect 127.0.0.1!{}", addr.port());
        assert_eq!(net.ctl(ctl, &cmd), Err(ECONNREFUSED));
        assert_eq!(net.file(n, "status"), "Closed\n");
        // The connection can try again.
        let (l, addr) = listener();
        net.ctl(ctl, &format!("connect localhost!{}", addr.port()))
            .unwrap();
        let _host = accept(&l);
        assert_eq!(net.file(n, "status"), "Established\n");
    }

    #[test]
    fn flush_of_a_blocked_data_read() {
        let (l, addr) = listener();
        let net = Net::new();
        let (_ctl, data, _) = net.dial(addr);
        let mut host = accept(&l);
        let log = Log::default();
        let read = net.c.send_logged(read_req(data, 500), &log);
        assert!(
            read.recv_timeout(Duration::from_millis(100)).is_err(),
            "a read with no data waits"
        );
        let flush = net
            .c
            .send_logged(encode(501, &TMessage::Flush { oldtag: 500 }), &log);
        assert_eq!(errno_of(&read.recv_timeout(TIMEOUT).unwrap()), Some(EINTR));
        let rflush = flush.recv_timeout(TIMEOUT).unwrap();
        assert!(matches!(
            RMessage::from_bytes(&rflush).unwrap(),
            (501, RMessage::Flush)
        ));
        assert_eq!(log.tags(), vec![500, 501]);
        // Nothing was consumed by the aborted read; the connection works.
        host.write_all(b"after the flush").unwrap();
        assert_eq!(net.read_exact(data, 15), b"after the flush");
        net.write_all(data, b"still here");
        assert_eq!(host_read_exact(&mut host, 10), b"still here");

        // Tversion aborts a blocked read too, and closes the connection.
        let log = Log::default();
        let read = net.c.send_logged(read_req(data, 600), &log);
        assert!(read.recv_timeout(Duration::from_millis(50)).is_err());
        let version = net.c.send_logged(
            encode(
                NOTAG,
                &TMessage::Version {
                    msize: 65536,
                    version: Str::from(VERSION_9P2000L),
                },
            ),
            &log,
        );
        assert_eq!(errno_of(&read.recv_timeout(TIMEOUT).unwrap()), Some(EINTR));
        version.recv_timeout(TIMEOUT).unwrap();
        assert_eq!(log.tags(), vec![600, NOTAG]);
        let mut rest = Vec::new();
        host.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
    }

    /// A session of `gw` (one whose small socket requests run inline when
    /// `nonblocking`, as the VMM's), and a connection it dialled: (client,
    /// data fid, the host's end).
    fn connection_on(gw: &Arc<Gateway>, nonblocking: bool) -> (Net, u32, TcpStream) {
        let c = if nonblocking {
            Client::attached_nonblocking(gw)
        } else {
            Client::attached(gw)
        };
        let net = Net {
            c,
            next_fid: AtomicU32::new(100),
        };
        let (l, addr) = listener();
        let (_ctl, data, _) = net.dial(addr);
        let host = accept(&l);
        (net, data, host)
    }

    /// Reads kept in flight together on one connection (the streaming
    /// layer's) get the stream's bytes in the order they were sent, on a
    /// session whose large reads run on the worker pool and on one whose
    /// small ones run inline, with data arriving in pieces while they wait
    /// or before they run; a flushed read in the middle gives up its turn.
    #[test]
    fn reads_in_flight_keep_their_order() {
        let gw = busy_gateway(64);
        for nonblocking in [false, true] {
            let (net, data, mut host) = connection_on(&gw, nonblocking);
            // A counting stream of u32s, written in uneven pieces by a
            // host thread while the reads below come and go.
            const WORDS: u32 = 1 << 20;
            let writer = std::thread::spawn(move || {
                let all: Vec<u8> = (0..WORDS).flat_map(u32::to_le_bytes).collect();
                let mut at = 0;
                let mut piece = 1;
                while at < all.len() {
                    let n = piece.min(all.len() - at);
                    host.write_all(&all[at..at + n]).unwrap();
                    at += n;
                    piece = (piece * 7 + 13) % 200_000 + 1;
                    if piece.is_multiple_of(5) {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
                // The last round's reads may find nothing more: the end.
                host.shutdown(Shutdown::Write).unwrap();
                host
            });
            let mut got = Vec::with_capacity(WORDS as usize * 4);
            let mut tag = 1000u16;
            let mut round = 0u32;
            while got.len() < WORDS as usize * 4 {
                round += 1;
                // Small and large counts: inline and pool paths mixed.
                let reads: Vec<(u16, std::sync::mpsc::Receiver<Vec<u8>>)> = (0..4)
                    .map(|i| {
                        tag = tag.wrapping_add(1).max(1000);
                        let count = if (round + i).is_multiple_of(3) {
                            4096
                        } else {
                            96 * 1024
                        };
                        let req = encode(
                            tag,
                            &TMessage::Read {
                                fid: data,
                                offset: 0,
                                count,
                            },
                        );
                        (tag, net.c.send_raw(req))
                    })
                    .collect();
                // Now and then the second read is flushed while it may wait.
                let flushed = round.is_multiple_of(17);
                if flushed {
                    let f = net
                        .c
                        .send_raw(encode(999, &TMessage::Flush { oldtag: reads[1].0 }));
                    f.recv_timeout(TIMEOUT).unwrap();
                }
                for (i, (t, rx)) in reads.into_iter().enumerate() {
                    let r = rx.recv_timeout(TIMEOUT).unwrap_or_else(|_| {
                        panic!("read {i} of round {round} unanswered after {} bytes (nonblocking: {nonblocking})", got.len())
                    });
                    match RMessage::from_bytes(&r).unwrap() {
                        (rt, RMessage::Read { data }) => {
                            assert_eq!(rt, t);
                            got.extend_from_slice(data);
                        }
                        (_, RMessage::Lerror { ecode }) if flushed && i == 1 => {
                            assert_eq!(ecode, EINTR);
                        }
                        (_, m) => panic!("read {i} of round {round}: {m:?}"),
                    }
                }
            }
            let _host = writer.join().unwrap();
            for (i, w) in got.chunks_exact(4).enumerate() {
                let v = u32::from_le_bytes(w.try_into().unwrap());
                assert_eq!(
                    v, i as u32,
                    "word {i} out of order (nonblocking: {nonblocking})"
                );
            }
            assert_eq!(got.len(), WORDS as usize * 4);
        }
    }

    /// Writes kept in flight together on one connection reach the peer in
    /// their order and whole (each answered with its full count), though
    /// the host socket's buffer fills and a slow reader drains it in
    /// pieces, on pool and inline sessions.
    #[test]
    fn writes_in_flight_keep_their_order() {
        let gw = busy_gateway(64);
        for nonblocking in [false, true] {
            let (net, data, mut host) = connection_on(&gw, nonblocking);
            const WORDS: u32 = 1 << 20;
            let reader = std::thread::spawn(move || {
                let mut got = Vec::with_capacity(WORDS as usize * 4);
                let mut buf = vec![0u8; 100_000];
                let mut turn = 0u32;
                while got.len() < WORDS as usize * 4 {
                    turn += 1;
                    let want = (turn as usize * 7919) % buf.len() + 1;
                    let n = host.read(&mut buf[..want]).unwrap();
                    assert!(n > 0, "end of file after {} bytes", got.len());
                    got.extend_from_slice(&buf[..n]);
                    if turn.is_multiple_of(13) {
                        std::thread::sleep(Duration::from_micros(300));
                    }
                }
                got
            });
            let all: Vec<u8> = (0..WORDS).flat_map(u32::to_le_bytes).collect();
            let mut at = 0;
            let mut tag = 2000u16;
            let mut round = 0usize;
            while at < all.len() {
                round += 1;
                let mut flight = Vec::new();
                for i in 0..4 {
                    // Small (inline) and large (pool) writes mixed.
                    let size = if (round + i).is_multiple_of(3) {
                        3000
                    } else {
                        200_000
                    };
                    let end = (at + size).min(all.len());
                    if at == end {
                        break;
                    }
                    tag = tag.wrapping_add(1).max(2000);
                    let req = encode(
                        tag,
                        &TMessage::Write {
                            fid: data,
                            offset: 0,
                            data: &all[at..end],
                        },
                    );
                    flight.push((tag, end - at, net.c.send_raw(req)));
                    at = end;
                }
                for (t, len, rx) in flight {
                    let r = rx.recv_timeout(TIMEOUT).unwrap();
                    match RMessage::from_bytes(&r).unwrap() {
                        (rt, RMessage::Write { count }) => {
                            assert_eq!((rt, count as usize), (t, len), "round {round}");
                        }
                        (_, m) => panic!("write of round {round}: {m:?}"),
                    }
                }
            }
            let got = reader.join().unwrap();
            for (i, w) in got.chunks_exact(4).enumerate() {
                let v = u32::from_le_bytes(w.try_into().unwrap());
                assert_eq!(
                    v, i as u32,
                    "word {i} out of order (nonblocking: {nonblocking})"
                );
            }
        }
    }

    #[test]
    fn hostile_ctl_text() {
        let (l, addr) = listener();
        let net = Net::new();
        let (ctl, n) = net.clone_conv();
        let huge = "connect ".to_string() + &"9".repeat(60_000);
        let bad: Vec<&[u8]> = vec![
            b"",
            b"\n",
            b"garbage",
            b"connect",
            b"connect 127.0.0.1",
            b"connect 127.0.0.1!",
            b"connect 127.0.0.1!99999",
            b"connect 127.0.0.1!-1",
            b"connect 127.0.0.1!0",
            b"connect 999.1.1.1!80",
            b"connect 127.0.0.1!80!80",
            b"connect \xff\xfe!80",
            b"\xff\xff\xff\xff",
            b"\0\0\0",
            b"announce",
            b"announce nowhere!1",
            b"hangup now please",
            b"nodelay 7",
            huge.as_bytes(),
        ];
        for text in bad {
            assert_eq!(
                net.c.write(ctl, 0, text),
                Err(EINVAL),
                "{:?}",
                String::from_utf8_lossy(&text[..text.len().min(40)])
            );
        }
        // Writes to read-only files, by a fid opened read-only.
        let fid = net.fid();
        net.c
            .walk_path(fid, &format!("net/tcp/{n}/status"))
            .unwrap();
        net.c.lopen(fid, P9_DOTL_RDONLY).unwrap();
        assert!(net.c.write(fid, 0, b"x").is_err());
        // Data on a connection that never connected.
        let data = net.open(&format!("net/tcp/{n}/data")).unwrap();
        assert_eq!(net.c.read(data, 0, 10), Err(libc::ENOTCONN as u32));
        // The gateway still serves, and this connection still works.
        net.ctl(ctl, &format!("connect 127.0.0.1!{}", addr.port()))
            .unwrap();
        let mut host = accept(&l);
        net.write_all(data, b"ok");
        assert_eq!(host_read_exact(&mut host, 2), b"ok");
        assert_eq!(
            net.ctl(ctl, "announce 127.0.0.1!0"),
            Err(libc::EISCONN as u32)
        );
    }

    #[derive(Debug)]
    struct OnlyPort(u16);

    impl NetPolicy for OnlyPort {
        fn allow_connect(&self, addr: SocketAddr) -> bool {
            addr.port() == self.0
        }

        fn allow_announce(&self, _addr: SocketAddr) -> bool {
            false
        }
    }

    #[test]
    fn policy_refuses_with_eacces() {
        let (l, addr) = listener();
        let net = Net::with(GatewayConfig {
            net_policy: Arc::new(OnlyPort(addr.port())),
            ..GatewayConfig::default()
        });
        let (ctl, _) = net.clone_conv();
        assert_eq!(net.ctl(ctl, "announce 127.0.0.1!0"), Err(EACCES));
        let other = if addr.port() == 1 { 2 } else { 1 };
        assert_eq!(
            net.ctl(ctl, &format!("connect 127.0.0.1!{other}")),
            Err(EACCES)
        );
        net.ctl(ctl, &format!("connect 127.0.0.1!{}", addr.port()))
            .unwrap();
        let _host = accept(&l);
    }

    #[test]
    fn many_connections_few_threads() {
        const N: usize = 200;
        let (l, addr) = listener();
        let net = Net::new();
        let mut conns = Vec::new();
        for _ in 0..N {
            let (ctl, data, n) = net.dial(addr);
            // Accepted at once so the listen backlog never overflows.
            conns.push((ctl, data, n, accept(&l)));
        }
        let threads_now = threads();
        // A thread per connection would be more than N on its own; the
        // bound leaves room for the other tests running in this process.
        assert!(
            threads_now < N / 2,
            "{threads_now} threads for {N} connections"
        );
        for (i, (_, data, _, host)) in conns.iter_mut().enumerate() {
            let msg = format!("to host {i}");
            net.write_all(*data, msg.as_bytes());
            assert_eq!(host_read_exact(host, msg.len()), msg.as_bytes());
            let reply = format!("from host {i}");
            host.write_all(reply.as_bytes()).unwrap();
        }
        for (i, (_, data, _, _)) in conns.iter().enumerate() {
            let reply = format!("from host {i}");
            assert_eq!(net.read_exact(*data, reply.len()), reply.as_bytes());
        }
        let mut numbers: Vec<usize> = conns.iter().map(|c| c.2).collect();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len(), N);
        for (ctl, data, _, _) in conns {
            net.c.clunk(data).unwrap();
            net.c.clunk(ctl).unwrap();
        }
        assert_eq!(net.c.ls("net/tcp").unwrap(), vec!["clone"]);
    }

    #[test]
    fn megabyte_transfer_is_intact() {
        const LEN: usize = 1 << 20;
        // A pattern that catches reordered, dropped or duplicated chunks.
        let payload: Vec<u8> = (0..LEN)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let (l, addr) = listener();
        let net = Net::new();
        let (_ctl, data, _) = net.dial(addr);
        let mut host = accept(&l);
        let expected = payload.clone();
        // The host reads everything, then sends it back reversed.
        let echo = std::thread::spawn(move || {
            let got = host_read_exact(&mut host, LEN);
            assert!(got == expected, "partition -> host data differs");
            let back: Vec<u8> = got.iter().rev().copied().collect();
            host.write_all(&back).unwrap();
            host
        });
        net.write_all(data, &payload);
        let back = net.read_exact(data, LEN);
        let reversed: Vec<u8> = payload.iter().rev().copied().collect();
        assert!(back == reversed, "host -> partition data differs");
        drop(echo.join().unwrap());
        assert_eq!(net.c.read(data, 0, 10).unwrap(), b"");
    }

    #[test]
    fn thousand_parked_reads_hold_no_thread() {
        // Both ends of every connection live in this process: two
        // descriptors each, plus room for the rest of the tests.
        let limit = fd_limit();
        let n = 1000.min(limit.saturating_sub(512) / 2);
        if n < 1000 {
            eprintln!("open-file limit {limit}: {n} connections instead of 1000");
        }
        let gw = busy_gateway(n);
        let net = Net::on(&gw);
        let mut conns = dial_many(&net, n);
        let before = threads();
        // Posted in batches, as connections come and go: a burst of
        // requests faster than the workers start makes the elastic pool
        // start more (idle later), which is not what is measured here.
        let mut reads = Vec::new();
        for (i, (data, _)) in conns.iter().enumerate() {
            reads.push(net.c.send_raw(read_req(*data, 40_000 + i as u16)));
            if i % 50 == 49 {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        none_answered(&reads);
        assert_eq!(net.c.session.outstanding(), n);
        // Parked, no read holds a worker: every worker goes idle (one may
        // still be finishing the step that parked its read). The gateway's
        // own count, not the process's threads, which the other tests of
        // this process start and end meanwhile; how many workers a burst
        // starts depends on how loaded the machine is.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let (workers, busy) = loop {
            let (all, busy) = gw.worker_threads();
            if busy == 0 || std::time::Instant::now() > deadline {
                break (all, busy);
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let parked = threads();
        eprintln!(
            "threads: {before} before the reads, {parked} with {n} reads parked; the gateway's workers {workers}, {busy} busy"
        );
        assert_eq!(
            busy, 0,
            "{busy} of {workers} workers held by {n} parked reads"
        );
        assert!(workers < n / 2, "{workers} workers for {n} parked reads");
        for (i, (_, host)) in conns.iter_mut().enumerate() {
            host.write_all(format!("data for read {i}").as_bytes())
                .unwrap();
        }
        for (i, r) in reads.iter().enumerate() {
            let frame = r.recv_timeout(TIMEOUT).unwrap();
            match RMessage::from_bytes(&frame).unwrap() {
                (tag, RMessage::Read { data }) => {
                    assert_eq!(tag, 40_000 + i as u16);
                    assert_eq!(data, format!("data for read {i}").as_bytes());
                }
                other => panic!("read {i}: {other:?}"),
            }
        }
        eprintln!("threads: {} after the reads completed", threads());
        assert_eq!(net.c.session.outstanding(), 0);
    }

    #[test]
    fn flush_of_parked_requests() {
        let gw = busy_gateway(64);
        let net = Net::on(&gw);
        let mut conns = dial_many(&net, 8);
        // Reads parked on every connection; the one on connection 3 is flushed.
        let log = Log::default();
        let reads: Vec<_> = conns
            .iter()
            .enumerate()
            .map(|(i, (data, _))| net.c.send_logged(read_req(*data, 700 + i as u16), &log))
            .collect();
        none_answered(&reads);
        let flush = net
            .c
            .send_logged(encode(800, &TMessage::Flush { oldtag: 703 }), &log);
        assert_eq!(
            errno_of(&reads[3].recv_timeout(TIMEOUT).unwrap()),
            Some(EINTR)
        );
        flush.recv_timeout(TIMEOUT).unwrap();
        assert_eq!(log.tags(), vec![703, 800]);
        // The others are still parked and complete with their data; the
        // flushed connection lost nothing and works.
        for (i, (_, host)) in conns.iter_mut().enumerate() {
            host.write_all(format!("to {i}").as_bytes()).unwrap();
        }
        for (i, r) in reads.iter().enumerate().filter(|(i, _)| *i != 3) {
            let frame = r.recv_timeout(TIMEOUT).unwrap();
            assert!(
                matches!(RMessage::from_bytes(&frame).unwrap().1, RMessage::Read { data } if data == format!("to {i}").as_bytes())
            );
        }
        let (data3, host3) = &mut conns[3];
        assert_eq!(net.read_exact(*data3, 4), b"to 3");
        net.write_all(*data3, b"back");
        assert_eq!(host_read_exact(host3, 4), b"back");

        // A write parked on a full send buffer (the host reads nothing).
        let (data0, host0) = &mut conns[0];
        let chunk = vec![7u8; 64 * 1024];
        let mut sent = 0usize;
        let log = Log::default();
        let parked = loop {
            let w = net.c.send_logged(
                encode(
                    900,
                    &TMessage::Write {
                        fid: *data0,
                        offset: 0,
                        data: &chunk,
                    },
                ),
                &log,
            );
            match w.recv_timeout(Duration::from_millis(300)) {
                Ok(frame) => match RMessage::from_bytes(&frame).unwrap().1 {
                    RMessage::Write { count } => sent += count as usize,
                    other => panic!("{other:?}"),
                },
                Err(_) => break w,
            }
            assert!(sent < 256 << 20, "the send buffer never filled");
            log.0.lock().unwrap().clear();
        };
        let flush = net
            .c
            .send_logged(encode(901, &TMessage::Flush { oldtag: 900 }), &log);
        let frame = parked.recv_timeout(TIMEOUT).unwrap();
        // Flushed while parked; but the buffer may have drained at that
        // very moment, in which case it reports what it sent.
        match RMessage::from_bytes(&frame).unwrap().1 {
            RMessage::Lerror { ecode } => assert_eq!(ecode, EINTR),
            RMessage::Write { count } => sent += count as usize,
            other => panic!("{other:?}"),
        }
        flush.recv_timeout(TIMEOUT).unwrap();
        assert_eq!(log.tags(), vec![900, 901]);
        // Exactly what was acknowledged arrives, then the connection works.
        let got = host_read_exact(host0, sent);
        assert!(got.iter().all(|&b| b == 7));
        net.write_all(*data0, b"after");
        assert_eq!(host_read_exact(host0, 5), b"after");
    }

    #[test]
    fn version_answers_parked_reads_first() {
        let gw = busy_gateway(200);
        let net = Net::on(&gw);
        let mut conns = dial_many(&net, 100);
        let log = Log::default();
        let reads: Vec<_> = conns
            .iter()
            .enumerate()
            .map(|(i, (data, _))| net.c.send_logged(read_req(*data, 1000 + i as u16), &log))
            .collect();
        none_answered(&reads);
        let version = net.c.send_logged(
            encode(
                NOTAG,
                &TMessage::Version {
                    msize: 65536,
                    version: Str::from(VERSION_9P2000L),
                },
            ),
            &log,
        );
        for r in &reads {
            assert_eq!(errno_of(&r.recv_timeout(TIMEOUT).unwrap()), Some(EINTR));
        }
        version.recv_timeout(TIMEOUT).unwrap();
        let tags = log.tags();
        assert_eq!(tags.len(), 101);
        assert_eq!(*tags.last().unwrap(), NOTAG);
        assert_eq!(net.c.session.outstanding(), 0);
        assert_eq!(net.c.session.fid_count(), 0);
        // The fids are gone, so are the connections: every host sees EOF.
        for (_, host) in &mut conns {
            let mut rest = Vec::new();
            host.read_to_end(&mut rest).unwrap();
            assert!(rest.is_empty());
        }
        net.c.attach(ROOT, "").unwrap();
        assert_eq!(net.c.ls("net/tcp").unwrap(), vec!["clone"]);
    }

    #[test]
    fn dropped_session_with_parked_reads() {
        let gw = busy_gateway(200);
        let other = Net::on(&gw);
        let mut theirs = dial_many(&other, 1);
        let (their_data, their_host) = &mut theirs[0];
        let their_read = other.c.send_raw(read_req(*their_data, 5000));

        let doomed = Net::on(&gw);
        let mut conns = dial_many(&doomed, 50);
        let reads: Vec<_> = conns
            .iter()
            .enumerate()
            .map(|(i, (data, _))| doomed.c.send_raw(read_req(*data, 2000 + i as u16)))
            .collect();
        none_answered(&reads);
        drop(doomed);
        // Every parked read is still answered (EINTR), once.
        for r in &reads {
            assert_eq!(errno_of(&r.recv_timeout(TIMEOUT).unwrap()), Some(EINTR));
            assert!(r.recv_timeout(Duration::from_millis(1)).is_err());
        }
        // Nothing leaks: the connections close and their numbers are free.
        for (_, host) in &mut conns {
            let mut rest = Vec::new();
            host.read_to_end(&mut rest).unwrap();
            assert!(rest.is_empty());
        }
        let deadline = std::time::Instant::now() + TIMEOUT;
        while other.c.ls("net/tcp").unwrap().len() != 2 {
            assert!(std::time::Instant::now() < deadline, "connections leaked");
            std::thread::sleep(Duration::from_millis(10));
        }
        // The poll thread still serves the other session.
        their_host.write_all(b"still served").unwrap();
        let frame = their_read.recv_timeout(TIMEOUT).unwrap();
        assert!(matches!(
            RMessage::from_bytes(&frame).unwrap().1,
            RMessage::Read { data } if data == b"still served"
        ));
        other.write_all(*their_data, b"and back");
        assert_eq!(host_read_exact(their_host, 8), b"and back");
    }
}
