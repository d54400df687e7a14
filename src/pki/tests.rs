use super::*;
use std::process::Command;

fn server(cn: &str) -> LeafRequest {
    LeafRequest {
        common_name: cn.into(),
        dns_names: vec!["cp.example.test".into()],
        ip_addresses: vec!["10.240.0.10".parse().unwrap()],
        usage: Usage::Server,
    }
}

#[test]
fn ca_issues_leaves_that_verify_with_their_sans() {
    let ca = CertificateAuthority::generate("dcn test CA").unwrap();
    let leaf = ca.issue(&server("rabbitmq")).unwrap();
    verify_issued_by(ca.cert_pem(), &leaf.cert_pem).unwrap();
    let info = CertInfo::from_pem(&leaf.cert_pem).unwrap();
    assert_eq!(info.dns_names, vec!["cp.example.test"]);
    assert_eq!(
        info.ip_addresses,
        vec!["10.240.0.10".parse::<IpAddr>().unwrap()]
    );
    assert!(!info.is_ca);
    let ca_info = CertInfo::from_pem(ca.cert_pem()).unwrap();
    assert!(ca_info.is_ca);
    let years = (ca_info.not_after - OffsetDateTime::now_utc()).whole_days() / 365;
    assert_eq!(years, 9, "CA valid for ~10 years");
}

#[test]
fn a_leaf_from_another_ca_does_not_verify() {
    let ca = CertificateAuthority::generate("one").unwrap();
    let other = CertificateAuthority::generate("two").unwrap();
    let leaf = other.issue(&server("x")).unwrap();
    assert!(verify_issued_by(ca.cert_pem(), &leaf.cert_pem).is_err());
}

#[test]
fn load_round_trips_and_rejects_a_foreign_key() {
    let ca = CertificateAuthority::generate("one").unwrap();
    let other = CertificateAuthority::generate("two").unwrap();
    let again = CertificateAuthority::load(ca.cert_pem(), ca.key_pem()).unwrap();
    assert_eq!(again.pin(), ca.pin());
    let err = CertificateAuthority::load(ca.cert_pem(), other.key_pem())
        .err()
        .unwrap();
    assert!(format!("{err:#}").contains("does not belong"), "{err:#}");
}

#[test]
fn signatures_verify_and_detect_tampering() {
    let ca = CertificateAuthority::generate("sig").unwrap();
    let sig = ca.sign(b"manifest bytes").unwrap();
    verify_signature(ca.cert_pem(), b"manifest bytes", &sig).unwrap();
    assert!(verify_signature(ca.cert_pem(), b"manifest bytez", &sig).is_err());
    let other = CertificateAuthority::generate("other").unwrap();
    assert!(verify_signature(other.cert_pem(), b"manifest bytes", &sig).is_err());
}

#[test]
fn csr_signing_uses_the_csr_key_and_our_names() {
    let ca = CertificateAuthority::generate("csr").unwrap();
    let node_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut p = CertificateParams::new(vec!["evil.example".to_string()]).unwrap();
    p.distinguished_name = name("evil");
    let csr = p.serialize_request(&node_key).unwrap().pem().unwrap();
    let mut req = server("edge1-node1");
    req.usage = Usage::Client;
    let cert = ca.sign_csr(&csr, &req).unwrap();
    verify_issued_by(ca.cert_pem(), &cert).unwrap();
    let info = CertInfo::from_pem(&cert).unwrap();
    assert_eq!(info.spki_public_key, node_key.public_key_raw());
    assert!(info.subject.contains("edge1-node1"), "{}", info.subject);
    assert!(!info.dns_names.contains(&"evil.example".to_string()));
}

#[test]
fn pins_parse_and_print() {
    let ca = CertificateAuthority::generate("pin").unwrap();
    let pin = ca.pin();
    let text = pin.to_string();
    assert!(text.starts_with("sha256:") && text.len() == 7 + 64);
    assert_eq!(text.parse::<Pin>().unwrap(), pin);
    assert_eq!(
        text.to_uppercase()
            .replace("SHA256", "sha256")
            .parse::<Pin>()
            .unwrap(),
        pin
    );
    for bad in [
        "",
        "sha256:",
        "md5:abcd",
        "sha256:zz",
        &text[..text.len() - 2],
    ] {
        assert!(bad.parse::<Pin>().is_err(), "{bad:?} should not parse");
    }
}

/// The pin is kubeadm's: what `openssl x509 -pubkey | openssl pkey -pubin
/// -outform der | sha256sum` prints. Skipped only where openssl is missing.
#[test]
fn pin_matches_openssl() {
    if Command::new("openssl").arg("version").output().is_err() {
        eprintln!("openssl not installed; skipping the cross-check");
        return;
    }
    let ca = CertificateAuthority::generate("openssl").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ca.crt");
    std::fs::write(&path, ca.cert_pem()).unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl x509 -pubkey -noout -in {} | openssl pkey -pubin -outform der | sha256sum",
            path.display()
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    let hexdigest = String::from_utf8(out.stdout).unwrap();
    let hexdigest = hexdigest.split_whitespace().next().unwrap();
    assert_eq!(ca.pin().to_string(), format!("sha256:{hexdigest}"));
}
