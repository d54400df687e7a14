//! The edge ISO end to end under qemu (software emulation): build the ISO,
//! embed a node's payload, boot it with a blank disk and a serial console,
//! check from the serial log that the installer wrote the disk and
//! rebooted, then boot the disk and check that the first-boot unit started
//! `dcn join` with the embedded bundle and the node's settings, and that
//! the bundle verified while the control plane (an unreachable address) is
//! waited for. The ISO and the installed disk boot once more under UEFI
//! firmware (OVMF): the ISO up to the installer's start, the disk up to
//! first boot's `dcn join`. Wall times go to `report.json` in the work
//! directory.
//!
//! It needs root, qemu-system-x86 and the image build tools, and takes
//! about half an hour on two cores: it is `#[ignore]`d, and tests/run.sh
//! runs it with `--ignored` when images/ or src/image/ changed (or with
//! DCN_IMAGE_E2E=1). DCN_IMAGE_DCN_BINARY names the static dcn binary
//! to put on the ISO (tests/run.sh passes its release build).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/bundle.rs"]
mod bundle_support;

const WORK: &str = "/var/cache/dcn-image/e2e";
const MAC: &str = "52:54:00:12:34:56";
/// Debian's OVMF build with its variable store inside (package `ovmf`).
const OVMF: &str = "/usr/share/ovmf/OVMF.fd";

/// Run with `--ignored` (tests/run.sh does): it insists on root rather
/// than pass without running.
fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "the edge ISO end to end builds an image and boots qemu: run it as root (tests/run.sh does, with --ignored)"
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

/// A qemu guest we started, killed by PID when dropped.
struct Guest {
    child: Child,
    serial: PathBuf,
}

impl Guest {
    fn boot(name: &str, args: &[&str], dir: &Path) -> Guest {
        let serial = dir.join(format!("serial-{name}.log"));
        let _ = std::fs::remove_file(&serial);
        let child = Command::new("qemu-system-x86_64")
            .args([
                "-machine",
                "q35",
                "-accel",
                "tcg,thread=multi",
                "-cpu",
                "max",
                "-smp",
                "2",
                "-m",
                "3072",
            ])
            .args(["-display", "none", "-monitor", "none", "-no-reboot"])
            .arg("-serial")
            .arg(format!("file:{}", serial.display()))
            // User-mode networking without a route out: the guest's NIC has
            // the node's MAC, and nothing beyond this machine is reachable.
            .args(["-netdev", "user,id=n0,restrict=on"])
            .args(["-device", &format!("virtio-net-pci,netdev=n0,mac={MAC}")])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting qemu-system-x86_64 (apt-get install qemu-system-x86)");
        Guest { child, serial }
    }

    fn log(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.serial).unwrap_or_default()).into_owned()
    }

    /// Wait until the serial log holds every one of `wanted`, or the guest
    /// exits, or `limit` passes. Returns whether all were seen.
    fn wait_for(&mut self, wanted: &[&str], limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let log = self.log();
            if wanted.iter().all(|w| log.contains(w)) {
                return true;
            }
            if self.child.try_wait().unwrap().is_some() || Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_secs(2));
        }
    }

    /// Wait for the guest to power off (qemu exits on reboot with -no-reboot).
    fn wait_exit(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_secs(2));
        }
        false
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

#[test]
#[ignore = "needs root, qemu and about 12-25 minutes: tests/run.sh runs it with --ignored"]
fn edge_iso_installs_and_first_boot_joins() {
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

    // Boot 1: the live installer, a blank 20 GiB disk.
    let disk = dir.join("disk.qcow2");
    let _ = std::fs::remove_file(&disk);
    run(
        "qemu-img create",
        Command::new("qemu-img")
            .args(["create", "-q", "-f", "qcow2"])
            .arg(&disk)
            .arg("20G"),
    );
    let drive = format!(
        "file={},if=virtio,format=qcow2,cache=unsafe",
        disk.display()
    );
    let t = Instant::now();
    let mut g = Guest::boot(
        "install",
        &[
            "-drive",
            &drive,
            "-cdrom",
            node_iso.to_str().unwrap(),
            "-boot",
            "d",
        ],
        &dir,
    );
    let live = g.wait_for(
        &["dcn install: reading the node payload"],
        Duration::from_secs(900),
    );
    assert!(
        live,
        "the live system did not start the installer within 15 min:\n{}",
        tail(&g.log())
    );
    time("boot 1: ISO to installer start", t);
    let t = Instant::now();
    assert!(
        g.wait_exit(Duration::from_secs(1800)),
        "the installer did not finish within 30 min:\n{}",
        tail(&g.log())
    );
    time("install and reboot", t);
    let log = g.log();
    for want in [
        "bundle verified",
        "installing to /dev/vda",
        "partitioned (GPT: BIOS boot, ESP, root)",
        "copied the OS",
        "installed GRUB (BIOS and UEFI)",
        "wrote the node's settings: hostname edge1-node1",
        "dcn install: done",
        "reboot",
    ] {
        assert!(
            log.contains(want),
            "{want:?} not in the installer's serial log:\n{}",
            tail(&log)
        );
    }
    drop(g);

    // Boot 2: the installed system, disk only.
    let t = Instant::now();
    let mut g = Guest::boot("firstboot", &["-drive", &drive, "-boot", "c"], &dir);
    let join_line = format!(
        "dcn-firstboot: running /usr/local/bin/dcn join /etc/dcn/bundle.tar.gz --ca-pin {pin} --hostname edge1-node1 --my-ip 10.240.1.20 --timeout 2m"
    );
    let started = g.wait_for(&[&join_line], Duration::from_secs(900));
    assert!(
        started,
        "first boot did not start dcn join within 15 min:\n{}",
        tail(&g.log())
    );
    time("boot 2: disk to first-boot join", t);
    let t = Instant::now();
    let verified = g.wait_for(
        &["valid join bundle for site edge1", ", pinned)"],
        Duration::from_secs(300),
    );
    assert!(
        verified,
        "the installed bundle did not verify:\n{}",
        tail(&g.log())
    );
    // Join itself: it verifies the bundle, passes the edge preflight, then
    // retries while the control plane (a private address nothing answers
    // on here) stays unreachable.
    let waiting = g.wait_for(
        &["waiting for the join service at https://10.240.0.10:9443"],
        Duration::from_secs(300),
    );
    assert!(
        waiting,
        "first boot's dcn join did not reach its wait for the control plane:\n{}",
        tail(&g.log())
    );
    time("first boot: bundle verified, join waiting", t);
    let log = g.log();
    std::fs::write(dir.join("firstboot-tail.log"), tail(&log)).unwrap();
    assert!(
        log.contains("edge1-node1 login:") || log.contains("dcn-firstboot"),
        "{}",
        tail(&log)
    );
    drop(g);

    // The same disk under UEFI: the installer's removable-path GRUB on the
    // ESP boots it, and the first-boot unit runs join again (not joined yet).
    let t = Instant::now();
    let mut g = Guest::boot("uefi-disk", &["-bios", OVMF, "-drive", &drive], &dir);
    assert!(
        g.wait_for(&[&join_line], Duration::from_secs(900)),
        "the installed disk did not boot to first boot's join under UEFI within 15 min:\n{}",
        tail(&g.log())
    );
    time("UEFI: disk to first-boot join", t);
    drop(g);

    // The ISO under UEFI, without a disk: the live system starts the
    // installer (which then finds no disk; it is stopped before that).
    let t = Instant::now();
    let mut g = Guest::boot(
        "uefi-iso",
        &["-bios", OVMF, "-cdrom", node_iso.to_str().unwrap()],
        &dir,
    );
    assert!(
        g.wait_for(
            &["dcn install: reading the node payload"],
            Duration::from_secs(900)
        ),
        "the ISO did not boot to the installer under UEFI within 15 min:\n{}",
        tail(&g.log())
    );
    time("UEFI: ISO to installer start", t);
    drop(g);

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
