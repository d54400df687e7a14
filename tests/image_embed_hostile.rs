//! `dcn image embed` and `dcn image show` on hostile input (issue 12):
//! an ISO whose payload area claims a gigabyte (failure 10), a bundle or a
//! node config that never ends (failure 11), a symbolic link planted where
//! the old code wrote its partial copy (failure 12), and an output that
//! would overwrite or delete the input (failure 13). The binary runs under
//! an address-space limit (`ulimit -v`), so an allocation the input asks
//! for fails the run instead of passing unseen; each test checks that
//! nothing outside its own temporary directories changed.

#[path = "support/bundle.rs"]
mod bundle_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Address space the binary may use: room for dcn, not for a gigabyte.
const LIMIT_KIB: u64 = 256 * 1024;
const GIB: u64 = 1 << 30;

/// `dcn ARGS` under the address-space limit.
fn dcn(args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KIB}; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_dcn"))
        .args(args)
        .output()
        .unwrap()
}

/// Run `args`; it must fail, cleanly (exit status 1, not a crash), with
/// `want` in its message.
fn refused(args: &[&str], want: &str) {
    let o = dcn(args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(1), "{args:?}: {text}");
    assert!(text.contains(want), "{want:?} not in: {text}");
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/iso/payload-area.iso")
}

/// A valid bundle and node config, in their own directory.
struct Inputs {
    _dir: tempfile::TempDir,
    bundle: PathBuf,
    node: PathBuf,
    /// A node config with 70 KB of comments: valid, but too large for
    /// the fixture's 64 KiB area.
    big_node: PathBuf,
}

fn inputs() -> Inputs {
    let dir = tempfile::tempdir().unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("hostile image test CA").unwrap();
    let bundle = bundle_support::write_lab_bundle(dir.path(), "edge1.tar.gz", 3600, &ca);
    let yaml = "apiVersion: dcn/v1alpha1\nkind: NodeConfig\nhostname: edge1-node1\n";
    let node = dir.path().join("node.yaml");
    std::fs::write(&node, yaml).unwrap();
    let big_node = dir.path().join("big.yaml");
    std::fs::write(&big_node, format!("{yaml}# {}\n", "x".repeat(70_000))).unwrap();
    Inputs {
        _dir: dir,
        bundle,
        node,
        big_node,
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file in `dir` (not following links) with its size, time and a
/// digest of its contents, or the target of a link: to show a directory
/// was left alone.
fn snapshot(dir: &Path) -> Vec<(String, String)> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut v: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let what = match std::fs::read_link(&p) {
                Ok(target) => format!("-> {}", target.display()),
                Err(_) => {
                    // The first 4 MiB: the crafted ISOs are sparse gigabytes.
                    let mut head = Vec::new();
                    let f = std::fs::File::open(&p).unwrap();
                    f.take(4 << 20).read_to_end(&mut head).unwrap();
                    let m = std::fs::metadata(&p).unwrap();
                    format!(
                        "{} bytes, {:?}, {}",
                        m.len(),
                        m.modified().unwrap(),
                        hex::encode(Sha256::digest(&head))
                    )
                }
            };
            (p.file_name().unwrap().to_string_lossy().into_owned(), what)
        })
        .collect();
    v.sort();
    v
}

fn names(dir: &Path) -> Vec<String> {
    snapshot(dir).into_iter().map(|(n, _)| n).collect()
}

/// The fixture with its payload area's length set to `area` bytes (the
/// image grown, sparse, to hold it) and `header` at the area's start.
fn iso_with_area(dir: &Path, area: u64, header: &[u8]) -> PathBuf {
    let mut bytes = std::fs::read(fixture()).unwrap();
    let name = bytes
        .windows(13)
        .position(|w| w == b"PAYLOAD.BIN;1")
        .unwrap();
    let rec = name - 33;
    assert_eq!(bytes[rec + 10..rec + 14], 65536u32.to_le_bytes());
    bytes[rec + 10..rec + 14].copy_from_slice(&(area as u32).to_le_bytes());
    bytes[rec + 14..rec + 18].copy_from_slice(&(area as u32).to_be_bytes());
    let lba = u32::from_le_bytes(bytes[rec + 2..rec + 6].try_into().unwrap()) as usize;
    bytes[lba * 2048..lba * 2048 + header.len()].copy_from_slice(header);
    let path = dir.join("claims.iso");
    std::fs::write(&path, &bytes).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len((lba * 2048) as u64 + area + 2048).unwrap();
    path
}

/// Failure 10: an area of 1 GiB is refused before anything is read or
/// allocated (it cost 1.05 GB of memory), by show and by embed; an area
/// within the cap whose header claims more than a bundle can be is
/// refused too, before the bundle is read.
#[test]
fn payload_areas_cost_what_the_payload_needs() {
    let dir = tempfile::tempdir().unwrap();
    let i = inputs();
    let iso = iso_with_area(dir.path(), GIB, b"DCNPAYLD");
    let before = snapshot(dir.path());
    let too_big = "is 1073741824 bytes, more than the 67108864 dcn builds and reads";
    refused(&["image", "show", s(&iso)], too_big);
    refused(
        &[
            "image",
            "embed",
            s(&iso),
            "--bundle",
            s(&i.bundle),
            "--node",
            s(&i.node),
            "--in-place",
        ],
        too_big,
    );
    let out = dir.path().join("out.iso");
    refused(
        &[
            "image",
            "embed",
            s(&iso),
            "--bundle",
            s(&i.bundle),
            "--node",
            s(&i.node),
            "-o",
            s(&out),
        ],
        too_big,
    );
    assert_eq!(snapshot(dir.path()), before);

    // 64 MiB (the cap), with a header announcing a 60 MiB bundle.
    let mut header = Vec::from(*b"DCNPAYLD");
    header.extend_from_slice(&1u32.to_le_bytes());
    header.extend_from_slice(&(60u32 << 20).to_le_bytes());
    header.extend_from_slice(&10u32.to_le_bytes());
    let iso = iso_with_area(dir.path(), 64 << 20, &header);
    refused(
        &["image", "show", s(&iso)],
        "its header announces a 62914560-byte bundle, more than the 1048576 bytes dcn writes",
    );
}

/// Failure 11: `--bundle` and `--node` are regular files read up to their
/// caps: `/dev/zero` (which reached 1.5 GB in 3 s) is refused as a device
/// before a byte is read, a file over the cap with its size, each naming
/// the file.
#[test]
fn endless_bundle_and_node_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let i = inputs();
    let iso = dir.path().join("x.iso");
    std::fs::copy(fixture(), &iso).unwrap();
    let before = snapshot(dir.path());
    let embed = |bundle: &Path, node: &Path| {
        vec![
            "image".to_string(),
            "embed".into(),
            s(&iso).into(),
            "--bundle".into(),
            s(bundle).into(),
            "--node".into(),
            s(node).into(),
            "--in-place".into(),
        ]
    };
    let run = |args: Vec<String>, want: &str| {
        refused(&args.iter().map(String::as_str).collect::<Vec<_>>(), want)
    };
    let zero = Path::new("/dev/zero");
    run(
        embed(zero, &i.node),
        "cannot read the bundle: /dev/zero is a character device, not a regular file",
    );
    run(
        embed(&i.bundle, zero),
        "cannot read the node config: /dev/zero is a character device, not a regular file",
    );
    // A regular file one byte over the cap.
    let over = dir.path().join("over.tar.gz");
    std::fs::write(&over, vec![0u8; (1 << 20) + 1]).unwrap();
    run(
        embed(&over, &i.node),
        "is 1048577 bytes, more than the 1048576 bytes dcn reads",
    );
    std::fs::remove_file(&over).unwrap();
    assert_eq!(snapshot(dir.path()), before);
}

/// Failure 12: a symbolic link planted at OUT.partial (where the old code
/// copied the ISO to) or at OUT itself is never followed: the files they
/// point to, outside, are untouched, and OUT is a new regular file.
#[test]
fn planted_links_are_not_followed() {
    let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let i = inputs();
    std::fs::write(outside.path().join("victim"), b"precious").unwrap();
    std::fs::write(outside.path().join("victim2"), b"also precious").unwrap();
    let untouched = snapshot(outside.path());
    let out = dir.path().join("node1.iso");
    let partial = dir.path().join("node1.partial");
    std::os::unix::fs::symlink(outside.path().join("victim"), &partial).unwrap();
    let o = dcn(&[
        "image",
        "embed",
        s(&fixture()),
        "--bundle",
        s(&i.bundle),
        "--node",
        s(&i.node),
        "-o",
        s(&out),
    ]);
    assert_eq!(snapshot(outside.path()), untouched);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::symlink_metadata(&out).unwrap().is_file());
    assert!(
        std::fs::read_link(&partial).is_ok(),
        "the planted link is left as it was"
    );
    assert_eq!(names(dir.path()), ["node1.iso", "node1.partial"]);

    // OUT itself a link: replaced by the new file, its target untouched.
    std::fs::remove_file(&out).unwrap();
    std::os::unix::fs::symlink(outside.path().join("victim2"), &out).unwrap();
    let o = dcn(&[
        "image",
        "embed",
        s(&fixture()),
        "--bundle",
        s(&i.bundle),
        "--node",
        s(&i.node),
        "-o",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::symlink_metadata(&out).unwrap().is_file());
    let o = dcn(&["image", "show", s(&out)]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Node edge1-node1"));
    assert_eq!(snapshot(outside.path()), untouched);
}

/// Failure 13: `embed IN.partial -o IN.iso` copied the input onto itself
/// and deleted it on error. Now the input is only read, a failed embed
/// leaves no output and keeps an earlier one, and an output that is the
/// input under another name is refused.
#[test]
fn the_input_and_earlier_outputs_survive() {
    let dir = tempfile::tempdir().unwrap();
    let i = inputs();
    let input = dir.path().join("x.partial");
    std::fs::copy(fixture(), &input).unwrap();
    let pristine = std::fs::read(&input).unwrap();
    let out = dir.path().join("x.iso");
    let embed = |node: &Path, out: &Path| {
        dcn(&[
            "image",
            "embed",
            s(&input),
            "--bundle",
            s(&i.bundle),
            "--node",
            s(node),
            "-o",
            s(out),
        ])
    };
    // A failure (the node config does not fit the area): nothing written.
    let o = embed(&i.big_node, &out);
    assert_eq!(std::fs::read(&input).unwrap(), pristine);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not fit"));
    assert_eq!(names(dir.path()), ["x.partial"]);
    // Success: the input unchanged, the output has the payload.
    assert!(embed(&i.node, &out).status.success());
    assert_eq!(std::fs::read(&input).unwrap(), pristine);
    let o = dcn(&["image", "show", s(&out)]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Node edge1-node1"));
    // A failure keeps the earlier output as it was.
    let earlier = std::fs::read(&out).unwrap();
    assert!(!embed(&i.big_node, &out).status.success());
    assert_eq!(std::fs::read(&out).unwrap(), earlier);
    assert_eq!(names(dir.path()), ["x.iso", "x.partial"]);
    // The input under another name.
    std::fs::hard_link(&input, dir.path().join("hard.iso")).unwrap();
    std::os::unix::fs::symlink(&input, dir.path().join("soft.iso")).unwrap();
    for other in ["x.partial", "hard.iso", "soft.iso"] {
        refused(
            &[
                "image",
                "embed",
                s(&input),
                "--bundle",
                s(&i.bundle),
                "--node",
                s(&i.node),
                "-o",
                s(&dir.path().join(other)),
            ],
            "is the input ISO",
        );
    }
    assert_eq!(std::fs::read(&input).unwrap(), pristine);
    assert_eq!(
        names(dir.path()),
        ["hard.iso", "soft.iso", "x.iso", "x.partial"]
    );
}
