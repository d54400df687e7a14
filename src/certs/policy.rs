//! When a certificate is due: renewal starts once the configured share of
//! its validity is left (`certificates.renewWhenLeft`), so a host that was
//! off for a while still renews before it expires.

use crate::config::certificates::Certificates;
use crate::pki::CertInfo;
use crate::pki::lifetime::system_time;
use std::time::{Duration, SystemTime};

/// Lifetimes and the renewal point, from the control plane's config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub control_plane: Duration,
    pub node: Duration,
    pub ca: Duration,
    /// Renew when this many percent of the validity are left.
    pub renew_when_left: u8,
}

impl From<&Certificates> for Policy {
    fn from(c: &Certificates) -> Policy {
        Policy {
            control_plane: c.control_plane_lifetime.0,
            node: c.node_lifetime.0,
            ca: c.ca_lifetime.0,
            renew_when_left: c.renew_when_left.0,
        }
    }
}

impl Policy {
    /// How often certificates are checked (see
    /// [`Certificates::check_interval`]).
    pub fn check_interval(&self) -> Duration {
        crate::config::certificates::check_interval(self.control_plane.min(self.node))
    }
}

impl Default for Policy {
    fn default() -> Policy {
        Policy::from(&Certificates::default())
    }
}

/// Where a certificate stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Valid, and not due before this time.
    Good { renew_at: SystemTime },
    /// In its renewal window: it should be renewed now.
    Due,
    /// Past its end.
    Expired,
}

/// Where `info` stands at `now` when renewal starts with `renew_when_left`
/// percent of its validity left.
pub fn standing(info: &CertInfo, renew_when_left: u8, now: SystemTime) -> Standing {
    let not_before = system_time(info.not_before);
    let not_after = system_time(info.not_after);
    if now >= not_after {
        return Standing::Expired;
    }
    let validity = not_after
        .duration_since(not_before)
        .unwrap_or(Duration::ZERO);
    let window = validity.mul_f64(f64::from(renew_when_left) / 100.0);
    let renew_at = not_after - window;
    if now >= renew_at {
        Standing::Due
    } else {
        Standing::Good { renew_at }
    }
}

/// What is left of a certificate's validity at `now` (zero once expired).
pub fn left(info: &CertInfo, now: SystemTime) -> Duration {
    system_time(info.not_after)
        .duration_since(now)
        .unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::lifetime::validity;
    use crate::pki::{CertificateAuthority, LeafRequest, Usage};

    fn issued(lifetime: Duration) -> CertInfo {
        let ca = CertificateAuthority::generate("policy test CA").unwrap();
        let leaf = ca
            .issue_for(
                &LeafRequest {
                    common_name: "x".into(),
                    dns_names: vec!["x".into()],
                    ip_addresses: vec![],
                    usage: Usage::Server,
                },
                validity(lifetime),
            )
            .unwrap();
        CertInfo::from_pem(&leaf.cert_pem).unwrap()
    }

    #[test]
    fn a_certificate_is_due_once_the_share_is_left_and_expired_after_its_end() {
        let info = issued(Duration::from_secs(600));
        let start = system_time(info.not_before);
        let end = system_time(info.not_after);
        // A short lifetime is backdated by a tenth: 660 s in all.
        assert_eq!(end.duration_since(start).unwrap().as_secs(), 660);
        let renew_at = end - Duration::from_secs(660).mul_f64(0.33);
        assert_eq!(standing(&info, 33, start), Standing::Good { renew_at });
        let third = standing(&info, 33, renew_at - Duration::from_secs(10));
        assert!(matches!(third, Standing::Good { .. }), "{third:?}");
        assert_eq!(standing(&info, 33, renew_at), Standing::Due);
        assert_eq!(
            standing(&info, 90, start + Duration::from_secs(70)),
            Standing::Due
        );
        assert_eq!(standing(&info, 33, end), Standing::Expired);
        assert_eq!(left(&info, end + Duration::from_secs(5)), Duration::ZERO);
        assert_eq!(
            left(&info, end - Duration::from_secs(5)),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn long_lifetimes_are_backdated_by_an_hour_only() {
        let info = issued(Duration::from_secs(365 * 24 * 3600));
        let span = system_time(info.not_after)
            .duration_since(system_time(info.not_before))
            .unwrap();
        assert_eq!(span.as_secs(), 365 * 24 * 3600 + 3600);
    }
}
