//! Validated value types for config files. Each parses from a string and
//! rejects bad values while the YAML is read, so the error carries the
//! field's path and line.

pub mod bundle_ttl;
pub mod endpoints;
mod ini_text;
mod package_source;

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A validated string type. `string_newtype!(Name, check)` where `check`
/// returns `Result<(), String>`; or `string_newtype!(Name, normalize = f)`
/// where `f` returns the value to keep (e.g. lowercased). Either way a bad
/// value is refused while the YAML is read, with its field path.
macro_rules! string_newtype {
    ($(#[$doc:meta])* $name:ident, normalize = $norm:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = String;
            fn try_from(s: String) -> Result<Self, String> {
                let normalize: fn(&str) -> Result<String, String> = $norm;
                Ok($name(normalize(&s)?))
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::try_from(s.to_string())
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                v.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
    ($(#[$doc:meta])* $name:ident, $check:expr) => {
        $crate::types::string_newtype!(
            $(#[$doc])* $name,
            normalize = |s| {
                let check: fn(&str) -> Result<(), String> = $check;
                check(s).map(|()| s.to_string())
            }
        );
    };
}
pub(crate) use string_newtype;

string_newtype!(
    /// A host name (RFC 1123): dot-separated labels of lowercase letters,
    /// digits and hyphens.
    Hostname,
    check_hostname
);

string_newtype!(
    /// An edge node's name: a host name of at most [`NODE_NAME_MAX`]
    /// characters and not `localhost`. It becomes the node's own host name
    /// (Linux's limit is 64), nova's `host`, the OVN chassis name, a
    /// certificate's CN and part of the node's user names.
    NodeName,
    check_node_name
);

/// The longest node name: Linux's limit on a host's own name.
pub const NODE_NAME_MAX: usize = 64;

impl NodeName {
    /// Whether `name` is a valid node name (a cheap check for paths built
    /// from a name a client sent).
    pub fn is_valid(name: &str) -> bool {
        check_node_name(name).is_ok()
    }
}

string_newtype!(
    /// An edge site's name. It becomes an availability zone, a host
    /// aggregate and part of user names, so it is short and plain:
    /// lowercase letters, digits and hyphens, starting with a letter.
    SiteName,
    check_site_name
);

string_newtype!(
    /// A keystone region id, such as `RegionOne`.
    RegionName,
    |s| {
        if !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            Ok(())
        } else {
            Err(format!("invalid region name {s:?}: use 1-64 letters, digits, '-' or '_'"))
        }
    }
);

string_newtype!(
    /// A short identifier: a physical network or bridge name.
    Identifier,
    |s| {
        if !s.is_empty() && s.len() <= 15 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            Ok(())
        } else {
            Err(format!("invalid name {s:?}: use 1-15 letters, digits, '-' or '_'"))
        }
    }
);

string_newtype!(
    /// An absolute path to a file on this host. Relative paths are refused:
    /// they would depend on the directory dcn happens to run in.
    AbsolutePath,
    |s| {
        if s.is_empty() || s.len() > 4096 || s.contains('\0') {
            Err("invalid path: write an absolute path of at most 4096 bytes".to_string())
        } else if !s.starts_with('/') {
            // Not repeating the value: a password put here by mistake stays unprinted.
            Err("a relative path: write it from the root, e.g. /etc/dcn/bmc/edge1-n1.password".to_string())
        } else {
            Ok(())
        }
    }
);

impl AbsolutePath {
    pub fn path(&self) -> &std::path::Path {
        std::path::Path::new(&self.0)
    }
}

fn check_hostname(s: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("invalid hostname {s:?}: {why}"));
    if s.is_empty() || s.len() > 253 {
        return bad("it must be 1-253 characters long");
    }
    for label in s.split('.') {
        if label.is_empty() || label.len() > 63 {
            return bad("each dot-separated label must be 1-63 characters long");
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return bad("use lowercase letters, digits and '-' only");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return bad("a label cannot start or end with '-'");
        }
    }
    if s.split('.')
        .next_back()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
    {
        return bad("it looks like an IP address; put addresses in an address field");
    }
    Ok(())
}

fn check_node_name(s: &str) -> Result<(), String> {
    check_hostname(s)?;
    if s.len() > NODE_NAME_MAX {
        return Err(format!(
            "invalid node name ({} characters): a node's name is its own host name, at most {NODE_NAME_MAX} characters",
            s.len()
        ));
    }
    if s == "localhost" || s.starts_with("localhost.") {
        return Err(format!(
            "{s:?} is reserved: every host calls itself localhost; give the node its own name"
        ));
    }
    Ok(())
}

fn check_site_name(s: &str) -> Result<(), String> {
    let ok = (1..=32).contains(&s.len())
        && s.as_bytes()[0].is_ascii_lowercase()
        && !s.ends_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid site name {s:?}: use 1-32 lowercase letters, digits and '-', starting with a letter (e.g. edge1)"
        ))
    }
}

/// A TCP port (1-65535).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "u32", into = "u32")]
pub struct Port(pub u16);

impl TryFrom<u32> for Port {
    type Error = String;
    fn try_from(v: u32) -> Result<Self, String> {
        match u16::try_from(v) {
            Ok(p) if p > 0 => Ok(Port(p)),
            _ => Err(format!("invalid port {v}: use 1-65535")),
        }
    }
}

impl From<Port> for u32 {
    fn from(p: Port) -> u32 {
        p.0.into()
    }
}

/// An IP network in CIDR notation, such as `192.168.24.0/24`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Cidr(pub ipnet::IpNet);

impl TryFrom<String> for Cidr {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let net: ipnet::IpNet = s.parse().map_err(|_| {
            format!(
                "invalid CIDR {s:?}: write an address and a prefix length, e.g. 192.168.24.0/24"
            )
        })?;
        if net.trunc() != net {
            return Err(format!(
                "invalid CIDR {s:?}: host bits are set; did you mean {}?",
                net.trunc()
            ));
        }
        Ok(Cidr(net))
    }
}

impl From<Cidr> for String {
    fn from(c: Cidr) -> String {
        c.0.to_string()
    }
}

pub use package_source::PackageSource;

/// A worker count: `auto` (sized to the host's CPUs) or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "serde_yaml::Value", into = "serde_yaml::Value")]
pub enum Workers {
    #[default]
    Auto,
    Count(u32),
}

impl Workers {
    /// The number of workers on a host with `cpus` CPUs: half the CPUs,
    /// at least 1 and at most 4 (API services on an all-in-one host share
    /// the CPUs with everything else).
    pub fn resolve(self, cpus: usize) -> u32 {
        match self {
            Workers::Count(n) => n,
            Workers::Auto => (cpus as u32 / 2).clamp(1, 4),
        }
    }
}

impl TryFrom<serde_yaml::Value> for Workers {
    type Error = String;
    fn try_from(v: serde_yaml::Value) -> Result<Self, String> {
        match &v {
            serde_yaml::Value::String(s) if s == "auto" => Ok(Workers::Auto),
            serde_yaml::Value::Number(n) => match n.as_u64() {
                Some(c @ 1..=64) => Ok(Workers::Count(c as u32)),
                _ => Err(format!("invalid worker count {n}: use auto or 1-64")),
            },
            other => Err(format!("invalid worker count {other:?}: use auto or 1-64")),
        }
    }
}

impl From<Workers> for serde_yaml::Value {
    fn from(w: Workers) -> serde_yaml::Value {
        match w {
            Workers::Auto => "auto".into(),
            Workers::Count(n) => n.into(),
        }
    }
}

/// A duration written as humans do: `24h`, `90m`, `7d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct HumanDuration(pub Duration);

impl TryFrom<String> for HumanDuration {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let d = humantime::parse_duration(&s)
            .map_err(|e| format!("invalid duration {s:?} ({e}): write e.g. 30m, 24h or 7d"))?;
        if d.is_zero() {
            return Err(format!(
                "invalid duration {s:?}: it must be longer than zero"
            ));
        }
        Ok(HumanDuration(d))
    }
}

impl From<HumanDuration> for String {
    fn from(d: HumanDuration) -> String {
        humantime::format_duration(d.0).to_string()
    }
}

pub use ini_text::IniText;

#[cfg(test)]
mod tests;
