//! Manifests and CAs made to hurt the reader: times that leave what RFC
//! 3339 can write, nesting that costs the YAML parser quadratic time,
//! repeated keys, and CA certificates that are expired, not yet valid or
//! not a CA. Each is signed by the trusted CA, so only the check under test
//! can refuse it.

use super::super::*;
use super::support::*;

fn signed(fix: impl FnOnce(String) -> String) -> String {
    refusal(&resigned(ca(), fix))
}

#[test]
fn times_outside_1970_to_9999_in_utc_are_refused_with_their_field() {
    let cases = [
        (
            "createdAt: 2026-09-21T14:13:20Z",
            "createdAt: 0000-01-01T00:00:00+23:59",
            "createdAt",
        ),
        (
            "notAfter: 2026-09-22T14:13:20Z",
            "notAfter: 9999-12-31T23:59:59-23:59",
            "notAfter",
        ),
        (
            "notAfter: 2026-09-22T14:13:20Z",
            "notAfter: 9999-12-31T23:59:59-00:01",
            "notAfter",
        ),
        (
            "createdAt: 2026-09-21T14:13:20Z",
            "createdAt: 1969-12-31T23:59:59Z",
            "createdAt",
        ),
    ];
    for (from, to, field) in cases {
        let err = signed(|y| y.replace(from, to));
        assert_contains(
            &err,
            &[
                "the bundle's manifest is invalid: manifest.yaml",
                &format!(": {field}: "),
                "outside the times dcn accepts (1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z)",
                "dcn bundle export --site",
            ],
        );
    }
    // Also without expiry checks (`bundle inspect`) and without a pin.
    let b = resigned(other_ca(), |y| {
        y.replace(
            "notAfter: 2026-09-22T14:13:20Z",
            "notAfter: 9999-12-31T23:59:59-23:59",
        )
    });
    let o = ReadOptions {
        ca_pin: None,
        check_expiry: false,
        ..opts()
    };
    assert_contains(&refusal_with(&b, &o), &["notAfter: ", "outside the times"]);
}

#[test]
fn deeply_nested_yaml_is_refused_quickly_before_the_signature() {
    // Signed by nobody: the nesting is refused before any signature check,
    // and in bounded time whatever the depth.
    let bombs = [
        format!("formatVersion: 3\nsite: {}\n", "[".repeat(200 * 1024)),
        format!("formatVersion: 3\nsite: {}\n", "{a: ".repeat(50 * 1024)),
        format!(
            "formatVersion: 3\nhosts: {}\n",
            "[\"]\", ".repeat(30 * 1024)
        ),
    ];
    for bomb in bombs {
        let b = rebuild(|m| m[0].1 = bomb.into_bytes());
        let started = std::time::Instant::now();
        let err = refusal(&b);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_contains(
            &err,
            &[
                "the bundle's manifest is invalid: manifest.yaml:2:",
                "nested more than 32 levels deep",
            ],
        );
    }
}

#[test]
fn repeated_keys_are_refused_in_members_and_everywhere_else() {
    let token_digest = |y: &str| {
        let i = y.find("  token: ").unwrap();
        y[i..].lines().next().unwrap().to_string()
    };
    // members lists the token twice: the second copy used to win.
    let err = signed(|y| {
        let line = token_digest(&y);
        y.replace(
            &line,
            &format!("{line}\n  token: sha256:{}", "0".repeat(64)),
        )
    });
    assert_contains(
        &err,
        &[
            "manifest.yaml:",
            "the key \"token\" appears twice in one mapping (first on line",
        ],
    );
    let err = signed(|y| y.replace("site: edge1\n", "site: edge1\nsite: edge2\n"));
    assert_contains(&err, &["the key \"site\" appears twice"]);
    let err = signed(|y| {
        y.replace(
            "    messaging: amqps://cp.lab.example:5671\n",
            "    messaging: amqps://cp.lab.example:5671\n    messaging: amqps://evil.example:5671\n",
        )
    });
    assert_contains(&err, &["the key \"messaging\" appears twice"]);
}

#[test]
fn custom_service_config_with_a_bare_carriage_return_is_refused() {
    // oslo.config would read a [database] section here; dcn saw one option.
    let err = signed(|y| {
        y.replace(
            "  novaCompute: |\n    [DEFAULT]\n    debug = true\n",
            "  novaCompute: \"[DEFAULT]\\ndebug = true\\r[database]\\rconnection = mysql://evil\\n\"\n",
        )
    });
    assert_contains(
        &err,
        &[
            "customServiceConfig.novaCompute",
            "invalid INI in customServiceConfig, line 2: a carriage return (\\r) not followed by a line feed",
        ],
    );
}

/// The good bundle with `ca.crt` replaced by `signer`'s certificate, the
/// manifest's digest of it updated, and the manifest signed by `signer`:
/// consistent in every way, so only the CA's own checks can refuse it.
fn with_ca(signer: &crate::pki::CertificateAuthority) -> Vec<u8> {
    let pem = signer.cert_pem().as_bytes().to_vec();
    let digest = crate::types::endpoints::Sha256Digest::of(&pem).to_string();
    let mut m = members(&bundle());
    let yaml = String::from_utf8(m[0].1.clone()).unwrap();
    let old = crate::types::endpoints::Sha256Digest::of(&m[1].1).to_string();
    let yaml = yaml.replace(&old, &digest);
    let sig = signer.sign(yaml.as_bytes()).unwrap();
    m[0].1 = yaml.into_bytes();
    m[1].1 = pem;
    use base64::Engine;
    m[3].1 = format!(
        "{}\n",
        base64::engine::general_purpose::STANDARD.encode(sig)
    )
    .into_bytes();
    let raws: Vec<Raw<'_>> = m.iter().map(|(n, d)| file(n, d)).collect();
    raw_bundle(&raws)
}

/// Read with the pin of `signer`, so the pin is not what refuses it.
fn ca_refusal(signer: &crate::pki::CertificateAuthority) -> String {
    let o = ReadOptions {
        ca_pin: Some(signer.pin()),
        ..opts()
    };
    refusal_with(&with_ca(signer), &o)
}

#[test]
fn expired_and_not_yet_valid_cas_are_refused() {
    use time::{Duration, OffsetDateTime};
    let at = OffsetDateTime::from(created());
    let expired = crate::pki::CertificateAuthority::generate_valid(
        "expired CA",
        at - Duration::days(400),
        at - Duration::days(1),
    )
    .unwrap();
    assert_contains(
        &ca_refusal(&expired),
        &[
            "the bundle's CA certificate (O=dcn, CN=expired CA) expired at 2026-09-20T14:13:20Z",
            "this host's clock reads 2026-09-21T14:14:20Z",
            "set the clock",
        ],
    );
    let future = crate::pki::CertificateAuthority::generate_valid(
        "future CA",
        at + Duration::days(1),
        at + Duration::days(3650),
    )
    .unwrap();
    assert_contains(
        &ca_refusal(&future),
        &[
            "(O=dcn, CN=future CA) is not valid before 2026-09-22T14:13:20Z",
            "clock reads 2026-09-21T14:14:20Z",
        ],
    );
    // `bundle inspect` skips the bundle's expiry, not the CA's validity.
    let o = ReadOptions {
        ca_pin: None,
        check_expiry: false,
        ..opts()
    };
    assert_contains(&refusal_with(&with_ca(&expired), &o), &["expired at"]);
}

#[test]
fn self_signed_certificates_that_are_not_signing_cas_are_refused() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, KeyUsagePurpose};
    let make = |cn: &str, is_ca: IsCa, usages: Vec<KeyUsagePurpose>| {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(rcgen::DnType::CommonName, cn);
        p.is_ca = is_ca;
        p.key_usages = usages;
        p.not_before = time::OffsetDateTime::from(created()) - time::Duration::days(1);
        p.not_after = time::OffsetDateTime::now_utc() + time::Duration::days(30);
        let cert = p.self_signed(&key).unwrap();
        crate::pki::CertificateAuthority::load(
            &cert.pem(),
            &crate::secrets::Secret::new(key.serialize_pem()),
        )
        .unwrap()
    };
    let cases = [
        (
            make("no constraints", IsCa::NoCa, vec![]),
            "CN=no constraints) is not a CA certificate (its basic constraints do not say CA:TRUE)",
        ),
        (
            make("explicit no", IsCa::ExplicitNoCa, vec![]),
            "CN=explicit no) is not a CA certificate (its basic constraints",
        ),
        (
            make(
                "cannot sign",
                IsCa::Ca(BasicConstraints::Unconstrained),
                vec![KeyUsagePurpose::DigitalSignature],
            ),
            "CN=cannot sign) is not a CA certificate (its key usage does not allow signing certificates (keyCertSign))",
        ),
    ];
    for (signer, msg) in cases {
        assert_contains(&ca_refusal(&signer), &[msg, "dcn bundle export --site"]);
    }
    // A CA with keyCertSign, or with no key usage at all, is accepted.
    for usages in [vec![KeyUsagePurpose::KeyCertSign], vec![]] {
        let ok = make("fine", IsCa::Ca(BasicConstraints::Unconstrained), usages);
        let o = ReadOptions {
            ca_pin: Some(ok.pin()),
            ..opts()
        };
        read_bundle(crate::recipes::for_tests(), with_ca(&ok).as_slice(), &o).unwrap();
    }
}

#[test]
fn a_ca_subject_with_escape_sequences_is_shown_escaped() {
    let evil = crate::pki::CertificateAuthority::generate_valid(
        "\x1b[2J\x1b[31mevil\r\nCA pin: forged",
        time::OffsetDateTime::from(created()) - time::Duration::days(1),
        time::OffsetDateTime::now_utc() + time::Duration::days(30),
    )
    .unwrap();
    let o = ReadOptions {
        ca_pin: Some(evil.pin()),
        ..opts()
    };
    let text = read_bundle(crate::recipes::for_tests(), with_ca(&evil).as_slice(), &o)
        .unwrap()
        .inspect_at(created())
        .to_string();
    assert!(!text.contains('\x1b') && !text.contains('\r'), "{text:?}");
    assert_contains(&text, &["CN=\\u{1b}[2J\\u{1b}[31mevil\\r\\nCA pin: forged"]);
    // The forged "CA pin:" stays inside the CA line.
    let pin_lines = text
        .lines()
        .filter(|l| l.trim_start().starts_with("CA pin:"));
    assert_eq!(pin_lines.count(), 1, "{text}");
}
