//! Writing, saving and reading back: the round trip, the archive's exact
//! shape, what must never be in a bundle, the saved file's mode, the
//! file-reading entry point and the inspect view.

use super::super::*;
use super::support::*;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

#[test]
fn a_written_bundle_reads_back_equal() {
    let c = contents();
    let v = read_bundle(crate::recipes::for_tests(), bundle().as_slice(), &opts()).unwrap();
    let mut expected = c.manifest.clone();
    expected.members = v.manifest.members.clone();
    assert_eq!(v.manifest, expected);
    assert_eq!(v.manifest.members.len(), 2);
    assert_eq!(v.ca_cert_pem, c.ca_cert_pem);
    assert_eq!(v.token, c.token);
    assert_eq!(v.ca_pin, ca().pin());
    assert!(v.pin_checked);
    assert_eq!(v.expires_in(opts().now), TTL - Duration::from_secs(60));
    assert_eq!(v.expires_in(created() + TTL * 2), Duration::ZERO);
}

#[test]
fn the_writer_fills_in_token_id_member_digests_and_whole_seconds() {
    let mut c = contents();
    c.manifest.token_id = "zzzzzz".into();
    c.manifest.members.clear();
    c.manifest.created_at += Duration::from_millis(999);
    let v = read_bundle(
        crate::recipes::for_tests(),
        write_bundle(crate::recipes::for_tests(), &c, ca())
            .unwrap()
            .as_slice(),
        &opts(),
    )
    .unwrap();
    assert_eq!(v.manifest.created_at, created());
    assert_eq!(v.manifest.token_id, "abc123");
    let token_digest = Sha256Digest::of(format!("{TOKEN_TEXT}\n").as_bytes());
    assert_eq!(v.manifest.members["token"], token_digest);
    assert_eq!(
        v.manifest.members["ca.crt"],
        Sha256Digest::of(ca().cert_pem().as_bytes())
    );
}

#[test]
fn the_writer_refuses_what_the_reader_would_refuse() {
    let mut c = contents();
    c.ca_cert_pem = other_ca().cert_pem().to_string();
    let err = write_bundle(crate::recipes::for_tests(), &c, ca()).unwrap_err();
    assert!(
        format!("{err:#}").contains("not the certificate of the CA that signs it"),
        "{err:#}"
    );
    let mut c = contents();
    c.manifest.not_after = c.manifest.created_at;
    let err = write_bundle(crate::recipes::for_tests(), &c, ca()).unwrap_err();
    assert!(
        format!("{err:#}").contains("notAfter: must be later than createdAt"),
        "{err:#}"
    );
}

#[test]
fn members_are_plain_ustar_files_in_order_with_fixed_metadata() {
    let tar = gunzip(&bundle());
    let mut archive = tar::Archive::new(tar.as_slice());
    let mut names = Vec::new();
    for entry in archive.entries().unwrap().raw(true) {
        let entry = entry.unwrap();
        let h = entry.header();
        assert!(h.as_ustar().is_some(), "ustar header");
        assert_eq!(h.entry_type(), tar::EntryType::Regular);
        assert_eq!(h.mode().unwrap(), 0o600);
        assert_eq!((h.uid().unwrap(), h.gid().unwrap()), (0, 0));
        assert_eq!(h.mtime().unwrap(), 1_790_000_000);
        names.push(String::from_utf8(entry.path_bytes().into_owned()).unwrap());
    }
    assert_eq!(names, MEMBERS);
    let m = members(&bundle());
    assert_eq!(m[2].1, format!("{TOKEN_TEXT}\n").as_bytes());
    let sig = String::from_utf8(m[3].1.clone()).unwrap();
    assert!(
        sig.ends_with('\n') && sig.trim_end().lines().count() == 1,
        "{sig:?}"
    );
}

/// The bundle carries no CA private key and no control-plane password.
#[test]
fn the_bundle_holds_no_ca_key() {
    let tar = gunzip(&bundle());
    let text = String::from_utf8_lossy(&tar);
    let key = ca().key_pem().expose();
    assert!(!text.contains(key));
    assert!(!text.contains("PRIVATE KEY"));
    // Nor any line of the key's base64 body.
    for line in key.lines().filter(|l| !l.starts_with("-----")) {
        assert!(
            !text.contains(line),
            "a line of the CA key is in the bundle"
        );
    }
    assert!(!text.to_lowercase().contains("password"));
}

#[test]
fn saved_bundles_are_0600_and_replace_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edge1.tar.gz");
    save_bundle(&path, &bundle()).unwrap();
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o600);
    // An existing file with a loose mode is replaced, not rewritten in place.
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let old_inode = fs::metadata(&path).unwrap().ino();
    save_bundle(&path, b"second").unwrap();
    let md = fs::metadata(&path).unwrap();
    assert_eq!(md.mode() & 0o7777, 0o600);
    assert_ne!(md.ino(), old_inode);
    assert_eq!(fs::read(&path).unwrap(), b"second");
    assert_eq!(listing(dir.path()), vec!["edge1.tar.gz"]);
}

#[test]
fn saving_refuses_to_follow_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    fs::write(&target, b"keep").unwrap();
    let link = dir.path().join("edge1.tar.gz");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = save_bundle(&link, &bundle()).unwrap_err();
    assert!(
        format!("{err:#}").contains("it is a symbolic link"),
        "{err:#}"
    );
    assert_eq!(fs::read(&target).unwrap(), b"keep");
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let err = save_bundle(dir.path(), &bundle()).unwrap_err();
    assert!(format!("{err:#}").contains("not a regular file"), "{err:#}");
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn reading_a_file_round_trips_and_names_a_missing_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edge1.tar.gz");
    save_bundle(&path, &bundle()).unwrap();
    assert_eq!(
        read_bundle_file(crate::recipes::for_tests(), &path, &opts())
            .unwrap()
            .token
            .id,
        "abc123"
    );

    let missing = dir.path().join("nope.tar.gz");
    let err = read_bundle_file(crate::recipes::for_tests(), &missing, &opts()).unwrap_err();
    assert!(matches!(err, BundleError::Open { .. }));
    assert_contains(
        &err.to_string(),
        &[
            &format!(
                "cannot read the bundle: {} does not exist",
                missing.display()
            ),
            "check the path",
        ],
    );
    let err = read_bundle_file(crate::recipes::for_tests(), dir.path(), &opts()).unwrap_err();
    assert!(matches!(err, BundleError::Open { .. }), "{err}");
}

#[test]
fn an_unreadable_file_is_an_open_error() {
    if nix::unistd::geteuid().is_root() {
        eprintln!("running as root, which reads any file; skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edge1.tar.gz");
    save_bundle(&path, &bundle()).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    let err = read_bundle_file(crate::recipes::for_tests(), &path, &opts()).unwrap_err();
    assert_contains(
        &err.to_string(),
        &["cannot read the bundle", "may read the file"],
    );
}

/// Reading never extracts: a refused bundle, even one whose members point
/// outside its folder, leaves the folder as it was.
#[test]
fn a_refused_bundle_leaves_its_directory_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = [
        ("abs.tar.gz", raw_bundle(&[file("/tmp/dcn-test-abs", b"x")])),
        ("dotdot.tar.gz", raw_bundle(&[file("../escaped", b"x")])),
        (
            "link.tar.gz",
            raw_bundle(&[special("token", tar::EntryType::Symlink, "/etc/passwd")]),
        ),
        (
            "unknown.tar.gz",
            raw_bundle(&[file("evil.sh", b"#!/bin/sh\n")]),
        ),
        ("bomb.tar.gz", gzip(&vec![0u8; 4 << 20])),
    ];
    for (name, bytes) in &hostile {
        fs::write(dir.path().join(name), bytes).unwrap();
    }
    let before = listing(dir.path());
    for (name, _) in &hostile {
        assert!(
            read_bundle_file(crate::recipes::for_tests(), &dir.path().join(name), &opts()).is_err(),
            "{name}"
        );
    }
    assert_eq!(listing(dir.path()), before);
    assert!(!Path::new("/tmp/dcn-test-abs").exists());
    assert!(!dir.path().parent().unwrap().join("escaped").exists());
}

#[test]
fn inspect_shows_everything_but_the_secret() {
    let mut o = opts();
    o.ca_pin = None;
    let v = read_bundle(crate::recipes::for_tests(), bundle().as_slice(), &o).unwrap();
    let i = v.inspect_at(created() + Duration::from_secs(60));
    let text = i.to_string();
    assert_contains(
        &text,
        &[
            "Join bundle for site edge1 (format 3)",
            "2026-09-22T14:13:20Z (expires in 23h 59m)",
            "https://10.240.0.10:9443",
            "identity       https://cp.lab.example:5000/v3",
            "messaging      amqps://cp.lab.example:5671",
            "ovnSouthbound  ssl:10.240.0.10:6642",
            "10.240.0.10    cp.lab.example cp",
            "novaCompute (23 bytes):",
            "      debug = true",
            "abc123.<redacted>",
            "CN=dcn test CA",
            &ca().pin().to_string(),
            "not checked: no --ca-pin given",
        ],
    );
    let json = serde_json::to_string(&i).unwrap();
    assert_contains(
        &json,
        &[
            "\"tokenId\":\"abc123\"",
            "\"pinChecked\":false",
            "\"expired\":false",
            "\"ovnSouthbound\":\"ssl:10.240.0.10:6642\"",
        ],
    );
    let secret = TOKEN_TEXT.split_once('.').unwrap().1;
    for shown in [&text, &json, &format!("{v:?}"), &format!("{i:?}")] {
        assert!(!shown.contains(secret), "the token secret leaked:\n{shown}");
    }
}

/// Writes a small seed corpus for the fuzz target:
/// `cargo test --lib bundle -- --ignored write_fuzz_seed_corpus`.
#[test]
#[ignore]
fn write_fuzz_seed_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/bundle_reader");
    fs::create_dir_all(&dir).unwrap();
    let g = members(&bundle());
    let seeds = [
        ("good", bundle()),
        ("tar-only", gunzip(&bundle())),
        (
            "symlink",
            raw_bundle(&[special("ca.crt", tar::EntryType::Symlink, "/x")]),
        ),
        ("missing", raw_bundle(&[file("manifest.yaml", &g[0].1)])),
        (
            "duplicate",
            raw_bundle(&[file("token", &g[2].1), file("token", &g[2].1)]),
        ),
    ];
    for (name, bytes) in seeds {
        fs::write(dir.join(name), bytes).unwrap();
    }
    let mut n = 0;
    for e in fs::read_dir(&dir).unwrap() {
        let mut f = fs::File::open(e.unwrap().path()).unwrap();
        n += f.read(&mut [0u8; 1]).unwrap();
    }
    assert!(n >= 5);
}
