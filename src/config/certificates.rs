//! `certificates:` in a StandaloneConfig: how long the certificates dcn
//! issues live, and when they renew. The bounds are checked while the file
//! is read, so an error names the field's line.

use crate::types::HumanDuration;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The shortest lifetime accepted: short enough for a lab to drill
/// renewal in minutes, long enough that a renewal (a few seconds) fits
/// many times into the renewal window.
pub const MIN_LIFETIME: Duration = Duration::from_secs(3 * 60);
/// The longest lifetime accepted for a TLS certificate (browsers and
/// most clients refuse longer ones anyway).
pub const MAX_LEAF_LIFETIME: Duration = Duration::from_secs(5 * YEAR);
/// The longest lifetime accepted for a CA.
pub const MAX_CA_LIFETIME: Duration = Duration::from_secs(30 * YEAR);
/// A year as `humantime` counts it (365.25 days), so that `1y` reads back
/// as `1year`.
const YEAR: u64 = 31_557_600;

/// Lifetimes and the renewal point of the certificates dcn issues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Certificates {
    /// The control plane's TLS certificates: API endpoints, join service,
    /// AMQPS, OVN southbound.
    #[serde(deserialize_with = "leaf_lifetime")]
    pub control_plane_lifetime: HumanDuration,
    /// Each edge node's client certificate (its OVN southbound identity).
    #[serde(deserialize_with = "leaf_lifetime")]
    pub node_lifetime: HumanDuration,
    /// A CA made by `dcn ca rotate`.
    #[serde(deserialize_with = "ca_lifetime")]
    pub ca_lifetime: HumanDuration,
    /// Renew a certificate once this share of its validity is left.
    pub renew_when_left: Percent,
}

impl Default for Certificates {
    fn default() -> Self {
        let years = |y: u64| HumanDuration(Duration::from_secs(y * YEAR));
        Certificates {
            control_plane_lifetime: years(1),
            node_lifetime: years(1),
            ca_lifetime: years(10),
            renew_when_left: Percent(33),
        }
    }
}

impl Certificates {
    /// How often the control plane looks for certificates to renew: often
    /// enough that a certificate is renewed early in its renewal window
    /// (a twentieth of the shortest lifetime), at most hourly, and not more
    /// often than every 10 s.
    pub fn check_interval(&self) -> Duration {
        check_interval(self.control_plane_lifetime.0.min(self.node_lifetime.0))
    }
}

/// A twentieth of `shortest`, from 10 s to an hour.
pub fn check_interval(shortest: Duration) -> Duration {
    (shortest / 20).clamp(Duration::from_secs(10), Duration::from_secs(3600))
}

fn bounded<'de, D: serde::Deserializer<'de>>(
    d: D,
    max: Duration,
    what: &str,
) -> Result<HumanDuration, D::Error> {
    let v = HumanDuration::deserialize(d)?;
    let show = |d: Duration| humantime::format_duration(d).to_string();
    if v.0 < MIN_LIFETIME || v.0 > max {
        return Err(serde::de::Error::custom(format!(
            "{} is outside the range of a {what}'s lifetime: {} to {}",
            show(v.0),
            show(MIN_LIFETIME),
            show(max)
        )));
    }
    Ok(v)
}

fn leaf_lifetime<'de, D: serde::Deserializer<'de>>(d: D) -> Result<HumanDuration, D::Error> {
    bounded(d, MAX_LEAF_LIFETIME, "certificate")
}

fn ca_lifetime<'de, D: serde::Deserializer<'de>>(d: D) -> Result<HumanDuration, D::Error> {
    bounded(d, MAX_CA_LIFETIME, "CA")
}

/// A share written `33%`, from 10 % to 90 %: less would leave no time to
/// renew a certificate of a node that is off for a while, more would renew
/// almost at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Percent(pub u8);

impl TryFrom<String> for Percent {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let n: u8 = s
            .strip_suffix('%')
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| format!("invalid share {s:?}: write a percentage such as 33%"))?;
        if !(10..=90).contains(&n) {
            return Err(format!("{n}% is outside 10% to 90%"));
        }
        Ok(Percent(n))
    }
}

impl From<Percent> for String {
    fn from(p: Percent) -> String {
        format!("{}%", p.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Certificates, String> {
        serde_yaml::from_str(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_short_lab_lifetimes() {
        let d = parse("{}").unwrap();
        assert_eq!(d, Certificates::default());
        assert_eq!(d.check_interval(), Duration::from_secs(3600));
        let lab =
            parse("controlPlaneLifetime: 6m\nnodeLifetime: 5m\nrenewWhenLeft: 50%\n").unwrap();
        assert_eq!(lab.renew_when_left, Percent(50));
        assert_eq!(lab.check_interval(), Duration::from_secs(15));
    }

    #[test]
    fn out_of_range_values_are_refused_with_the_range() {
        for (yaml, want) in [
            ("nodeLifetime: 1m", "3m to 5years"),
            ("controlPlaneLifetime: 6years", "outside the range"),
            ("caLifetime: 31years", "a CA's lifetime"),
            ("renewWhenLeft: 5%", "outside 10% to 90%"),
            ("renewWhenLeft: third", "write a percentage"),
            ("renewWhenLeft: 33", "write a percentage"),
        ] {
            let e = parse(yaml).unwrap_err();
            assert!(e.contains(want), "{yaml}: {e}");
        }
    }
}
