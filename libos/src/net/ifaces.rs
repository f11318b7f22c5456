//! The host's network interfaces as a partition sees them: the gateway's
//! `/net/ifaces` text, answered to the `SIOCGIF*` ioctls on any socket
//! (what Java's `NetworkInterface` asks) and as `/proc/net/if_inet6`. A
//! partition's sockets are the host's, so its interfaces are the host's
//! too. Pure: parsing never panics on the text, and the module is tested on
//! the host.

use alloc::string::String;
use alloc::vec::Vec;
use core::net::Ipv4Addr;

use crate::errno::Errno;

/// `SIOCGIFNAME`.
pub const SIOCGIFNAME: u64 = 0x8910;
/// `SIOCGIFCONF`.
pub const SIOCGIFCONF: u64 = 0x8912;
/// `SIOCGIFFLAGS`.
pub const SIOCGIFFLAGS: u64 = 0x8913;
/// `SIOCGIFADDR`.
pub const SIOCGIFADDR: u64 = 0x8915;
/// `SIOCGIFBRDADDR`.
pub const SIOCGIFBRDADDR: u64 = 0x8919;
/// `SIOCGIFNETMASK`.
pub const SIOCGIFNETMASK: u64 = 0x891b;
/// `SIOCGIFMTU`.
pub const SIOCGIFMTU: u64 = 0x8921;
/// `SIOCGIFHWADDR`.
pub const SIOCGIFHWADDR: u64 = 0x8927;
/// `SIOCGIFINDEX`.
pub const SIOCGIFINDEX: u64 = 0x8933;

/// `sizeof(struct ifreq)`.
pub const IFREQ_LEN: usize = 40;
/// `IFNAMSIZ`.
const IFNAMSIZ: usize = 16;

/// The interface requests served here.
pub fn is_ifreq(request: u64) -> bool {
    matches!(
        request,
        SIOCGIFNAME
            | SIOCGIFCONF
            | SIOCGIFFLAGS
            | SIOCGIFADDR
            | SIOCGIFBRDADDR
            | SIOCGIFNETMASK
            | SIOCGIFMTU
            | SIOCGIFHWADDR
            | SIOCGIFINDEX
    )
}

/// One interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iface {
    /// Its name (`eth0`).
    pub name: String,
    /// Its index.
    pub index: u32,
    /// `IFF_*` flags.
    pub flags: u32,
    /// MTU.
    pub mtu: u32,
    /// `ARPHRD_*` hardware type.
    pub hwtype: u16,
    /// Hardware address.
    pub hw: Vec<u8>,
}

/// One IPv4 address (its label is the interface's name, or an alias).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inet {
    /// The label (`eth0`, `eth0:1`).
    pub label: String,
    /// The address.
    pub addr: Ipv4Addr,
    /// Its netmask.
    pub mask: Ipv4Addr,
    /// Its broadcast address, if the interface has one.
    pub brd: Option<Ipv4Addr>,
}

/// Everything `/net/ifaces` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ifaces {
    /// The interfaces, by index.
    pub ifaces: Vec<Iface>,
    /// IPv4 addresses, in device order.
    pub inet: Vec<Inet>,
    /// IPv6 addresses: the fields of `/proc/net/if_inet6` lines.
    pub inet6: Vec<[String; 6]>,
}

fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    if s == "-" {
        return Some(Vec::new());
    }
    if !s.len().is_multiple_of(2) || s.len() > 64 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Parses the gateway's text; lines it does not understand are left out.
pub fn parse(text: &str) -> Ifaces {
    let mut out = Ifaces::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["iface", name, index, flags, mtu, hwtype, hw] => {
                let parsed = (|| {
                    Some(Iface {
                        name: String::from(*name),
                        index: index.parse().ok()?,
                        flags: u32::from_str_radix(flags, 16).ok()?,
                        mtu: mtu.parse().ok()?,
                        hwtype: hwtype.parse().ok()?,
                        hw: hex_bytes(hw)?,
                    })
                })();
                out.ifaces.extend(parsed);
            }
            ["inet", label, addr, mask, brd] => {
                let parsed = (|| {
                    Some(Inet {
                        label: String::from(*label),
                        addr: addr.parse().ok()?,
                        mask: mask.parse().ok()?,
                        brd: if *brd == "-" {
                            None
                        } else {
                            Some(brd.parse().ok()?)
                        },
                    })
                })();
                out.inet.extend(parsed);
            }
            ["inet6", a, b, c, d, e, g] => {
                out.inet6.push([*a, *b, *c, *d, *e, *g].map(String::from));
            }
            _ => {}
        }
    }
    out
}

/// The name in an `ifreq`: up to the first NUL of its 16 bytes.
pub fn req_name(req: &[u8]) -> &[u8] {
    let name = &req[..req.len().min(IFNAMSIZ)];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    &name[..end]
}

/// A `sockaddr_in` of `addr` (16 bytes).
fn sockaddr_in(addr: Ipv4Addr) -> [u8; 16] {
    let mut s = [0u8; 16];
    s[0] = 2; // AF_INET
    s[4..8].copy_from_slice(&addr.octets());
    s
}

fn name_field(name: &str) -> [u8; IFNAMSIZ] {
    let mut n = [0u8; IFNAMSIZ];
    let b = name.as_bytes();
    let len = b.len().min(IFNAMSIZ - 1);
    n[..len].copy_from_slice(&b[..len]);
    n
}

impl Ifaces {
    fn by_name(&self, name: &[u8]) -> Option<&Iface> {
        self.ifaces.iter().find(|i| i.name.as_bytes() == name)
    }

    /// `SIOCGIFCONF`: the `ifreq`s of the IPv4 addresses that fit in
    /// `room` bytes (whole ones only), and how many bytes all would take.
    pub fn ifconf(&self, room: usize) -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        for a in &self.inet {
            if out.len() + IFREQ_LEN > room {
                break;
            }
            out.extend_from_slice(&name_field(&a.label));
            out.extend_from_slice(&sockaddr_in(a.addr));
            out.extend_from_slice(&[0u8; 8]);
        }
        (out, self.inet.len() * IFREQ_LEN)
    }

    /// The answer to an interface request other than `SIOCGIFCONF`, given
    /// the program's `ifreq` (40 bytes) and whether the socket is
    /// `AF_INET` (the address requests are IPv4's): the `ifreq` to write
    /// back. `ENODEV` for an unknown interface, `EADDRNOTAVAIL` for an
    /// address it does not have.
    pub fn answer(&self, request: u64, req: &[u8], inet_socket: bool) -> Result<Vec<u8>, Errno> {
        if req.len() < IFREQ_LEN {
            return Err(Errno::EFAULT);
        }
        let mut out = req[..IFREQ_LEN].to_vec();
        let int = |out: &mut Vec<u8>, v: u32| out[16..20].copy_from_slice(&v.to_le_bytes());
        if request == SIOCGIFNAME {
            let index = u32::from_le_bytes([req[16], req[17], req[18], req[19]]);
            let i = self
                .ifaces
                .iter()
                .find(|i| i.index == index)
                .ok_or(Errno::ENODEV)?;
            out[..IFNAMSIZ].copy_from_slice(&name_field(&i.name));
            return Ok(out);
        }
        let name = req_name(req);
        match request {
            SIOCGIFADDR | SIOCGIFBRDADDR | SIOCGIFNETMASK => {
                if !inet_socket {
                    return Err(Errno::ENOTTY);
                }
                // An alias's label names its address; the device's name its
                // first one.
                let dev = name.split(|&b| b == b':').next().unwrap_or(name);
                if self.by_name(dev).is_none() {
                    return Err(Errno::ENODEV);
                }
                let a = self
                    .inet
                    .iter()
                    .find(|a| a.label.as_bytes() == name)
                    .ok_or(Errno::EADDRNOTAVAIL)?;
                let v = match request {
                    SIOCGIFADDR => a.addr,
                    SIOCGIFNETMASK => a.mask,
                    _ => a.brd.ok_or(Errno::EADDRNOTAVAIL)?,
                };
                out[16..32].copy_from_slice(&sockaddr_in(v));
            }
            _ => {
                let i = self.by_name(name).ok_or(Errno::ENODEV)?;
                match request {
                    // `ifr_flags` is a short.
                    SIOCGIFFLAGS => {
                        out[16..18].copy_from_slice(&(i.flags as u16).to_le_bytes());
                    }
                    SIOCGIFMTU => int(&mut out, i.mtu),
                    SIOCGIFINDEX => int(&mut out, i.index),
                    SIOCGIFHWADDR => {
                        let mut sa = [0u8; 16];
                        sa[..2].copy_from_slice(&i.hwtype.to_le_bytes());
                        let n = i.hw.len().min(14);
                        sa[2..2 + n].copy_from_slice(&i.hw[..n]);
                        out[16..32].copy_from_slice(&sa);
                    }
                    _ => return Err(Errno::ENOTTY),
                }
            }
        }
        Ok(out)
    }

    /// `/proc/net/if_inet6`, in Linux's layout.
    pub fn if_inet6(&self) -> String {
        let mut s = String::new();
        for f in &self.inet6 {
            s.push_str(&alloc::format!(
                "{} {} {} {} {} {:>8}\n",
                f[0],
                f[1],
                f[2],
                f[3],
                f[4],
                f[5]
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "iface lo 1 10049 65536 772 000000000000\n\
                        iface eth0 4 11043 1500 1 0200c0000002\n\
                        iface ifb0 2 82 1500 1 -\n\
                        inet lo 127.0.0.1 255.0.0.0 -\n\
                        inet eth0 192.0.2.2 255.255.255.0 192.0.2.255\n\
                        inet6 00000000000000000000000000000001 01 80 10 80 lo\n\
                        garbage line\n\
                        iface bad x y z w v\n";

    fn req(name: &str) -> Vec<u8> {
        let mut r = vec![0u8; IFREQ_LEN];
        r[..name.len()].copy_from_slice(name.as_bytes());
        r
    }

    #[test]
    fn parses_and_answers_like_linux() {
        let i = parse(TEXT);
        assert_eq!(i.ifaces.len(), 3);
        assert_eq!(i.inet.len(), 2);
        assert_eq!(i.ifaces[1].hw, [2, 0, 0xc0, 0, 0, 2]);
        // SIOCGIFCONF: the size of all, and only whole entries.
        let (b, all) = i.ifconf(0);
        assert_eq!((b.len(), all), (0, 80));
        let (b, _) = i.ifconf(79);
        assert_eq!(b.len(), 40);
        assert_eq!(&b[..3], b"lo\0");
        assert_eq!(&b[16..24], &[2, 0, 0, 0, 127, 0, 0, 1]);
        // Per-interface requests.
        let r = i.answer(SIOCGIFFLAGS, &req("eth0"), true).unwrap();
        assert_eq!(u16::from_le_bytes([r[16], r[17]]), 0x1043);
        let r = i.answer(SIOCGIFINDEX, &req("eth0"), true).unwrap();
        assert_eq!(r[16], 4);
        let r = i.answer(SIOCGIFMTU, &req("lo"), false).unwrap();
        assert_eq!(u32::from_le_bytes([r[16], r[17], r[18], r[19]]), 65536);
        let r = i.answer(SIOCGIFHWADDR, &req("eth0"), true).unwrap();
        assert_eq!(&r[16..24], &[1, 0, 2, 0, 0xc0, 0, 0, 2]);
        let r = i.answer(SIOCGIFBRDADDR, &req("eth0"), true).unwrap();
        assert_eq!(&r[20..24], &[192, 0, 2, 255]);
        assert_eq!(
            i.answer(SIOCGIFBRDADDR, &req("lo"), true),
            Err(Errno::EADDRNOTAVAIL)
        );
        assert_eq!(
            i.answer(SIOCGIFADDR, &req("ifb0"), true),
            Err(Errno::EADDRNOTAVAIL)
        );
        assert_eq!(
            i.answer(SIOCGIFADDR, &req("nope"), true),
            Err(Errno::ENODEV)
        );
        assert_eq!(i.answer(SIOCGIFADDR, &req("lo"), false), Err(Errno::ENOTTY));
        let mut by_index = vec![0u8; IFREQ_LEN];
        by_index[16] = 4;
        let r = i.answer(SIOCGIFNAME, &by_index, true).unwrap();
        assert_eq!(req_name(&r), b"eth0");
        by_index[16] = 9;
        assert_eq!(i.answer(SIOCGIFNAME, &by_index, true), Err(Errno::ENODEV));
        assert_eq!(
            i.if_inet6(),
            "00000000000000000000000000000001 01 80 10 80       lo\n"
        );
    }

    #[test]
    fn never_panics_on_odd_text_or_requests() {
        for t in [
            "",
            "iface",
            "iface a 1 zz 1 1 0",
            "inet a b c d",
            "iface a 1 1 1 1 abc",
        ] {
            let i = parse(t);
            let _ = i.ifconf(usize::MAX);
            for r in [SIOCGIFNAME, SIOCGIFFLAGS, SIOCGIFADDR, SIOCGIFHWADDR] {
                let _ = i.answer(r, &[0xff; 40], true);
                let _ = i.answer(r, &[0; 3], true);
            }
        }
        let long = parse("iface a 1 1 1 1 00112233445566778899aabbccddeeff0011\n");
        let _ = long.answer(SIOCGIFHWADDR, &req("a"), true);
    }
}
