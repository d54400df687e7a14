//! `dcn standalone init --phase secrets` through the real binary, against a
//! temporary root directory.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn dcn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dcn"))
        .args(args)
        .output()
        .unwrap()
}

fn init(root: &Path, config: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "-vv",
        "standalone",
        "init",
        "--phase",
        "secrets",
        "--root",
        root.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    dcn(&args)
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let config = dir.path().join("site.yaml");
    std::fs::write(
        &config,
        "apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\ncontrolPlane:\n  hostname: cp.lab.test\n  address: 10.240.0.10\n",
    )
    .unwrap();
    (dir, config)
}

/// Every file and directory under `root`: mode and contents.
fn snapshot(root: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let md = std::fs::metadata(&p).unwrap();
        let rel = p.strip_prefix(root).unwrap().display().to_string();
        if md.is_dir() {
            out.insert(rel, (md.permissions().mode() & 0o7777, Vec::new()));
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        } else {
            out.insert(
                rel,
                (md.permissions().mode() & 0o7777, std::fs::read(&p).unwrap()),
            );
        }
    }
    out
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn second_run_keeps_every_secret_and_modes_are_private() {
    let (dir, config) = setup();
    let root = dir.path().join("root");
    let first = init(&root, &config, &[]);
    assert!(first.status.success(), "{}", text(&first));
    let before = snapshot(&root);
    for (path, (mode, _)) in &before {
        if path.starts_with("var/lib/dcn") {
            let want = if root.join(path).is_dir() {
                0o700
            } else {
                0o600
            };
            assert_eq!(*mode, want, "{path} has mode {mode:o}");
        }
    }
    let second = init(&root, &config, &[]);
    assert!(second.status.success(), "{}", text(&second));
    assert!(text(&second).contains("Nothing to do"), "{}", text(&second));
    let after = snapshot(&root);
    // The journal records the second run; every secret is byte for byte the same.
    for (path, v) in &before {
        if !path.ends_with("journal.json") {
            assert_eq!(after.get(path), Some(v), "{path} changed on the second run");
        }
    }
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
}

#[test]
fn no_secret_reaches_the_output() {
    let (dir, config) = setup();
    let root = dir.path().join("root");
    let out = init(&root, &config, &[]);
    assert!(out.status.success());
    let all = text(&out);
    let passwords: BTreeMap<String, String> = serde_yaml::from_str(
        &std::fs::read_to_string(root.join("var/lib/dcn/secrets/passwords.yaml")).unwrap(),
    )
    .unwrap();
    // The recipes declare them: one per database and per service user,
    // the admin's, the messaging user's and the metadata proxy secret.
    let declared = dcn::centre::standalone::secrets::control_plane_passwords(
        &dcn::recipes::Recipes::embedded().unwrap(),
    )
    .unwrap();
    assert_eq!(passwords.keys().cloned().collect::<Vec<_>>(), declared);
    assert_eq!(declared.len(), 12, "{declared:?}");
    for (name, pw) in &passwords {
        assert!(
            !all.contains(pw.as_str()),
            "password {name} appears in the output"
        );
    }
    for key in [
        "ca.key",
        "api.key",
        "rabbitmq.key",
        "ovn-sb.key",
        "join.key",
    ] {
        let pem = std::fs::read_to_string(root.join("var/lib/dcn/pki").join(key)).unwrap();
        let body: String = pem.lines().nth(1).unwrap().to_string();
        assert!(!all.contains(&body), "{key} appears in the output");
    }
    // And no secret in the journal either.
    let journal = std::fs::read_to_string(root.join("var/lib/dcn/journal.json")).unwrap();
    assert!(passwords.values().all(|p| !journal.contains(p.as_str())));
}

#[test]
fn printed_pin_is_the_ca_pin_and_the_ca_signs_the_leaves() {
    let (dir, config) = setup();
    let root = dir.path().join("root");
    let out = init(&root, &config, &[]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let pki = root.join("var/lib/dcn/pki");
    let ca = std::fs::read_to_string(pki.join("ca.crt")).unwrap();
    let pin = dcn::pki::Pin::of_cert_pem(&ca).unwrap();
    assert!(stdout.contains(&format!("CA pin: {pin}")), "{stdout}");
    for leaf in ["api", "rabbitmq", "ovn-sb", "join"] {
        let pem = std::fs::read_to_string(pki.join(format!("{leaf}.crt"))).unwrap();
        dcn::pki::verify_issued_by(&ca, &pem).unwrap();
        let info = dcn::pki::CertInfo::from_pem(&pem).unwrap();
        assert!(
            info.dns_names.contains(&"cp.lab.test".to_string()),
            "{leaf}"
        );
        assert!(
            info.ip_addresses.contains(&"10.240.0.10".parse().unwrap()),
            "{leaf}"
        );
    }
}

#[test]
fn dry_run_changes_nothing() {
    let (dir, config) = setup();
    let root = dir.path().join("root");
    let out = init(&root, &config, &["--dry-run"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Dry run: nothing was changed."));
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);
}

#[test]
fn a_lost_leaf_is_reissued_and_nothing_else_changes() {
    let (dir, config) = setup();
    let root = dir.path().join("root");
    assert!(init(&root, &config, &[]).status.success());
    let before = snapshot(&root);
    std::fs::remove_file(root.join("var/lib/dcn/pki/rabbitmq.crt")).unwrap();
    let out = init(&root, &config, &[]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Applied 1 step(s): secrets.cert-rabbitmq")
    );
    let after = snapshot(&root);
    for (path, v) in &before {
        if !path.contains("rabbitmq") && !path.ends_with("journal.json") {
            assert_eq!(after.get(path), Some(v), "{path} changed");
        }
    }
}

#[test]
fn a_ca_certificate_without_its_key_is_refused() {
    let (dir, config) = setup();
    let root = dir.path().join("root");
    assert!(init(&root, &config, &[]).status.success());
    std::fs::remove_file(root.join("var/lib/dcn/pki/ca.key")).unwrap();
    let before = snapshot(&root);
    let out = init(&root, &config, &[]);
    assert!(!out.status.success());
    let msg = text(&out);
    assert!(
        msg.contains("found /var/lib/dcn/pki/ca.crt without /var/lib/dcn/pki/ca.key"),
        "{msg}"
    );
    let after = snapshot(&root);
    for (path, v) in &before {
        if !path.ends_with("journal.json") {
            assert_eq!(after.get(path), Some(v), "{path} changed");
        }
    }
}

#[test]
fn a_bad_config_changes_nothing() {
    let (dir, _) = setup();
    let root = dir.path().join("root");
    let config = dir.path().join("bad.yaml");
    std::fs::write(
        &config,
        "apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\ncontrolPlane:\n  address: 10.0.0.300\n",
    )
    .unwrap();
    let out = init(&root, &config, &[]);
    assert!(!out.status.success());
    let msg = text(&out);
    assert!(
        msg.contains("bad.yaml:4") && msg.contains("controlPlane.address"),
        "{msg}"
    );
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);
}
