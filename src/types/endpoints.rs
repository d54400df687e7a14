//! Validated endpoint and digest types: where an edge reaches the control
//! plane (TLS only) and the SHA-256 digests that pin what it fetches. Each
//! checks itself while the YAML is read, so a bad value is refused with the
//! field's path.

use crate::types::Hostname;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

crate::types::string_newtype!(
    /// An `https://` URL: an edge sends service credentials to it over the
    /// WAN, so plain HTTP is refused.
    HttpsUrl,
    |s| check_url(s, &["https"])
);

crate::types::string_newtype!(
    /// Where an edge reaches a control-plane service over the WAN: an
    /// `https://` or `amqps://` URL, or an OVN database remote
    /// `ssl:<host>:<port>` (an IPv6 address in brackets). Only TLS: the
    /// edge sends its site's credentials there.
    TlsEndpoint,
    check_tls_endpoint
);

impl TlsEndpoint {
    /// `ssl`, `https` or `amqps`.
    pub fn scheme(&self) -> &str {
        self.split().0
    }

    /// The host as written (an IPv6 address keeps its brackets).
    pub fn host(&self) -> &str {
        self.split().1
    }

    /// The port, or the scheme's default (443 for https, 5671 for amqps).
    pub fn port(&self) -> u16 {
        let (scheme, _, port) = self.split();
        port.and_then(|p| p.parse().ok())
            .unwrap_or(if scheme == "amqps" { 5671 } else { 443 })
    }

    /// `host:port`, for a TCP connection.
    pub fn host_port(&self) -> String {
        format!("{}:{}", self.host(), self.port())
    }

    /// (scheme, host, port if written); the value was checked on creation.
    fn split(&self) -> (&str, &str, Option<&str>) {
        let s = self.as_str();
        let (scheme, rest) = match s.split_once("://") {
            Some(parts) => parts,
            None => s.split_once(':').unwrap_or((s, "")),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let (host, port) = match authority.find(']') {
            Some(end) => (&authority[..=end], authority[end + 1..].strip_prefix(':')),
            None => match authority.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            },
        };
        (scheme, host, port)
    }
}

fn check_tls_endpoint(s: &str) -> Result<(), String> {
    if s.starts_with("ssl:") {
        return check_ovn_remote(s);
    }
    check_url(s, &["https", "amqps"]).map_err(|e| {
        format!("{e} (an edge sends credentials there over the WAN, so only TLS is accepted: https://, amqps:// or ssl:<host>:<port>)")
    })
}

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
pub mod timestamp {
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
    }

    #[test]
    fn tls_endpoints_give_their_host_and_port() {
        let cases = [
            ("ssl:10.240.0.10:6642", "ssl", "10.240.0.10:6642"),
            ("ssl:[fd00::10]:6642", "ssl", "[fd00::10]:6642"),
            (
                "amqps://cp.lab.example:5671",
                "amqps",
                "cp.lab.example:5671",
            ),
            ("amqps://cp.lab.example/", "amqps", "cp.lab.example:5671"),
            ("https://cp:8774/v2.1", "https", "cp:8774"),
            ("https://[fd00::10]/x?y", "https", "[fd00::10]:443"),
        ];
        for (text, scheme, host_port) in cases {
            let e: TlsEndpoint = text.parse().unwrap();
            assert_eq!(
                (e.scheme(), e.host_port().as_str()),
                (scheme, host_port),
                "{text}"
            );
        }
        for bad in [
            "tcp:10.0.0.1:6642",
            "ssl:10.0.0.1",
            "ssl::6642",
            "ssl:[fd00::10]",
            "http://cp:6080/vnc_auto.html",
            "amqp://cp:5672",
            "amqps://user:pw@cp:5671",
            "cp lab",
        ] {
            let err = bad.parse::<TlsEndpoint>().unwrap_err();
            assert!(!err.is_empty(), "{bad}");
        }
        let err = "http://cp/".parse::<TlsEndpoint>().unwrap_err();
        assert!(err.contains("only TLS"), "{err}");
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
