//! Backup archives, without a lab: `dcn backup`'s code run against a
//! control plane's state in a temporary root (its dump commands answered by
//! a runner that writes what they would print), then hostile archives:
//! truncated, a byte flipped, a member rewritten with its digest, a path
//! that escapes, links, duplicates, extra members, a manifest of a newer
//! dcn, a backup of another cloud, another host's backup. Each is refused
//! with a message that names the problem, and a restore's check of it
//! changes nothing on the host.

use dcn::centre::backup::archive::{self, Manifest};
use dcn::centre::backup::restore::{HostIdentity, Options, check};
use dcn::host::command::{Cmd, CmdOutput, Runner};
use dcn::host::{FileSpec, Files, Host};
use dcn::pki::{CertificateAuthority, Pin};
use std::io::Read;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Answers every command; a dump command's "output" goes to its file.
struct Dumps;

impl Runner for Dumps {
    fn run(&self, cmd: &Cmd) -> anyhow::Result<CmdOutput> {
        if let Some(path) = &cmd.stdout_file {
            std::fs::write(path, format!("-- {} {}\n", cmd.program, cmd.args.join(" ")))?;
        }
        Ok(CmdOutput::ok(""))
    }
}

struct ControlPlane {
    dir: tempfile::TempDir,
    host: Host,
    ca: CertificateAuthority,
}

fn control_plane() -> ControlPlane {
    let dir = tempfile::tempdir().unwrap();
    let files = Files::new(dir.path(), false);
    let put = |p: &str, t: &str, spec: FileSpec| files.write(p, t.as_bytes(), &spec).unwrap();
    put(
        "/etc/passwd",
        "root:x:0:0::/root:/bin/sh\n",
        FileSpec::public(),
    );
    put("/etc/group", "root:x:0:\n", FileSpec::public());
    files
        .ensure_dir("/var/lib/dcn", &FileSpec::private_dir())
        .unwrap();
    let ca = CertificateAuthority::generate("backup test CA").unwrap();
    put("/var/lib/dcn/pki/ca.crt", ca.cert_pem(), FileSpec::secret());
    put(
        "/var/lib/dcn/pki/ca.key",
        ca.key_pem().expose(),
        FileSpec::secret(),
    );
    put(
        "/var/lib/dcn/deployment.json",
        r#"{"roles":["controller"],"services":["mariadb","rabbitmq","ovn-central","keystone","glance"],"hostname":"cp","address":"10.240.0.10"}"#,
        FileSpec::secret(),
    );
    put("/var/lib/dcn/sites/edge1.json", "{}\n", FileSpec::secret());
    put("/var/lib/dcn/journal.json", "{}\n", FileSpec::secret());
    put("/var/lib/dcn/registry.lock", "", FileSpec::secret());
    put(
        "/var/lib/dcn/schema-syncs/keystone.db-sync",
        "empty\n",
        FileSpec::secret(),
    );
    put("/etc/keystone/fernet-keys/0", "key0", FileSpec::secret());
    put("/etc/keystone/fernet-keys/1", "key1", FileSpec::secret());
    put(
        "/etc/keystone/credential-keys/0",
        "ckey0",
        FileSpec::secret(),
    );
    put(
        "/var/lib/glance/images/a1b2",
        "an image",
        FileSpec::public(),
    );
    let host = Host::with_runner(dir.path(), Arc::new(Dumps), false);
    ControlPlane { dir, host, ca }
}

fn backup(cp: &ControlPlane, with_images: bool) -> PathBuf {
    let out = cp.dir.path().join("backup.tar.gz");
    dcn::centre::backup::create::backup(
        &dcn::recipes::Recipes::embedded().unwrap(),
        &cp.host,
        &dcn::centre::backup::create::Options {
            output: out.clone(),
            with_images,
        },
    )
    .unwrap();
    out
}

/// (name, bytes) of every member, in order.
fn members(path: &Path) -> Vec<(String, Vec<u8>)> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap());
    let mut a = tar::Archive::new(gz);
    a.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut b = Vec::new();
            e.read_to_end(&mut b).unwrap();
            (name, b)
        })
        .collect()
}

/// The tar inside a gzip stream, or why it cannot be read.
fn unpacked(gz: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz).read_to_end(&mut out)?;
    Ok(out)
}

/// Write members as a tar.gz, each with its own entry type.
fn write_raw(path: &Path, entries: &[Raw]) {
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::fast(),
    );
    let mut b = tar::Builder::new(gz);
    for (name, data, kind) in entries {
        let mut h = tar::Header::new_gnu();
        // Raw names: the builder's checks would refuse `..`.
        let bytes = name.as_bytes();
        h.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
        h.set_size(data.len() as u64);
        h.set_mode(0o600);
        h.set_entry_type(*kind);
        h.set_cksum();
        b.append(&h, data.as_slice()).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap();
}

/// A raw member: name, bytes and entry type.
type Raw = (String, Vec<u8>, tar::EntryType);

fn regular(m: Vec<(String, Vec<u8>)>) -> Vec<Raw> {
    m.into_iter()
        .map(|(n, b)| (n, b, tar::EntryType::Regular))
        .collect()
}

fn refusal(path: &Path, pin: Option<&Pin>) -> String {
    format!(
        "{:#}",
        archive::read(&dcn::recipes::Recipes::embedded().unwrap(), path, None, pin).unwrap_err()
    )
}

#[test]
fn a_backup_holds_the_state_the_dumps_and_the_keys_and_verifies() {
    let cp = control_plane();
    let path = backup(&cp, true);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let v = archive::read(
        &dcn::recipes::Recipes::embedded().unwrap(),
        &path,
        None,
        Some(&cp.ca.pin()),
    )
    .unwrap();
    let m = &v.manifest;
    assert_eq!(
        (m.hostname.as_str(), m.address.as_str()),
        ("cp", "10.240.0.10")
    );
    let parts: Vec<&str> = m.dumps.iter().map(|d| d.part.as_str()).collect();
    assert_eq!(
        parts,
        ["databases", "rabbitmq-definitions", "ovn-nb", "ovn-sb"]
    );
    let names: Vec<String> = members(&path).into_iter().map(|(n, _)| n).collect();
    for want in [
        "files/var/lib/dcn/pki/ca.key",
        "files/var/lib/dcn/sites/edge1.json",
        "files/etc/keystone/fernet-keys/1",
        "files/etc/keystone/credential-keys/0",
        "files/var/lib/glance/images/a1b2",
        "dumps/databases",
    ] {
        assert!(
            names.contains(&want.to_string()),
            "{want} missing from {names:?}"
        );
    }
    // The journal, the records of schema syncs under way and locks stay
    // out.
    assert!(
        !names.iter().any(|n| n.ends_with("journal.json")
            || n.ends_with(".lock")
            || n.contains("schema-syncs")),
        "{names:?}"
    );
    // Every database of the host's recipes, in one dump.
    let dump = members(&path)
        .into_iter()
        .find(|(n, _)| n == "dumps/databases")
        .unwrap()
        .1;
    let dump = String::from_utf8(dump).unwrap();
    assert!(
        dump.contains("--single-transaction")
            && dump.contains("keystone")
            && dump.contains("glance"),
        "{dump}"
    );
    assert_eq!(names[names.len() - 2..], ["manifest.json", "manifest.sig"]);
    // Without --with-images, no images.
    let path = backup(&cp, false);
    let names: Vec<String> = members(&path).into_iter().map(|(n, _)| n).collect();
    assert!(!names.iter().any(|n| n.contains("glance/images/a1b2")));
}

#[test]
fn damaged_or_tampered_archives_are_refused_with_the_reason() {
    let cp = control_plane();
    let good = backup(&cp, false);
    let bytes = std::fs::read(&good).unwrap();
    let bad = cp.dir.path().join("bad.tar.gz");

    // Truncated.
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    assert!(
        refusal(&bad, None).contains("truncated"),
        "{}",
        refusal(&bad, None)
    );
    std::fs::write(&bad, &bytes[..1]).unwrap();
    assert!(refusal(&bad, None).contains("truncated"));
    // Not a backup at all.
    std::fs::write(&bad, b"PK\x03\x04 a zip").unwrap();
    assert!(refusal(&bad, None).contains("gzip signature"));
    // One byte flipped, at positions spread over the stream. Deflate has
    // bits that change nothing (a flip at byte 178 of 2,843 once left the
    // tar identical, and `gzip -t` agreed), so such a flip may pass; every
    // flip that changes what the archive holds is refused.
    let plain = unpacked(&bytes).unwrap();
    let mut refused = 0;
    for at in (10..bytes.len() - 8).step_by(97) {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x40;
        std::fs::write(&bad, &flipped).unwrap();
        let read = archive::read(
            &dcn::recipes::Recipes::embedded().unwrap(),
            &bad,
            None,
            None,
        );
        match read {
            Ok(_) => assert_eq!(
                unpacked(&flipped).as_deref().ok(),
                Some(plain.as_slice()),
                "a flip at byte {at} changed the archive and was accepted"
            ),
            Err(e) => {
                let e = format!("{e:#}");
                assert!(
                    e.contains("corrupt")
                        || e.contains("truncated")
                        || e.contains("does not match"),
                    "{e}"
                );
                refused += 1;
            }
        }
    }
    assert!(refused > 0);

    // A member rewritten, its digest in the manifest too: the signature
    // no longer verifies.
    let mut m = members(&good);
    let i = m
        .iter()
        .position(|(n, _)| n == "files/var/lib/dcn/sites/edge1.json")
        .unwrap();
    m[i].1 = b"{\"evil\": true}\n".to_vec();
    let mi = m.iter().position(|(n, _)| n == archive::MANIFEST).unwrap();
    let mut manifest: Manifest = serde_json::from_slice(&m[mi].1).unwrap();
    let entry = manifest.members.get_mut(&m[i].0).unwrap();
    entry.size = m[i].1.len() as u64;
    use sha2::Digest;
    entry.sha256 = hex::encode(sha2::Sha256::digest(&m[i].1));
    m[mi].1 = serde_json::to_vec_pretty(&manifest).unwrap();
    write_raw(&bad, &regular(m.clone()));
    assert!(
        refusal(&bad, None).contains("tampered"),
        "{}",
        refusal(&bad, None)
    );

    // Only the member changed: its digest does not match.
    let mut m2 = members(&good);
    m2[i].1 = b"{\"evil\": true}\n".to_vec();
    write_raw(&bad, &regular(m2));
    assert!(refusal(&bad, None).contains("does not match its manifest"));

    // A path that escapes, a link, a duplicate, a member the manifest
    // does not list.
    let base = regular(members(&good));
    let cases: Vec<(Vec<Raw>, &str)> = vec![
        (
            [
                vec![(
                    "files/../../etc/shadow".into(),
                    b"x".to_vec(),
                    tar::EntryType::Regular,
                )],
                base.clone(),
            ]
            .concat(),
            "`..` component",
        ),
        (
            [
                vec![("/etc/passwd".into(), b"x".to_vec(), tar::EntryType::Regular)],
                base.clone(),
            ]
            .concat(),
            "absolute",
        ),
        (
            [
                vec![("files/etc/link".into(), Vec::new(), tar::EntryType::Symlink)],
                base.clone(),
            ]
            .concat(),
            "not a regular file",
        ),
        ([vec![base[0].clone()], base.clone()].concat(), "twice"),
        (
            [
                vec![(
                    "files/var/lib/dcn/extra".into(),
                    b"x".to_vec(),
                    tar::EntryType::Regular,
                )],
                base.clone(),
            ]
            .concat(),
            "does not list it",
        ),
    ];
    for (entries, want) in cases {
        write_raw(&bad, &entries);
        let e = refusal(&bad, None);
        assert!(e.contains(want), "{want}: {e}");
    }

    // A manifest that would write outside what a backup holds.
    let mut m3 = members(&good);
    let mut manifest: Manifest = serde_json::from_slice(&m3[mi].1).unwrap();
    manifest.files[0].path = "/etc/shadow".into();
    m3[mi].1 = serde_json::to_vec_pretty(&manifest).unwrap();
    write_raw(&bad, &regular(m3));
    assert!(refusal(&bad, None).contains("outside what a dcn backup holds"));

    // Written by a newer dcn (its format, or its version).
    for (field, value) in [
        ("formatVersion", serde_json::json!(2)),
        ("dcnVersion", serde_json::json!("99.0.0")),
    ] {
        let mut m4 = members(&good);
        let mut v: serde_json::Value = serde_json::from_slice(&m4[mi].1).unwrap();
        v[field] = value;
        m4[mi].1 = serde_json::to_vec(&v).unwrap();
        write_raw(&bad, &regular(m4));
        assert!(refusal(&bad, None).contains("newer dcn"), "{field}");
    }

    // A backup of another cloud, by its pin.
    let other = CertificateAuthority::generate("another cloud's CA").unwrap();
    let e = refusal(&good, Some(&other.pin()));
    assert!(e.contains("another cloud"), "{e}");
}

/// This host's name and addresses, as a test says.
struct Identity(&'static str, &'static str);

impl HostIdentity for Identity {
    fn hostname(&self) -> anyhow::Result<String> {
        Ok(self.0.into())
    }
    fn has_address(&self, a: IpAddr) -> anyhow::Result<bool> {
        Ok(a.to_string() == self.1)
    }
}

/// Every file under `dir`, with its bytes.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(tree(&p));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn a_restore_onto_the_wrong_host_or_over_another_cloud_is_refused_and_changes_nothing() {
    let cp = control_plane();
    let archive_path = backup(&cp, false);
    let opts = Options {
        archive: archive_path,
        ca_pin: None,
        ignore_preflight: vec![],
    };
    // A blank host.
    let target = tempfile::tempdir().unwrap();
    let host = Host::with_runner(target.path(), Arc::new(Dumps), false);
    let before = tree(target.path());
    let cases: [(Identity, &str); 2] = [
        (Identity("cp2", "10.240.0.10"), "this host is called cp2"),
        (
            Identity("cp", "10.240.0.99"),
            "which this host does not have",
        ),
    ];
    for (id, want) in cases {
        let e = format!(
            "{:#}",
            check(
                &dcn::recipes::Recipes::embedded().unwrap(),
                &host,
                &id,
                &opts,
                None
            )
            .unwrap_err()
        );
        assert!(e.contains(want), "{e}");
    }
    check(
        &dcn::recipes::Recipes::embedded().unwrap(),
        &host,
        &Identity("cp", "10.240.0.10"),
        &opts,
        None,
    )
    .unwrap();
    // A host that is another cloud's control plane.
    let other = CertificateAuthority::generate("another cloud's CA").unwrap();
    host.files
        .write(
            "/var/lib/dcn/pki/ca.crt",
            other.cert_pem().as_bytes(),
            &FileSpec::secret(),
        )
        .unwrap();
    let with_other = tree(target.path());
    let e = format!(
        "{:#}",
        check(
            &dcn::recipes::Recipes::embedded().unwrap(),
            &host,
            &Identity("cp", "10.240.0.10"),
            &opts,
            None
        )
        .unwrap_err()
    );
    assert!(e.contains("another cloud"), "{e}");
    assert_eq!(tree(target.path()), with_other);
    assert!(before.is_empty());
    // The whole restore refuses as early, and leaves no staging behind.
    let e = format!(
        "{:#}",
        dcn::centre::backup::restore::restore(
            &dcn::recipes::Recipes::embedded().unwrap(),
            &host,
            &Identity("cp", "10.240.0.10"),
            &opts
        )
        .unwrap_err()
    );
    assert!(e.contains("another cloud"), "{e}");
    assert_eq!(tree(target.path()), with_other);
}
