//! Helpers for the bundle tests: a sample bundle, and tools to take a
//! bundle apart and put hostile ones together.

use super::super::*;
use crate::pki::CertificateAuthority;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::{Read, Write};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

/// 2026-09-21T14:13:20Z.
pub fn created() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000)
}

pub const TTL: Duration = Duration::from_secs(24 * 3600);

/// A CA valid from before [`created`] until ten years from now, so it is
/// valid both at the fixed times of these tests and when the writer reads
/// a bundle back.
fn valid_ca(name: &str) -> CertificateAuthority {
    let not_before = time::OffsetDateTime::from(created()) - time::Duration::days(30);
    let not_after = time::OffsetDateTime::now_utc() + crate::pki::CA_VALIDITY;
    CertificateAuthority::generate_valid(name, not_before, not_after).unwrap()
}

/// One CA for the whole test run (key generation is the slow part).
pub fn ca() -> &'static CertificateAuthority {
    static CA: OnceLock<CertificateAuthority> = OnceLock::new();
    CA.get_or_init(|| valid_ca("dcn test CA"))
}

/// A second, unrelated CA.
pub fn other_ca() -> &'static CertificateAuthority {
    static CA: OnceLock<CertificateAuthority> = OnceLock::new();
    CA.get_or_init(|| valid_ca("dcn other CA"))
}

pub const MANIFEST_YAML: &str = r#"formatVersion: 3
site: edge1
createdAt: 2026-09-21T14:13:20Z
notAfter: 2026-09-22T14:13:20Z
controlPlane:
  joinEndpoint: https://10.240.0.10:9443
  region: RegionOne
  exports:
    compute: https://cp.lab.example:8774/v2.1
    identity: https://cp.lab.example:5000/v3
    image: https://cp.lab.example:9292
    messaging: amqps://cp.lab.example:5671
    network: https://cp.lab.example:9696
    novncproxy: https://cp.lab.example:6080/vnc_auto.html
    ovnSouthbound: ssl:10.240.0.10:6642
    placement: https://cp.lab.example:8778
hosts:
- address: 10.240.0.10
  names:
  - cp.lab.example
  - cp
customServiceConfig:
  novaCompute: |
    [DEFAULT]
    debug = true
tokenId: abc123
members: {}
"#;

pub const TOKEN_TEXT: &str = "abc123.0123456789abcdefghijklmnopqrstuv";

pub fn contents() -> BundleContents {
    BundleContents {
        manifest: crate::config::parse(MANIFEST_YAML, "test").unwrap(),
        ca_cert_pem: ca().cert_pem().to_string(),
        token: TOKEN_TEXT.parse().unwrap(),
    }
}

/// A good bundle signed by [`ca`].
pub fn bundle() -> Vec<u8> {
    write_bundle(crate::recipes::for_tests(), &contents(), ca()).unwrap()
}

/// Options that accept [`bundle`]: a minute after export, pinned to [`ca`].
pub fn opts() -> ReadOptions {
    ReadOptions {
        now: created() + Duration::from_secs(60),
        ca_pin: Some(ca().pin()),
        check_expiry: true,
    }
}

/// Read `bytes` with [`opts`] and return the refusal's message.
pub fn refusal(bytes: &[u8]) -> String {
    refusal_with(bytes, &opts())
}

pub fn refusal_with(bytes: &[u8], opts: &ReadOptions) -> String {
    match read_bundle(crate::recipes::for_tests(), bytes, opts) {
        Ok(_) => panic!("the bundle was accepted"),
        Err(e) => e.to_string(),
    }
}

pub fn assert_contains(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "expected {part:?} in:\n{text}");
    }
}

pub fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap();
    out
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// The members of a bundle, in archive order.
pub fn members(bundle: &[u8]) -> Vec<(String, Vec<u8>)> {
    let tar = gunzip(bundle);
    let mut archive = tar::Archive::new(tar.as_slice());
    archive
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            (name, data)
        })
        .collect()
}

/// One raw tar entry: any name bytes, any type, optional link target.
pub struct Raw<'a> {
    pub name: &'a [u8],
    pub kind: tar::EntryType,
    pub data: &'a [u8],
    pub link: &'a [u8],
}

pub fn file<'a>(name: &'a str, data: &'a [u8]) -> Raw<'a> {
    Raw {
        name: name.as_bytes(),
        kind: tar::EntryType::Regular,
        data,
        link: b"",
    }
}

pub fn special<'a>(name: &'a str, kind: tar::EntryType, link: &'a str) -> Raw<'a> {
    Raw {
        name: name.as_bytes(),
        kind,
        data: b"",
        link: link.as_bytes(),
    }
}

/// A tar stream with these entries, written without the checks the tar
/// crate's path setters make, followed by the end-of-archive marker.
pub fn raw_tar(entries: &[Raw<'_>]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_ustar();
        let ustar = h.as_ustar_mut().unwrap();
        ustar.name = [0; 100];
        ustar.name[..e.name.len()].copy_from_slice(e.name);
        ustar.linkname = [0; 100];
        ustar.linkname[..e.link.len()].copy_from_slice(e.link);
        h.set_entry_type(e.kind);
        h.set_size(e.data.len() as u64);
        h.set_mode(0o600);
        h.set_cksum();
        tar.append(&h, e.data).unwrap();
    }
    tar.into_inner().unwrap()
}

/// A gzip'd [`raw_tar`].
pub fn raw_bundle(entries: &[Raw<'_>]) -> Vec<u8> {
    gzip(&raw_tar(entries))
}

/// A bundle from the good bundle's members, with `change` applied to them.
pub fn rebuild(change: impl FnOnce(&mut Vec<(String, Vec<u8>)>)) -> Vec<u8> {
    let mut m = members(&bundle());
    change(&mut m);
    let raws: Vec<Raw<'_>> = m.iter().map(|(n, d)| file(n, d)).collect();
    raw_bundle(&raws)
}

/// Replace the manifest with `yaml` signed by `signer`, keeping the other
/// members; `fix` edits the manifest text first.
pub fn resigned(signer: &CertificateAuthority, fix: impl FnOnce(String) -> String) -> Vec<u8> {
    rebuild(|m| {
        let yaml = fix(String::from_utf8(m[0].1.clone()).unwrap());
        let sig = signer.sign(yaml.as_bytes()).unwrap();
        m[0].1 = yaml.into_bytes();
        use base64::Engine;
        m[3].1 = format!(
            "{}\n",
            base64::engine::general_purpose::STANDARD.encode(sig)
        )
        .into_bytes();
    })
}
