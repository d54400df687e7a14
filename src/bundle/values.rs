//! Validated value types of the manifest. Each checks itself while the YAML
//! is read, so a bad value is refused with the field's path.

use crate::config::types::Hostname;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

crate::config::types::string_newtype!(
    /// An `https://` URL: an edge sends service credentials to it over the
    /// WAN, so plain HTTP is refused.
    HttpsUrl,
    |s| check_url(s, &["https"])
);

crate::config::types::string_newtype!(
    /// An `http://` or `https://` URL, for the VNC console's base URL, which
    /// is what a browser opens rather than where an edge sends credentials.
    WebUrl,
    |s| check_url(s, &["https", "http"])
);

crate::config::types::string_newtype!(
    /// A host name or an IP address.
    NetHost,
    |s| check_host(s).map_err(|why| format!("invalid host {s:?}: {why}"))
);

crate::config::types::string_newtype!(
    /// An OVN database remote over TLS: `ssl:<host>:<port>`, with an IPv6
    /// address in brackets (`ssl:[fd00::10]:6642`).
    OvnRemote,
    check_ovn_remote
);

/// Longest URL accepted; real ones are a few dozen characters.
const MAX_URL_LENGTH: usize = 2048;

fn check_url(s: &str, schemes: &[&str]) -> Result<(), String> {
    let bad = |why: String| Err(format!("invalid URL {s:?}: {why}"));
    if s.len() > MAX_URL_LENGTH {
        return bad(format!("it is longer than {MAX_URL_LENGTH} characters"));
    }
    if !s.bytes().all(|b| b.is_ascii_graphic()) {
        return bad("it may hold only printable ASCII characters, without spaces".into());
    }
    let Some(rest) = schemes
        .iter()
        .find_map(|sch| s.strip_prefix(sch)?.strip_prefix("://"))
    else {
        return bad(format!("it must start with {}://", schemes.join(":// or ")));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return bad("credentials do not belong in a URL".into());
    }
    check_host_port(authority, true).or_else(bad)
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn check_host_port(s: &str, port_optional: bool) -> Result<(), String> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return Err("an IPv6 address needs its closing ']'".into());
        };
        v6.parse::<Ipv6Addr>()
            .map_err(|_| format!("{v6:?} is not an IPv6 address"))?;
        match after {
            "" => (None, None),
            _ => match after.strip_prefix(':') {
                Some(p) => (None, Some(p)),
                None => return Err(format!("unexpected {after:?} after the IPv6 address")),
            },
        }
    } else if s.matches(':').count() > 1 {
        return Err("write an IPv6 address in brackets, e.g. [fd00::10]".into());
    } else {
        match s.split_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(s), None),
        }
    };
    if let Some(host) = host {
        check_host(host)?;
    }
    match port {
        None if port_optional => Ok(()),
        None => Err("a port is required, e.g. :6642".into()),
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && !p.starts_with('0') => Ok(()),
            _ => Err(format!("{p:?} is not a port number (1-65535)")),
        },
    }
}

fn check_host(s: &str) -> Result<(), String> {
    if s.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    s.parse::<Hostname>().map(|_| ())
}

fn check_ovn_remote(s: &str) -> Result<(), String> {
    let Some(rest) = s.strip_prefix("ssl:") else {
        return Err(format!(
            "invalid OVN remote {s:?}: it must be a TLS remote like ssl:10.240.0.10:6642"
        ));
    };
    check_host_port(rest, false).map_err(|why| format!("invalid OVN remote {s:?}: {why}"))
}

/// A SHA-256 digest written `sha256:<64 lowercase hex digits>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256Digest([u8; 32]);

impl Sha256Digest {
    pub fn of(bytes: &[u8]) -> Sha256Digest {
        Sha256Digest(Sha256::digest(bytes).into())
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", hex::encode(self.0))
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl TryFrom<String> for Sha256Digest {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let bytes = s
            .strip_prefix("sha256:")
            .filter(|h| {
                h.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            })
            .and_then(|h| hex::decode(h).ok())
            .and_then(|b| <[u8; 32]>::try_from(b).ok());
        bytes
            .map(Sha256Digest)
            .ok_or_else(|| format!("invalid digest {s:?}: write sha256:<64 lowercase hex digits>"))
    }
}

impl From<Sha256Digest> for String {
    fn from(d: Sha256Digest) -> String {
        d.to_string()
    }
}

/// Serde for timestamps as RFC 3339 text (see [`crate::timefmt`]).
pub(super) mod timestamp {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::SystemTime;

    pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::timefmt::rfc3339(*t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(d)?;
        crate::timefmt::parse_rfc3339(&text).map_err(|e| serde::de::Error::custom(format!("{e:#}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        for ok in [
            "https://10.240.0.10:5000/v3",
            "https://cp.lab.example",
            "https://[fd00::10]:8774/v2.1?x=1#y",
        ] {
            assert!(ok.parse::<HttpsUrl>().is_ok(), "{ok}");
        }
        let cases = [
            ("http://10.0.0.1/", "must start with https://"),
            ("https://", "invalid hostname"),
            ("https://user:pw@cp/", "credentials"),
            ("https://cp:0/", "not a port"),
            ("https://cp:99999/", "not a port"),
            ("https://fd00::1/", "in brackets"),
            ("https://cp /x", "printable ASCII"),
            ("https://[fd00::1/", "closing ']'"),
        ];
        for (bad, why) in cases {
            let err = bad.parse::<HttpsUrl>().unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
        assert!("http://cp:6080/vnc_auto.html".parse::<WebUrl>().is_ok());
        assert!("ftp://cp/".parse::<WebUrl>().is_err());
    }

    #[test]
    fn hosts_and_ovn_remotes() {
        assert!("cp.lab.example".parse::<NetHost>().is_ok());
        assert!("fd00::10".parse::<NetHost>().is_ok());
        assert!("cp lab".parse::<NetHost>().is_err());
        assert!("ssl:10.240.0.10:6642".parse::<OvnRemote>().is_ok());
        assert!("ssl:[fd00::10]:6642".parse::<OvnRemote>().is_ok());
        for bad in [
            "tcp:10.0.0.1:6642",
            "ssl:10.0.0.1",
            "ssl::6642",
            "ssl:[fd00::10]",
        ] {
            assert!(bad.parse::<OvnRemote>().is_err(), "{bad}");
        }
    }

    #[test]
    fn digests() {
        let d = Sha256Digest::of(b"abc");
        let text = d.to_string();
        assert_eq!(Sha256Digest::try_from(text.clone()).unwrap(), d);
        assert!(Sha256Digest::try_from(text.to_uppercase()).is_err());
        assert!(Sha256Digest::try_from(text[..text.len() - 2].to_string()).is_err());
        assert!(Sha256Digest::try_from(text.replace("sha256", "md5")).is_err());
    }
}
