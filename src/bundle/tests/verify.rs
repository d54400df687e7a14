//! Well-formed archives whose contents are wrong: manifest errors, version,
//! expiry, signature, digests, pins and certificates.

use super::super::*;
use super::support::*;
use crate::pki::LeafRequest;
use std::time::Duration;

/// The good bundle with its manifest text replaced and re-signed by the
/// same CA, so only the manifest check can refuse it.
fn with_manifest(fix: impl FnOnce(String) -> String) -> String {
    refusal(&resigned(ca(), fix))
}

#[test]
fn yaml_syntax_errors_give_the_line() {
    let err = with_manifest(|y| y.replace("  region: RegionOne", "  region: a: b"));
    assert_contains(
        &err,
        &[
            "manifest is invalid: manifest.yaml:7:",
            "mapping values are not allowed",
            "dcn bundle export --site",
        ],
    );
}

#[test]
fn missing_fields_are_named_with_their_path() {
    let err = with_manifest(|y| y.replace("  region: RegionOne\n", ""));
    assert_contains(&err, &["controlPlane: missing field `region`"]);
    let err = with_manifest(|y| y.replace("    ovnSouthbound: ssl:10.240.0.10:6642\n", ""));
    assert_contains(
        &err,
        &["controlPlane.exports: does not list ovnSouthbound, which edges of this dcn need"],
    );
}

#[test]
fn unknown_fields_are_named_with_their_path() {
    let err = with_manifest(|y| y.replace("  exports:\n", "  password: hunter2\n  exports:\n"));
    assert_contains(&err, &["controlPlane", "unknown field `password`"]);
    // An export this dcn's catalogue does not have is refused by name.
    let err = with_manifest(|y| {
        y.replace(
            "  exports:\n",
            "  exports:\n    volumev3: https://cp.lab.example:8776/v3\n",
        )
    });
    assert_contains(
        &err,
        &[
            "controlPlane.exports.volumev3: is not an export of this dcn's service catalogue",
            "it exports compute, identity, image, messaging, network, novncproxy, ovnSouthbound, placement",
        ],
    );
}

#[test]
fn bad_values_are_refused_with_their_path() {
    let err = with_manifest(|y| y.replace("joinEndpoint: https://", "joinEndpoint: http://"));
    assert_contains(
        &err,
        &["controlPlane.joinEndpoint", "must start with https://"],
    );
    // Edges send credentials to every export: plain text is refused.
    for (from, to) in [
        ("messaging: amqps://", "messaging: amqp://"),
        ("ovnSouthbound: ssl:", "ovnSouthbound: tcp:"),
        ("identity: https://", "identity: http://"),
    ] {
        let err = with_manifest(|y| y.replace(from, to));
        let name = from.split(':').next().unwrap();
        assert_contains(&err, &[&format!("controlPlane.exports.{name}")]);
    }
    let err = with_manifest(|y| y.replace("messaging: amqps://", "messaging: amqp://"));
    assert_contains(&err, &["only TLS is accepted"]);
    let err = with_manifest(|y| y.replace("  novaCompute: |", "  keystone: |"));
    assert_contains(
        &err,
        &[
            "manifest.yaml:23:3: customServiceConfig.keystone: \"keystone\" does not run on edge hosts; the edge services are novaCompute, ovnMetadataAgent",
        ],
    );
    let err = with_manifest(|y| y.replace("    debug = true", "    debug true"));
    assert_contains(
        &err,
        &[
            "customServiceConfig.novaCompute: invalid INI",
            "line 2: \"debug true\"",
        ],
    );
    let err = with_manifest(|y| {
        y.replace(
            "notAfter: 2026-09-22T14:13:20Z",
            "notAfter: 2026-09-20T14:13:20Z",
        )
    });
    assert_contains(
        &err,
        &["manifest.yaml:4:1: notAfter: must be later than createdAt"],
    );
    let err = with_manifest(|y| y.replace("token: sha256:", "ca.key: sha256:"));
    assert_contains(
        &err,
        &["members: lists \"ca.key\", which is not a bundle member"],
    );
}

#[test]
fn a_newer_format_version_is_refused_before_its_fields() {
    // Version 4 may add fields; the version is what to report, not them.
    let err = with_manifest(|y| y.replace("formatVersion: 3", "formatVersion: 4\nnewThing: 1"));
    assert_contains(
        &err,
        &[
            "formatVersion 4",
            "reads only formatVersion 3",
            "upgrade dcn on this host",
        ],
    );
    let err = with_manifest(|y| y.replace("formatVersion: 3\n", ""));
    assert_contains(&err, &["missing field `formatVersion`"]);
}

#[test]
fn older_bundles_are_sent_back_to_be_exported_again() {
    // Format 1 spelled each edge service as a field, format 2 each
    // endpoint; only the version can tell the operator what to do.
    for old in [1, 2] {
        let err =
            with_manifest(|y| y.replace("formatVersion: 3", &format!("formatVersion: {old}")));
        assert_contains(
            &err,
            &[
                &format!("formatVersion {old}, written by an older dcn"),
                "reads only formatVersion 3",
                "dcn bundle export --site SITE",
            ],
        );
    }
}

#[test]
fn expired_bundles_are_refused_with_when_and_what_to_do() {
    let mut o = opts();
    o.now = created() + TTL + Duration::from_secs(2 * 3600 + 5 * 60);
    let err = refusal_with(&bundle(), &o);
    assert_contains(
        &err,
        &[
            "site edge1 expired at 2026-09-22T14:13:20Z, 2h 5m ago",
            "clock reads 2026-09-22T16:18:20Z",
            "run `dcn bundle export --site edge1` on the control plane for a fresh bundle",
        ],
    );
    assert!(matches!(
        read_bundle(crate::recipes::for_tests(), bundle().as_slice(), &o),
        Err(BundleError::Expired { .. })
    ));
    // Inspect reads it anyway and marks it expired.
    o.check_expiry = false;
    let v = read_bundle(crate::recipes::for_tests(), bundle().as_slice(), &o).unwrap();
    let text = v.inspect_at(o.now).to_string();
    assert_contains(
        &text,
        &[
            "EXPIRED: expired 2h 5m ago",
            "dcn bundle export --site edge1",
        ],
    );
    // Exactly at notAfter it is still valid.
    o.check_expiry = true;
    o.now = created() + TTL;
    read_bundle(crate::recipes::for_tests(), bundle().as_slice(), &o).unwrap();
}

#[test]
fn a_tampered_manifest_fails_the_signature() {
    let b = rebuild(|m| {
        let y = String::from_utf8(m[0].1.clone()).unwrap();
        m[0].1 = y.replace("10.240.0.10:9443", "10.66.6.6:9443").into_bytes();
    });
    assert_contains(
        &refusal(&b),
        &["manifest.sig does not verify", "modified or corrupted"],
    );
}

#[test]
fn a_tampered_token_or_ca_fails_its_digest() {
    let b = rebuild(|m| m[2].1 = b"abc123.zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\n".to_vec());
    let err = refusal(&b);
    assert_contains(
        &err,
        &["member token has digest sha256:", "modified after export"],
    );
    assert!(!err.contains("zzzz"), "{err}");

    let b = rebuild(|m| m[1].1.extend_from_slice(b"# a comment\n"));
    assert_contains(
        &refusal(&b),
        &[
            "member ca.crt has digest",
            "but the signed manifest lists sha256:",
        ],
    );
}

#[test]
fn a_ca_swapped_for_another_fails_the_signature_or_the_pin() {
    let swap = |m: &mut Vec<(String, Vec<u8>)>| m[1].1 = other_ca().cert_pem().as_bytes().to_vec();
    // No pin: the signature was not made by the CA in the bundle.
    let mut o = opts();
    o.ca_pin = None;
    assert_contains(
        &refusal_with(&rebuild(swap), &o),
        &["manifest.sig does not verify"],
    );
    // With the trusted CA's pin, the pin speaks first.
    assert_contains(
        &refusal(&rebuild(swap)),
        &["did not come from the control plane you trust"],
    );
}

#[test]
fn a_bundle_re_signed_by_another_ca_is_refused_by_the_pin() {
    let other = other_ca();
    let forged = write_bundle(
        crate::recipes::for_tests(),
        &BundleContents {
            ca_cert_pem: other.cert_pem().to_string(),
            ..contents()
        },
        other,
    )
    .unwrap();
    let err = refusal(&forged);
    assert_contains(
        &err,
        &[
            &format!("the bundle's CA has pin {}", other.pin()),
            &format!("--ca-pin is {}", ca().pin()),
            "did not come from the control plane you trust",
        ],
    );
    // Without a pin it is accepted, and the caller can see the CA was
    // trusted on first use.
    let mut o = opts();
    o.ca_pin = None;
    let v = read_bundle(crate::recipes::for_tests(), forged.as_slice(), &o).unwrap();
    assert!(!v.pin_checked);
    assert_eq!(v.ca_pin, other.pin());
}

#[test]
fn a_certificate_that_is_not_a_ca_is_refused() {
    let leaf = ca()
        .issue(&LeafRequest {
            common_name: "not-a-ca".into(),
            dns_names: vec![],
            ip_addresses: vec![],
            usage: crate::pki::Usage::Server,
        })
        .unwrap();
    let b = rebuild(|m| m[1].1 = leaf.cert_pem.as_bytes().to_vec());
    let mut o = opts();
    o.ca_pin = None;
    assert_contains(
        &refusal_with(&b, &o),
        &["ca.crt (O=dcn, CN=not-a-ca) is not a CA certificate"],
    );

    let b = rebuild(|m| m[1].1 = b"hello".to_vec());
    assert_contains(
        &refusal_with(&b, &o),
        &["member ca.crt is invalid", "exactly one PEM certificate"],
    );
    let b = rebuild(|m| m[1].1 = format!("{0}{0}", ca().cert_pem()).into_bytes());
    assert_contains(&refusal_with(&b, &o), &["holds 2 PEM blocks"]);
}

#[test]
fn a_signature_that_is_not_base64_is_refused() {
    let b = rebuild(|m| m[3].1 = b"not base64!\n".to_vec());
    assert_contains(
        &refusal(&b),
        &["member manifest.sig is invalid", "not one line of base64"],
    );
    let b = rebuild(|m| m[3].1 = b"AAAA\n".to_vec());
    assert_contains(&refusal(&b), &["manifest.sig does not verify"]);
}

#[test]
fn a_token_that_does_not_match_the_manifest_is_refused() {
    // Signed by the right CA but inconsistent: the writer never does this.
    let err = with_manifest(|y| y.replace("tokenId: abc123", "tokenId: xyz789"));
    assert_contains(
        &err,
        &[
            "member token is invalid",
            "its id abc123 is not the manifest's tokenId xyz789",
        ],
    );
}
