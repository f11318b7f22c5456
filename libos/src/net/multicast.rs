//! A UDP socket's multicast options: group membership, the interface,
//! TTL/hop limit and loopback of what it sends. They act on the host
//! socket, so once the socket is bound at the gateway each one goes there
//! (`sockopt LEVEL NAME HEX` on its `ctl`) and the host's answer is the
//! program's; set before the socket is bound (Linux allows it), the host
//! socket gets them when it is made, in the order they were set, and the
//! memberships are answered here as Linux would (a group that is none, a
//! second join, leaving a group not joined).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::options::{
    IP_MULTICAST_LOOP, IP_MULTICAST_TTL, IPPROTO_IP, IPPROTO_IPV6, IPV6_MULTICAST_HOPS,
    IPV6_MULTICAST_LOOP,
};
use crate::errno::Errno;

const IP_MULTICAST_IF: u32 = 32;
const IP_ADD_MEMBERSHIP: u32 = 35;
const IP_DROP_MEMBERSHIP: u32 = 36;
const IP_MULTICAST_ALL: u32 = 49;
const IPV6_MULTICAST_IF: u32 = 17;
const IPV6_ADD_MEMBERSHIP: u32 = 20;
const IPV6_DROP_MEMBERSHIP: u32 = 21;
const IPV6_MULTICAST_ALL: u32 = 29;

/// The most of an option's value the gateway takes (its `MAX_SOCKOPT`):
/// more than any of these requests is, so what is cut is what Linux
/// ignores too.
const MAX_VALUE: usize = 32;

/// Options kept here (not in [`super::options::Options`]): their values
/// are the host's to check.
pub fn own(level: u32, name: u32) -> bool {
    matches!(
        (level, name),
        (
            IPPROTO_IP,
            IP_MULTICAST_IF | IP_ADD_MEMBERSHIP | IP_DROP_MEMBERSHIP | IP_MULTICAST_ALL
        ) | (
            IPPROTO_IPV6,
            IPV6_MULTICAST_IF | IPV6_ADD_MEMBERSHIP | IPV6_DROP_MEMBERSHIP | IPV6_MULTICAST_ALL
        )
    )
}

/// Options checked and kept by [`super::options::Options`] that the host
/// socket needs too (they change what it sends).
pub fn also_host(level: u32, name: u32) -> bool {
    matches!(
        (level, name),
        (IPPROTO_IP, IP_MULTICAST_TTL | IP_MULTICAST_LOOP)
            | (IPPROTO_IPV6, IPV6_MULTICAST_HOPS | IPV6_MULTICAST_LOOP)
    )
}

/// The `ctl` message that sets `value` on the host socket.
pub fn ctl(level: u32, name: u32, value: &[u8]) -> String {
    let mut s = format!("sockopt {level} {name} ");
    for b in &value[..value.len().min(MAX_VALUE)] {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn int(value: &[u8]) -> Option<i32> {
    Some(i32::from_le_bytes(value.get(..4)?.try_into().ok()?))
}

/// An IPv4 option's value as `ip_setsockopt` reads it: an int, or a
/// single byte when that is all there is.
fn int_or_byte(value: &[u8]) -> i32 {
    int(value).unwrap_or_else(|| value.first().map_or(0, |b| i32::from(*b)))
}

/// What a socket keeps of its multicast options.
pub struct Multicast {
    /// `IP_MULTICAST_IF`'s address (what `getsockopt` gives).
    if4: [u8; 4],
    /// `IPV6_MULTICAST_IF`'s interface index.
    if6: i32,
    all4: bool,
    all6: bool,
    /// Set before the host socket existed, for it when it does.
    pending: Vec<(u32, u32, Vec<u8>)>,
    /// The memberships among them: (level, group and interface).
    joined: Vec<(u32, Vec<u8>)>,
}

impl Default for Multicast {
    fn default() -> Multicast {
        Multicast::new()
    }
}

impl Multicast {
    /// Linux's defaults: any interface, every group's datagrams
    /// (`IP_MULTICAST_ALL` 1).
    pub const fn new() -> Multicast {
        Multicast {
            if4: [0; 4],
            if6: 0,
            all4: true,
            all6: true,
            pending: Vec::new(),
            joined: Vec::new(),
        }
    }

    /// A membership change made before the host socket exists, answered
    /// as Linux answers it (`ip_mc_join_group`, `ipv6_sock_mc_join` and
    /// their leaves): `EINVAL` for a group that is not a multicast
    /// address, `EADDRINUSE` for a second join of a group on an interface,
    /// `EADDRNOTAVAIL` for leaving one not joined. Other options: `Ok`.
    /// (Whether the interface exists is the host's to say, at bind.)
    pub fn change_membership(&mut self, level: u32, name: u32, value: &[u8]) -> Result<(), Errno> {
        let (join, key) = match (level, name) {
            (IPPROTO_IP, IP_ADD_MEMBERSHIP | IP_DROP_MEMBERSHIP) => {
                if !(224..=239).contains(&value[0]) && name == IP_ADD_MEMBERSHIP {
                    return Err(Errno::EINVAL);
                }
                // `ip_mreq` or `ip_mreqn`: group, interface address, index.
                let mut key = value[..8].to_vec();
                key.extend_from_slice(value.get(8..12).unwrap_or(&[0; 4]));
                (name == IP_ADD_MEMBERSHIP, key)
            }
            (IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP | IPV6_DROP_MEMBERSHIP) => {
                if value[0] != 0xff {
                    return Err(Errno::EINVAL);
                }
                (name == IPV6_ADD_MEMBERSHIP, value[..20].to_vec())
            }
            _ => return Ok(()),
        };
        let at = self
            .joined
            .iter()
            .position(|(l, k)| *l == level && *k == key);
        match (join, at) {
            (true, Some(_)) => Err(Errno::EADDRINUSE),
            (true, None) => {
                self.joined.push((level, key));
                Ok(())
            }
            (false, Some(i)) => {
                self.joined.remove(i);
                Ok(())
            }
            (false, None) => Err(Errno::EADDRNOTAVAIL),
        }
    }

    /// Checks what Linux checks before it looks at interfaces and groups
    /// (`do_ip_setsockopt`, `do_ipv6_setsockopt`), for an option of
    /// [`own`] on a socket of `family`'s (`ipv6`).
    pub fn check(level: u32, name: u32, value: &[u8], ipv6: bool) -> Result<(), Errno> {
        if level == IPPROTO_IPV6 && !ipv6 {
            return Err(Errno::ENOPROTOOPT);
        }
        let min = match (level, name) {
            (IPPROTO_IP, IP_ADD_MEMBERSHIP | IP_DROP_MEMBERSHIP) => 8,
            (IPPROTO_IP, IP_MULTICAST_IF) => 4,
            (IPPROTO_IP, IP_MULTICAST_ALL) => 1,
            (IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP | IPV6_DROP_MEMBERSHIP) => 20,
            _ => 4,
        };
        if value.len() < min {
            return Err(Errno::EINVAL);
        }
        if level == IPPROTO_IP && name == IP_MULTICAST_ALL {
            let v = int_or_byte(value);
            if v != 0 && v != 1 {
                return Err(Errno::EINVAL);
            }
        }
        Ok(())
    }

    /// The host socket took `value` (or will): what `getsockopt` shows.
    pub fn took(&mut self, level: u32, name: u32, value: &[u8]) {
        match (level, name) {
            (IPPROTO_IP, IP_MULTICAST_IF) => {
                // An `ip_mreq`/`ip_mreqn` names the interface's address
                // after the group; a bare `in_addr` is that address.
                let at = if value.len() >= 8 { 4 } else { 0 };
                if let Some(a) = value.get(at..at + 4) {
                    self.if4.copy_from_slice(a);
                }
            }
            (IPPROTO_IP, IP_MULTICAST_ALL) => {
                self.all4 = int_or_byte(value) != 0;
            }
            (IPPROTO_IPV6, IPV6_MULTICAST_IF) => self.if6 = int(value).unwrap_or(0),
            (IPPROTO_IPV6, IPV6_MULTICAST_ALL) => self.all6 = int(value).unwrap_or(0) != 0,
            _ => {}
        }
    }

    /// Keeps an option for the host socket to come.
    pub fn defer(&mut self, level: u32, name: u32, value: &[u8]) {
        self.pending.push((level, name, value.to_vec()));
    }

    /// The options set before the host socket existed, in order.
    pub fn take_pending(&mut self) -> Vec<(u32, u32, Vec<u8>)> {
        core::mem::take(&mut self.pending)
    }

    /// `getsockopt` of an option of [`own`]; `None` for the others.
    pub fn get(&self, level: u32, name: u32, ipv6: bool) -> Option<Result<Vec<u8>, Errno>> {
        if !own(level, name) {
            return None;
        }
        if level == IPPROTO_IPV6 && !ipv6 {
            return Some(Err(Errno::EOPNOTSUPP));
        }
        Some(match (level, name) {
            (IPPROTO_IP, IP_MULTICAST_IF) => Ok(self.if4.to_vec()),
            (IPPROTO_IP, IP_MULTICAST_ALL) => Ok(i32::from(self.all4).to_le_bytes().to_vec()),
            (IPPROTO_IPV6, IPV6_MULTICAST_IF) => Ok(self.if6.to_le_bytes().to_vec()),
            (IPPROTO_IPV6, IPV6_MULTICAST_ALL) => Ok(i32::from(self.all6).to_le_bytes().to_vec()),
            // Memberships are not options to read back.
            _ => Err(Errno::ENOPROTOOPT),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_go_to_the_host_as_hex_and_read_back_as_linux_shows_them() {
        assert_eq!(
            ctl(IPPROTO_IP, IP_ADD_MEMBERSHIP, &[239, 1, 2, 3, 0, 0, 0, 0]),
            "sockopt 0 35 ef01020300000000"
        );
        assert_eq!(ctl(0, 35, &[0; 40]).len(), "sockopt 0 35 ".len() + 64);
        assert_eq!(
            Multicast::check(IPPROTO_IP, IP_ADD_MEMBERSHIP, &[0; 4], true),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            Multicast::check(IPPROTO_IPV6, IPV6_MULTICAST_IF, &[0; 4], false),
            Err(Errno::ENOPROTOOPT)
        );
        assert_eq!(
            Multicast::check(IPPROTO_IP, IP_MULTICAST_ALL, &[2, 0, 0, 0], true),
            Err(Errno::EINVAL)
        );
        let mut m = Multicast::new();
        m.took(
            IPPROTO_IP,
            IP_MULTICAST_IF,
            &[239, 1, 2, 3, 127, 0, 0, 1, 0, 0, 0, 0],
        );
        assert_eq!(
            m.get(IPPROTO_IP, IP_MULTICAST_IF, false),
            Some(Ok(alloc::vec![127, 0, 0, 1]))
        );
        m.took(IPPROTO_IPV6, IPV6_MULTICAST_IF, &2i32.to_le_bytes());
        assert_eq!(
            m.get(IPPROTO_IPV6, IPV6_MULTICAST_IF, true),
            Some(Ok(2i32.to_le_bytes().to_vec()))
        );
        assert_eq!(
            m.get(IPPROTO_IP, IP_MULTICAST_ALL, true),
            Some(Ok(1i32.to_le_bytes().to_vec()))
        );
        assert_eq!(
            m.get(IPPROTO_IP, IP_ADD_MEMBERSHIP, true),
            Some(Err(Errno::ENOPROTOOPT))
        );
        assert_eq!(m.get(IPPROTO_IP, 1, true), None);
    }
}
