//! The CLI through the real binary: config, bundle verify/inspect,
//! preflight output, completions. Results on stdout, logs on stderr.

use std::path::Path;
use std::process::{Command, Output};

fn dcn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dcn"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[path = "support/bundle.rs"]
mod bundle_support;
use bundle_support::{TOKEN, write_lab_bundle as write_bundle};

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn config_defaults_validate_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dcn(&["config", "defaults"]);
    assert!(out.status.success());
    let file = dir.path().join("site.yaml");
    std::fs::write(&file, out.stdout).unwrap();
    let out = dcn(&["config", "validate", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("valid"));

    std::fs::write(
        &file,
        "apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\nbundle:\n  maxUses: -1\n",
    )
    .unwrap();
    let out = dcn(&["config", "validate", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("site.yaml:4") && err.contains("bundle.maxUses"),
        "{err}"
    );
    assert!(stdout(&out).is_empty(), "errors go to stderr");
}

#[test]
fn config_validate_reads_a_site_inventory() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/images/edge/site.example.yaml");
    let out = dcn(&["config", "validate", example]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{example}: valid SiteInventory for site edge1, 2 nodes\n")
    );

    let text = std::fs::read_to_string(example).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("site.yaml");
    for (from, to, says) in [
        // A merged node's NodeConfig check, named by its place in the inventory.
        (
            "    interfaces:\n      - name: eno1\n        addresses: [10.240.1.21/24]\n        gateway: 10.240.1.1",
            "    interfaces:\n      - name: eno1\n        addresses: [10.240.1.21/24]\n        gateway: 10.9.0.1",
            vec!["site.yaml: nodes[1].interfaces[0].gateway: 10.9.0.1 is not in the subnet"],
        ),
        (
            "passwordEnv: EDGE1_N2_BMC_PASSWORD",
            "password: hunter2-secret",
            vec![
                "site.yaml:{line}:9: nodes[1].bmc.credentials.password: a password is never written in the inventory",
                "`passwordFile`",
                "`passwordEnv`",
            ],
        ),
        (
            "hostname: edge1-n2",
            "hostname: edge1-n1",
            vec!["nodes[1].hostname: edge1-n1 is also the host name of nodes[0]"],
        ),
    ] {
        let line = text[..text.find(from).expect(from)].matches('\n').count() + 1;
        std::fs::write(&file, text.replace(from, to)).unwrap();
        let out = dcn(&["config", "validate", file.to_str().unwrap()]);
        assert!(!out.status.success());
        let err = stderr(&out);
        for part in says {
            let part = part.replace("{line}", &line.to_string());
            assert!(err.contains(&part), "{part} not in {err}");
        }
        assert!(!err.contains("hunter2"), "{err}");
        assert!(stdout(&out).is_empty(), "errors go to stderr");
    }
    assert_eq!(listing(dir.path()), ["site.yaml"]);
}

#[test]
fn verify_with_the_right_pin_passes() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("cli test CA").unwrap();
    let path = write_bundle(dir.path(), "edge1.tar.gz", 3600, &ca);
    let pin = ca.pin().to_string();
    let out = dcn(&["bundle", "verify", path.to_str().unwrap(), "--ca-pin", &pin]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("valid join bundle for site edge1"),
        "{}",
        stdout(&out)
    );
    assert!(!stderr(&out).contains("trusted on first use"));
}

#[test]
fn verify_without_a_pin_warns_about_trust_on_first_use() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("cli test CA").unwrap();
    let path = write_bundle(dir.path(), "edge1.tar.gz", 3600, &ca);
    let out = dcn(&["bundle", "verify", path.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("trusted on first use"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains(&ca.pin().to_string()));
}

#[test]
fn verify_refuses_a_wrong_pin_and_an_expired_bundle_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("cli test CA").unwrap();
    let other = dcn::pki::CertificateAuthority::generate("another CA").unwrap();
    let good = write_bundle(dir.path(), "good.tar.gz", 3600, &ca);
    let expired = write_bundle(dir.path(), "old.tar.gz", -7200, &ca);
    let before = listing(dir.path());

    let out = dcn(&[
        "bundle",
        "verify",
        good.to_str().unwrap(),
        "--ca-pin",
        &other.pin().to_string(),
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).to_lowercase().contains("pin"),
        "{}",
        stderr(&out)
    );

    let out = dcn(&[
        "bundle",
        "verify",
        expired.to_str().unwrap(),
        "--ca-pin",
        &ca.pin().to_string(),
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("expired") && err.contains("dcn bundle export --site edge1"),
        "{err}"
    );

    let out = dcn(&[
        "bundle",
        "verify",
        good.to_str().unwrap(),
        "--ca-pin",
        "sha256:xyz",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--ca-pin"), "{}", stderr(&out));

    assert_eq!(listing(dir.path()), before);
}

#[test]
fn inspect_redacts_the_token_and_shows_expired_bundles() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("cli test CA").unwrap();
    let expired = write_bundle(dir.path(), "old.tar.gz", -60, &ca);
    let out = dcn(&["bundle", "inspect", expired.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let secret = TOKEN.split_once('.').unwrap().1;
    assert!(!text.contains(secret), "{text}");
    assert!(text.contains("abc123"), "{text}");
    assert!(text.to_lowercase().contains("expired"), "{text}");
    assert!(text.contains(&ca.pin().to_string()), "{text}");

    let out = dcn(&[
        "bundle",
        "inspect",
        expired.to_str().unwrap(),
        "--output",
        "json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["site"], "edge1");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(secret));
}

#[test]
fn preflight_json_is_machine_readable() {
    let out = dcn(&[
        "preflight",
        "edge",
        "--output",
        "json",
        "--ignore-preflight-errors=all",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["role"], "edge");
    assert!(json["checks"].as_array().unwrap().len() >= 9);
    assert!(out.status.success(), "all errors ignored: exit 0");
}

#[test]
fn completions_are_generated() {
    let out = dcn(&["completions", "bash"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("dcn"));
}
