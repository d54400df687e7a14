//! The edge ISO built for real: `dcn image build` from images/edge with
//! the release binary (debootstrap, the edge packages, squashfs, a hybrid
//! BIOS/UEFI ISO), then a node's payload embedded into a copy and into a
//! 1 GiB ISO in place, and read back with `dcn image show`. Wall times go
//! to `report.json` in the work directory.
//!
//! The ISO is booted by tests/site_deploy_e2e.rs, which runs next in
//! tests/run.sh: a real BMC boots it from virtual media on two VMs (SeaBIOS
//! and UEFI), the installer writes their disks, and first boot joins them.
//! Booting it here under plain qemu as well would cost 15 more minutes for
//! nothing that test does not show.
//!
//! It needs root and the image build tools, and takes about 6 minutes with
//! a cold /var/cache/dcn-image (1 warm): it is `#[ignore]`d, and
//! tests/run.sh runs it with `--ignored` when the edge chain's code changed
//! (or with DCN_IMAGE_E2E=1). DCN_IMAGE_DCN_BINARY names the static dcn
//! binary to put on the ISO (tests/run.sh passes its release build).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

#[path = "support/bundle.rs"]
mod bundle_support;

const WORK: &str = "/var/cache/dcn-image/e2e";
const MAC: &str = "52:54:00:12:34:56";

/// Run with `--ignored` (tests/run.sh does): it insists on root rather
/// than pass without running.
fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "the edge ISO build runs debootstrap and chroots: run it as root (tests/run.sh does, with --ignored)"
    );
}

fn dcn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dcn"))
}

fn run(what: &str, cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what} failed:\n{text}");
    text
}

#[test]
#[ignore = "needs root and the image build tools, about 6 minutes: tests/run.sh runs it with --ignored"]
fn edge_iso_builds_and_takes_a_nodes_payload() {
    require_root();
    let dir = PathBuf::from(WORK);
    std::fs::create_dir_all(&dir).unwrap();
    let mut times: Vec<(String, f64)> = Vec::new();
    let mut time = |name: &str, t: Instant| {
        let s = t.elapsed().as_secs_f64();
        eprintln!("==> {name}: {s:.3}s");
        times.push((name.to_string(), s));
    };

    // Build.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let binary = std::env::var("DCN_IMAGE_DCN_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo.join("target/x86_64-unknown-linux-gnu/release/dcn"));
    let iso = dir.join("dcn-edge.iso");
    let t = Instant::now();
    let out = run(
        "dcn image build",
        dcn()
            .arg("image")
            .arg("build")
            .arg("--recipe")
            .arg(repo.join("images/edge"))
            .arg("-o")
            .arg(&iso)
            .arg("--dcn-binary")
            .arg(&binary)
            .arg("--report")
            .arg(dir.join("build.json")),
    );
    eprintln!("{out}");
    time("build", t);
    let iso_bytes = std::fs::metadata(&iso).unwrap().len();

    // A bundle for an unreachable control plane, and the node's settings.
    let ca = dcn::pki::CertificateAuthority::generate("e2e CA").unwrap();
    let pin = dcn::pki::Pin::of_cert_pem(ca.cert_pem())
        .unwrap()
        .to_string();
    let bundle = bundle_support::write_lab_bundle(&dir, "edge1.tar.gz", 24 * 3600, &ca);
    let node = dir.join("node1.yaml");
    std::fs::write(
        &node,
        format!("apiVersion: dcn/v1alpha1\nkind: NodeConfig\nhostname: edge1-node1\ndisk:\n  select: only\n  minSizeGiB: 8\ninterfaces:\n- mac: {MAC}\n  addresses: [10.240.1.20/24]\n  gateway: 10.240.1.1\n  routes:\n  - to: 10.240.0.0/24\n    via: 10.240.1.1\ndnsServers: [10.240.1.1]\nntpServers: [10.240.1.1]\njoin:\n  caPin: {pin}\n  timeout: 2m\n"),
    )
    .unwrap();

    // Embed: a copy for this node, and in place into a 1 GiB ISO.
    let node_iso = dir.join("node1.iso");
    let t = Instant::now();
    run(
        "dcn image embed",
        dcn()
            .arg("image")
            .arg("embed")
            .arg(&iso)
            .arg("--bundle")
            .arg(&bundle)
            .arg("--node")
            .arg(&node)
            .arg("-o")
            .arg(&node_iso),
    );
    time("embed (copy)", t);
    let big = dir.join("big.iso");
    std::fs::copy(&iso, &big).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&big)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    // A settled file, as an ISO waiting to be customised is: otherwise the
    // flush at the end of the embed also writes out the copy just made.
    nix::unistd::sync();
    let t = Instant::now();
    let out = run(
        "dcn image embed --in-place (1 GiB)",
        dcn()
            .arg("image")
            .arg("embed")
            .arg(&big)
            .arg("--bundle")
            .arg(&bundle)
            .arg("--node")
            .arg(&node)
            .arg("--in-place"),
    );
    time("embed in place, 1 GiB ISO (whole command)", t);
    eprintln!("{out}");
    std::fs::remove_file(&big).unwrap();
    let shown = run(
        "dcn image show",
        dcn().arg("image").arg("show").arg(&node_iso),
    );
    assert!(
        shown.contains("Node edge1-node1") && !shown.contains("0123456789abcdefghijklmnopqrstuv"),
        "{shown}"
    );

    let report = serde_json::json!({
        "isoBytes": iso_bytes,
        "times": times.iter().map(|(n, s)| serde_json::json!({"stage": n, "seconds": s})).collect::<Vec<_>>(),
    });
    let mut f = std::fs::File::create(dir.join("report.json")).unwrap();
    writeln!(f, "{}", serde_json::to_string_pretty(&report).unwrap()).unwrap();
    eprintln!(
        "report: {}\n{}",
        dir.join("report.json").display(),
        serde_json::to_string_pretty(&report).unwrap()
    );
}
