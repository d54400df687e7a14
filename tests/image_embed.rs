//! `dcn image embed` and `dcn image show` through the real binary, on the
//! committed fixture ISOs (tests/fixtures/iso/INDEX): the payload lands in
//! the area and nowhere else, reads back with secrets redacted, and every
//! refusal class names its problem. Also times an in-place embed into a
//! 1 GiB ISO.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

#[path = "support/bundle.rs"]
mod bundle_support;
use bundle_support::write_lab_bundle as bundle;
const SECRET: &str = "0123456789abcdefghijklmnopqrstuv";

fn dcn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dcn"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/iso")
        .join(name)
}

fn node(dir: &Path, pin: Option<&str>, extra: &str) -> PathBuf {
    let path = dir.join("node.yaml");
    let pin = pin.map(|p| format!("  caPin: {p}\n")).unwrap_or_default();
    std::fs::write(
        &path,
        format!("apiVersion: dcn/v1alpha1\nkind: NodeConfig\nhostname: edge1-node1\ninterfaces:\n- mac: 52:54:00:12:34:56\n  addresses: [10.240.1.20/24]\n  gateway: 10.240.1.1\nrootSshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGZpeHR1cmU admin@test\njoin:\n{pin}  timeout: 5m\n{extra}"),
    )
    .unwrap();
    path
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn area_of(iso: &Path) -> dcn::image::iso9660::Extent {
    let mut f = std::fs::File::open(iso).unwrap();
    dcn::image::iso9660::find_file(&mut f, dcn::image::PAYLOAD_PATH)
        .unwrap()
        .unwrap()
}

#[test]
fn reader_finds_the_area_and_only_the_area() {
    let e = area_of(&fixture("payload-area.iso"));
    assert_eq!(e.length, 65536);
    assert_eq!(e.offset % 2048, 0);
    let bytes = std::fs::read(fixture("payload-area.iso")).unwrap();
    assert!(
        bytes[e.offset as usize..(e.offset + e.length) as usize]
            .iter()
            .all(|&b| b == 0)
    );
    let mut f = std::fs::File::open(fixture("no-area.iso")).unwrap();
    assert_eq!(
        dcn::image::iso9660::find_file(&mut f, dcn::image::PAYLOAD_PATH).unwrap(),
        None
    );
    let mut f = std::fs::File::open(fixture("no-area.iso")).unwrap();
    assert!(
        dcn::image::iso9660::find_file(&mut f, "boot/payload.bin")
            .unwrap()
            .is_some()
    );
}

#[test]
fn embed_show_and_re_embed() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("image test CA").unwrap();
    let pin = dcn::pki::Pin::of_cert_pem(ca.cert_pem())
        .unwrap()
        .to_string();
    let b = bundle(dir.path(), "edge1.tar.gz", 3600, &ca);
    let n = node(dir.path(), Some(&pin), "");
    let out_iso = dir.path().join("node1.iso");
    let o = dcn(&[
        "image",
        "embed",
        s(&fixture("payload-area.iso")),
        "--bundle",
        s(&b),
        "--node",
        s(&n),
        "-o",
        s(&out_iso),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("embedded node edge1-node1 (site edge1)"),
        "{}",
        text(&o)
    );

    // It holds a join token: readable by its owner only, whatever the
    // input's mode.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&out_iso).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & 0o077, 0, "the embedded ISO is mode {mode:o}");

    // Only the area changed.
    let before = std::fs::read(fixture("payload-area.iso")).unwrap();
    let after = std::fs::read(&out_iso).unwrap();
    let e = area_of(&out_iso);
    let (lo, hi) = (e.offset as usize, (e.offset + e.length) as usize);
    assert_eq!(before.len(), after.len());
    assert_eq!(before[..lo], after[..lo]);
    assert_eq!(before[hi..], after[hi..]);
    assert_eq!(&after[lo..lo + 8], b"DCNPAYLD");

    let o = dcn(&["image", "show", s(&out_iso)]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for want in [
        "Node edge1-node1",
        "MAC 52:54:00:12:34:56: 10.240.1.20/24, gateway 10.240.1.1",
        "my IP 10.240.1.20",
        "site edge1",
        "abc123.",
        "ssh-ed25519",
    ] {
        assert!(t.contains(want), "{want:?} not in:\n{t}");
    }
    assert!(!t.contains(SECRET), "the token secret is shown:\n{t}");
    let o = dcn(&["image", "show", s(&out_iso), "--output", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["node"]["hostname"], "edge1-node1");
    assert!(!String::from_utf8_lossy(&o.stdout).contains(SECRET));

    // In place, a second payload replaces the first (zero-filled behind it).
    let n2 = node(dir.path(), None, "dnsServers: [10.240.1.1]\n");
    std::fs::write(
        &n2,
        std::fs::read_to_string(&n2)
            .unwrap()
            .replace("edge1-node1", "edge1-node2"),
    )
    .unwrap();
    let o = dcn(&[
        "image",
        "embed",
        s(&out_iso),
        "--bundle",
        s(&b),
        "--node",
        s(&n2),
        "--in-place",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&dcn(&["image", "show", s(&out_iso)]));
    assert!(
        t.contains("Node edge1-node2") && t.contains("DNS:             10.240.1.1"),
        "{t}"
    );
    let p = dcn::image::embed::read_payload(&out_iso).unwrap();
    let used = dcn::image::payload::HEADER_LEN + p.bundle.len() + p.node_yaml.len();
    let after = std::fs::read(&out_iso).unwrap();
    assert!(after[lo + used..hi].iter().all(|&b| b == 0));
}

#[test]
fn every_refusal_names_its_problem() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("image test CA").unwrap();
    let other = dcn::pki::CertificateAuthority::generate("another CA").unwrap();
    let other_pin = dcn::pki::Pin::of_cert_pem(other.cert_pem())
        .unwrap()
        .to_string();
    let b = bundle(dir.path(), "edge1.tar.gz", 3600, &ca);
    let iso = dir.path().join("x.iso");
    std::fs::copy(fixture("payload-area.iso"), &iso).unwrap();
    let pristine = std::fs::read(&iso).unwrap();
    let embed = |bundle: &Path, node: &Path, iso: &Path| {
        dcn(&[
            "image",
            "embed",
            s(iso),
            "--bundle",
            s(bundle),
            "--node",
            s(node),
            "--in-place",
        ])
    };
    let refused = |o: Output, want: &str| {
        assert!(!o.status.success(), "accepted; wanted {want:?}");
        let t = text(&o);
        assert!(t.contains(want), "{want:?} not in: {t}");
    };

    // Too large: 70 KB of comments do not fit a 64 KiB area.
    let big = node(dir.path(), None, &format!("# {}\n", "x".repeat(70_000)));
    refused(
        embed(&b, &big, &iso),
        "does not fit the ISO's payload area of 65536 bytes",
    );
    // No area.
    let n = node(dir.path(), None, "");
    let no_area = dir.path().join("no-area.iso");
    std::fs::copy(fixture("no-area.iso"), &no_area).unwrap();
    refused(
        embed(&b, &n, &no_area),
        "has no payload area (dcn/payload.bin): it was not built by `dcn image build`",
    );
    // Unverifiable bundles: the wrong CA pin, an expired one, a damaged one.
    let pinned = node(dir.path(), Some(&other_pin), "");
    refused(embed(&b, &pinned, &iso), "refusing to embed");
    refused(
        embed(&b, &pinned, &iso),
        "did not come from the control plane you trust",
    );
    let n = node(dir.path(), None, "");
    let old = bundle(dir.path(), "old.tar.gz", -60, &ca);
    refused(embed(&old, &n, &iso), "expired");
    let damaged = dir.path().join("damaged.tar.gz");
    let mut bytes = std::fs::read(&b).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&damaged, bytes).unwrap();
    refused(embed(&damaged, &n, &iso), "refusing to embed");
    // A bad node config.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: dcn/v1alpha1\nkind: NodeConfig\nhostname: Bad_Name\n",
    )
    .unwrap();
    refused(embed(&b, &bad, &iso), "invalid hostname");
    // Nothing above changed the ISO.
    assert_eq!(std::fs::read(&iso).unwrap(), pristine);

    // Empty, corrupt and other-version payloads, as show and install see them.
    refused(dcn(&["image", "show", s(&iso)]), "no payload is embedded");
    assert!(embed(&b, &n, &iso).status.success());
    let e = area_of(&iso);
    // Each poke changes its byte: the payload holds a random bundle, so a
    // fixed value would sometimes be the byte already there.
    let poke = |offset: u64, change: &dyn Fn(u8) -> u8| {
        let mut bytes = std::fs::read(&iso).unwrap();
        let at = (e.offset + offset) as usize;
        let changed = change(bytes[at]);
        assert_ne!(bytes[at], changed, "the poke must change byte {offset}");
        bytes[at] = changed;
        std::fs::write(&iso, bytes).unwrap();
    };
    poke(100, &|b| b ^ 0xff);
    refused(dcn(&["image", "show", s(&iso)]), "checksum does not match");
    assert!(embed(&b, &n, &iso).status.success());
    poke(8, &|_| 9);
    refused(
        dcn(&["image", "show", s(&iso)]),
        "payload has format version 9",
    );
    refused(
        dcn(&["image", "show", s(&fixture("no-area.iso"))]),
        "has no payload area",
    );
}

/// In place, the cost does not grow with the ISO: a 1 GiB image (the
/// fixture followed by zeros) takes milliseconds. The bound here is loose
/// for slow CI disks; docs/image.md records the measured time.
#[test]
fn in_place_embed_into_a_1_gib_iso_is_fast() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("image test CA").unwrap();
    let b = bundle(dir.path(), "edge1.tar.gz", 3600, &ca);
    let n = node(dir.path(), None, "");
    let iso = dir.path().join("big.iso");
    std::fs::copy(fixture("payload-area.iso"), &iso).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&iso).unwrap();
    f.set_len(1024 * 1024 * 1024).unwrap();
    drop(f);
    let started = std::time::Instant::now();
    let r = dcn::image::embed::embed(
        &dcn::recipes::Recipes::embedded().unwrap(),
        &iso,
        &b,
        &n,
        &dcn::image::embed::Destination::InPlace,
    )
    .unwrap();
    let total = started.elapsed();
    eprintln!(
        "in-place embed into a 1 GiB ISO: {:.1} ms in all (verify + write {:.1} ms)",
        total.as_secs_f64() * 1000.0,
        r.write_seconds * 1000.0
    );
    assert!(total < Duration::from_millis(1000), "{total:?}");
    assert_eq!(std::fs::metadata(&iso).unwrap().len(), 1024 * 1024 * 1024);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&iso).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the ISO now holds a token: mode {mode:o}");
}
