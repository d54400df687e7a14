//! A join bundle for site edge1 with the lab's control-plane addresses,
//! signed by a CA the test made: what `dcn bundle export` writes, for the
//! tests that need a valid (or expired) bundle without a control plane.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The bundle's join token (`ID.SECRET`).
pub const TOKEN: &str = "abc123.0123456789abcdefghijklmnopqrstuv";

/// Write `dir/name`, expiring `ttl_secs` from now (negative: already
/// expired), exported two days ago.
pub fn write_lab_bundle(
    dir: &Path,
    name: &str,
    ttl_secs: i64,
    ca: &dcn::pki::CertificateAuthority,
) -> PathBuf {
    let now = SystemTime::now();
    let ttl = Duration::from_secs(ttl_secs.unsigned_abs());
    let not_after = if ttl_secs >= 0 { now + ttl } else { now - ttl };
    let manifest = format!(
        "formatVersion: 3\nsite: edge1\ncreatedAt: {}\nnotAfter: {}\ncontrolPlane:\n  joinEndpoint: https://10.240.0.10:9443\n  region: RegionOne\n  exports:\n    compute: https://10.240.0.10:8774/v2.1\n    identity: https://10.240.0.10:5000/v3\n    image: https://10.240.0.10:9292\n    messaging: amqps://10.240.0.10:5671\n    network: https://10.240.0.10:9696\n    novncproxy: https://10.240.0.10:6080/vnc_auto.html\n    ovnSouthbound: ssl:10.240.0.10:6642\n    placement: https://10.240.0.10:8778\nhosts:\n- address: 10.240.0.10\n  names: [cp.lab.test]\ncustomServiceConfig: {{}}\ntokenId: abc123\nmembers: {{}}\n",
        dcn::timefmt::rfc3339(now - Duration::from_secs(48 * 3600)),
        dcn::timefmt::rfc3339(not_after)
    );
    let contents = dcn::bundle::BundleContents {
        manifest: dcn::config::parse(&manifest, "test").unwrap(),
        ca_cert_pem: ca.cert_pem().to_string(),
        token: TOKEN.parse().unwrap(),
    };
    let path = dir.join(name);
    let bytes =
        dcn::bundle::write_bundle(&dcn::recipes::Recipes::embedded().unwrap(), &contents, ca)
            .unwrap();
    dcn::bundle::save_bundle(&path, &bytes).unwrap();
    path
}
