//! Parsers for the text files preflight reads: `/etc/os-release`,
//! `/proc/cpuinfo`, `/proc/meminfo`, `/proc/net/tcp{,6}` and `/etc/hosts`.
//! Pure functions of the text, so they are tested on committed samples.

use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The fields of `os-release(5)` that decide whether dcn supports the OS.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct OsRelease {
    /// `ID`, e.g. `debian`.
    pub id: String,
    /// `VERSION_ID`, e.g. `12`.
    pub version_id: String,
    /// `PRETTY_NAME`, e.g. `Debian GNU/Linux 12 (bookworm)`.
    pub pretty_name: String,
}

/// Parse `os-release(5)`: `KEY=value` lines, values optionally quoted,
/// `#` comments. Missing keys stay empty.
pub fn parse_os_release(text: &str) -> OsRelease {
    let mut os = OsRelease::default();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = unquote(value.trim());
        match key.trim() {
            "ID" => os.id = value,
            "VERSION_ID" => os.version_id = value,
            "PRETTY_NAME" => os.pretty_name = value,
            _ => {}
        }
    }
    os
}

/// Strip shell-style quotes and backslash escapes from an os-release value.
fn unquote(v: &str) -> String {
    let inner = match v.as_bytes() {
        [q @ (b'"' | b'\''), .., last] if last == q && v.len() >= 2 => &v[1..v.len() - 1],
        _ => v,
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

/// What `/proc/cpuinfo` says about the CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuInfo {
    /// Logical CPUs (`processor` entries).
    pub processors: u32,
    /// `vmx` (Intel VT-x) or `svm` (AMD-V) when the CPU exposes hardware
    /// virtualization.
    pub virt_flag: Option<&'static str>,
}

pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut processors = 0;
    let mut virt_flag = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "processor" => processors += 1,
            "flags" if virt_flag.is_none() => {
                virt_flag = value.split_whitespace().find_map(|f| match f {
                    "vmx" => Some("vmx"),
                    "svm" => Some("svm"),
                    _ => None,
                });
            }
            _ => {}
        }
    }
    CpuInfo {
        processors,
        virt_flag,
    }
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
pub fn parse_meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut fields = line["MemTotal:".len()..].split_whitespace();
    let value: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => Some(value * 1024),
        None => Some(value),
        Some(_) => None,
    }
}

/// A TCP socket in the LISTEN state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listener {
    pub address: IpAddr,
    pub port: u16,
    /// The socket's inode, to find the process that owns it.
    #[serde(skip)]
    pub inode: u64,
    /// The owning process (`name[pid]`), when it could be found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
}

/// `st` of a listening socket in `/proc/net/tcp` (`TCP_LISTEN`).
const TCP_LISTEN: &str = "0A";

/// The listening sockets of a `/proc/net/tcp` or `/proc/net/tcp6` text.
/// Lines that do not parse are skipped: one odd line must not hide the rest.
pub fn parse_proc_net_tcp(text: &str) -> Vec<Listener> {
    text.lines().skip(1).filter_map(parse_tcp_line).collect()
}

fn parse_tcp_line(line: &str) -> Option<Listener> {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < 10 || fields[3] != TCP_LISTEN {
        return None;
    }
    let (addr, port) = fields[1].split_once(':')?;
    Some(Listener {
        address: parse_kernel_addr(addr)?,
        port: u16::from_str_radix(port, 16).ok()?,
        inode: fields[9].parse().ok()?,
        process: None,
    })
}

/// The kernel prints addresses as 32-bit words in host byte order, in hex:
/// `0100007F` is 127.0.0.1 on x86.
fn parse_kernel_addr(hex: &str) -> Option<IpAddr> {
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok()?;
        Some(w.to_ne_bytes())
    };
    match hex.len() {
        8 => Some(IpAddr::V4(Ipv4Addr::from(word(0)?))),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            Some(IpAddr::V6(Ipv6Addr::from(bytes)))
        }
        _ => None,
    }
}

/// A line of `/etc/hosts` that names a given host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostsLine {
    pub address: IpAddr,
    /// The line as written, without its comment.
    pub text: String,
}

/// The lines of an `/etc/hosts` text that map `name` (case-insensitive),
/// in file order, which is the order the resolver returns them in.
pub fn hosts_lines_naming(text: &str, name: &str) -> Vec<HostsLine> {
    text.lines()
        .filter_map(|line| {
            let line = line.split('#').next().unwrap_or("").trim();
            let mut fields = line.split_whitespace();
            let address = fields.next()?.parse().ok()?;
            fields
                .any(|n| n.eq_ignore_ascii_case(name))
                .then(|| HostsLine {
                    address,
                    text: line.split_whitespace().collect::<Vec<_>>().join(" "),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = include_str!("testdata/proc-net-tcp");
    const TCP6: &str = include_str!("testdata/proc-net-tcp6");

    fn ports(listeners: &[Listener]) -> Vec<(String, u16)> {
        listeners
            .iter()
            .map(|l| (l.address.to_string(), l.port))
            .collect()
    }

    #[test]
    fn tcp_listeners_only_in_the_listen_state() {
        let l = parse_proc_net_tcp(TCP);
        // The established and TIME_WAIT connections to 3306 are not listeners.
        assert_eq!(
            ports(&l),
            vec![
                ("0.0.0.0".to_string(), 2024),
                ("0.0.0.0".to_string(), 5000),
                ("127.0.0.1".to_string(), 3306),
            ]
        );
        assert_eq!(l[1].inode, 102590);
    }

    #[test]
    fn tcp6_listeners_only_in_the_listen_state() {
        let l = parse_proc_net_tcp(TCP6);
        assert_eq!(
            ports(&l),
            vec![
                ("::1".to_string(), 6640),
                ("::ffff:192.0.2.2".to_string(), 9696),
                ("::".to_string(), 9292),
                ("fd00::2".to_string(), 8774),
            ]
        );
    }

    #[test]
    fn odd_lines_are_skipped() {
        let text = "header\n  0: zz:0016 00000000:0000 0A 0:0 0:0 0 0 0 1\n   1: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7 1\n";
        assert_eq!(
            ports(&parse_proc_net_tcp(text)),
            vec![("127.0.0.1".to_string(), 3306)]
        );
        assert!(parse_proc_net_tcp("").is_empty());
    }

    #[test]
    fn os_release_of_debian_12() {
        let os = parse_os_release(include_str!("testdata/os-release-debian12"));
        assert_eq!(os.id, "debian");
        assert_eq!(os.version_id, "12");
        assert_eq!(os.pretty_name, "Debian GNU/Linux 12 (bookworm)");
    }

    #[test]
    fn os_release_quotes_comments_and_missing_keys() {
        let os = parse_os_release("# a comment\nID='ubuntu'\nVERSION_ID=\"22.04\"\nNAME=x\n");
        assert_eq!(
            (os.id.as_str(), os.version_id.as_str()),
            ("ubuntu", "22.04")
        );
        assert_eq!(os.pretty_name, "");
        let os = parse_os_release("ID=debian\nPRETTY_NAME=\"Debian \\\"testing\\\"\"\n");
        assert_eq!(os.pretty_name, "Debian \"testing\"");
        assert_eq!(os.version_id, "", "Debian testing has no VERSION_ID");
    }

    #[test]
    fn cpuinfo_counts_processors_and_finds_virtualization() {
        let intel = "processor\t: 0\nflags\t\t: fpu vme vmx sse\n\nprocessor\t: 1\nflags\t\t: fpu vme vmx sse\n";
        assert_eq!(
            parse_cpuinfo(intel),
            CpuInfo {
                processors: 2,
                virt_flag: Some("vmx")
            }
        );
        let amd = "processor : 0\nflags : fpu svm\n";
        assert_eq!(parse_cpuinfo(amd).virt_flag, Some("svm"));
        // A guest without nested virtualization: no vmx, no svm.
        let guest = "processor\t: 0\nflags\t\t: fpu hypervisor sse4_2 vmxnet\n";
        assert_eq!(parse_cpuinfo(guest).virt_flag, None);
    }

    #[test]
    fn meminfo_total_in_bytes() {
        let text = "MemTotal:       24567164 kB\nMemFree:        20000000 kB\n";
        assert_eq!(parse_meminfo_total(text), Some(24567164 * 1024));
        assert_eq!(parse_meminfo_total("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn hosts_lines_for_a_name() {
        let text = "127.0.0.1 localhost\n127.0.1.1\tedge1.example.com edge1 # debian\n::1 localhost ip6-localhost\n192.0.2.7 EDGE1\nbogus edge1\n";
        let lines = hosts_lines_naming(text, "edge1");
        let addrs: Vec<String> = lines.iter().map(|l| l.address.to_string()).collect();
        assert_eq!(addrs, vec!["127.0.1.1", "192.0.2.7"]);
        assert_eq!(lines[0].text, "127.0.1.1 edge1.example.com edge1");
        assert!(hosts_lines_naming(text, "edge2").is_empty());
    }
}
