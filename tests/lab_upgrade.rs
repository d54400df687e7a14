//! `dcn upgrade` of the control plane, for real (issue 26). A lab whose cp
//! owns its dcn (`--copy-dcn`) is set up by this tree's dcn, with two real
//! guests on cp's own compute. Then, in one lab:
//!
//! 1. Debian's updates: the lab's repository holds the point and security
//!    updates of the base system that its debootstrap root lacks; `dcn
//!    upgrade` (this dcn) installs them and restarts what runs them.
//! 2. A newer dcn, made honestly: this tree with its version bumped and one
//!    more key in nova-compute's drop-in, built by cargo; and a newer
//!    Debian package: the repository's memcached rebuilt as `+dcn1` and
//!    published in the control plane's package source (`dcn lab publish`).
//!    `dcn upgrade --plan` shows the release, the package with both
//!    versions, the drop-in's diff and the restarts, and changes nothing.
//! 3. An upgrade that stopped right after its packages step (the package
//!    installed with nothing restarted, as dcn's packages step leaves it):
//!    the plan names memcached as running code installed after it started.
//! 4. `dcn upgrade` with the new dcn: memcached at the new version and
//!    restarted, nova-compute restarted for its new key, the join service
//!    on the new binary; mariadb, rabbitmq, keystone, the conductor,
//!    neutron, ovn-controller and libvirt keep their processes; the guests
//!    keep theirs and keep working. A second run finds nothing to do, and
//!    the old dcn refuses the upgraded host, naming both releases.
//!
//! It needs root, cargo and minutes: `#[ignore]`d, run by tests/run.sh.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The key the newer dcn's recipes add to nova-compute's drop-in.
const NEW_KEY: &str = "heal_instance_info_cache_interval";

#[test]
#[ignore = "needs root, cargo and the lab (minutes): tests/run.sh runs it with --ignored"]
fn the_control_plane_upgrades_to_a_newer_dcn_and_newer_packages() {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("dcn-lab-upgrade-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let newer_version = bumped(env!("CARGO_PKG_VERSION"));
    let newer = build_newer_dcn(work.path(), &newer_version);
    let lab_dir = work.path().join("lab");
    let lab = Lab::up(&lab_dir, &["--edges", "0", "--copy-dcn"]);
    let release = |lab: &Lab| lab.ok(&["cat", "/var/lib/dcn/release.json"]);
    assert!(release(&lab).contains(env!("CARGO_PKG_VERSION")));
    let guests = lab.guest_pair("up", None);
    for g in &guests {
        lab.wait_guest_working(g, Duration::from_secs(600));
    }
    let qemu_before = qemu_pids(&lab);
    assert_eq!(qemu_before.len(), 2, "two guests run: {qemu_before:?}");

    // 1. Debian's updates of the base system, with this dcn.
    let plan = lab.ok(&["dcn", "upgrade", "--plan"]);
    eprintln!("--- plan of Debian's updates:\n{plan}");
    let applied = lab.ok(&["dcn", "upgrade", "--ignore-preflight-errors", "disk-var"]);
    eprintln!("--- applied:\n{applied}");
    assert!(
        lab.ok(&["dcn", "upgrade", "--plan"])
            .contains("Nothing to upgrade"),
        "after the updates, nothing is left to do"
    );

    // 2. A newer package and a newer dcn.
    let (deb, package_version) = rebuilt_memcached(&lab, work.path());
    let published = lab.lab(&["publish", deb.to_str().unwrap()]);
    assert!(
        published.status.success(),
        "{}",
        String::from_utf8_lossy(&published.stderr)
    );
    let old_package = installed_version(&lab, "memcached");
    std::fs::copy(&newer, lab.host_path("cp", "/root/dcn-new")).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_dcn"),
        lab.host_path("cp", "/root/dcn-old"),
    )
    .unwrap();
    let dropin = "/etc/nova/nova-compute.conf.d/10-dcn.conf";
    let plan = lab.ok(&["/root/dcn-new", "upgrade", "--plan"]);
    eprintln!("--- plan of the newer dcn:\n{plan}");
    for want in [
        format!("dcn: {} → {newer_version}", env!("CARGO_PKG_VERSION")),
        format!("memcached {old_package} → {package_version}"),
        // Its diff is not shown: it holds the compute's transport URL.
        format!("  {dropin} (Updated)"),
        "restart memcached.service: memcached changes under it".to_string(),
        "restart nova-compute.service: its configuration changes".to_string(),
    ] {
        assert!(plan.contains(&want), "the plan lacks {want:?}:\n{plan}");
    }
    assert!(
        !plan.contains("restart mariadb.service"),
        "mariadb runs nothing that changes:\n{plan}"
    );
    // The plan changed nothing.
    assert_eq!(installed_version(&lab, "memcached"), old_package);
    assert!(!lab.ok(&["cat", dropin]).contains(NEW_KEY));
    assert!(release(&lab).contains(env!("CARGO_PKG_VERSION")));

    // 3. As an upgrade killed right after its packages step leaves it.
    lab.ok(&[
        "sh",
        "-c",
        "printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d \
         && apt-get -q update -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/dcn-local.list -o Dir::Etc::sourceparts=- \
         && DEBIAN_FRONTEND=noninteractive apt-get -q -y install memcached \
            -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/dcn-local.list -o Dir::Etc::sourceparts=-; \
         rc=$?; rm -f /usr/sbin/policy-rc.d; exit $rc",
    ]);
    assert_eq!(installed_version(&lab, "memcached"), package_version);
    let plan = lab.ok(&["/root/dcn-new", "upgrade", "--plan"]);
    assert!(
        plan.contains("restart memcached.service: memcached installed after it started"),
        "a stopped upgrade's restart is still planned:\n{plan}"
    );

    // 4. The upgrade.
    let units = [
        "memcached",
        "nova-compute",
        "dcn-join",
        "mariadb",
        "rabbitmq-server",
        "keystone",
        "nova-conductor",
        "neutron-server",
        "ovn-controller",
        "libvirtd",
    ];
    let before = main_pids(&lab, &units);
    let applied = lab.ok(&[
        "/root/dcn-new",
        "upgrade",
        "--ignore-preflight-errors",
        "disk-var",
    ]);
    eprintln!("--- applied:\n{applied}");
    let after = main_pids(&lab, &units);
    for (unit, restarted) in [
        ("memcached", true),
        ("nova-compute", true),
        ("dcn-join", true),
        ("mariadb", false),
        ("rabbitmq-server", false),
        ("keystone", false),
        ("nova-conductor", false),
        ("neutron-server", false),
        ("ovn-controller", false),
        ("libvirtd", false),
    ] {
        assert_eq!(
            before[unit] != after[unit],
            restarted,
            "{unit}: PID {} before, {} after (restart expected: {restarted})\n{applied}",
            before[unit],
            after[unit]
        );
        assert_ne!(after[unit], "0", "{unit} runs after the upgrade");
    }
    assert_eq!(installed_version(&lab, "memcached"), package_version);
    assert!(lab.ok(&["cat", dropin]).contains(NEW_KEY));
    assert!(release(&lab).contains(&newer_version));
    assert!(
        lab.ok(&["dcn", "--version"]).contains(&newer_version),
        "the new dcn installed itself"
    );
    assert!(lab.ok(&["dcn", "status"]).contains("all services are up"));
    // The compute service is up again for nova.
    let service = lab.compute_service("cp").expect("nova lists cp's compute");
    assert_eq!(service["State"], "up", "{service}");

    // The guests kept their processes and keep working: a round after
    // the upgrade with every check ok.
    assert_eq!(qemu_pids(&lab), qemu_before, "the guests' qemu processes");
    for g in &guests {
        let last = lab
            .guest_boots(&g.host, &g.id)
            .last()
            .unwrap()
            .rounds()
            .len();
        let deadline = std::time::Instant::now() + Duration::from_secs(300);
        loop {
            let boots = lab.guest_boots(&g.host, &g.id);
            let rounds = boots.last().unwrap().rounds();
            if rounds.len() > last && rounds[last..].iter().any(|r| round_ok(r)) {
                let failed = rounds.iter().filter(|r| !round_ok(r)).count();
                eprintln!(
                    "{}: {failed} of {} rounds not fully ok",
                    g.name,
                    rounds.len()
                );
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{} has no good round since the upgrade",
                g.name
            );
            std::thread::sleep(Duration::from_secs(5));
        }
    }

    // Done: nothing left, and the old dcn keeps its hands off.
    assert!(
        lab.ok(&["dcn", "upgrade", "--plan"])
            .contains("Nothing to upgrade"),
        "a second run finds nothing to do"
    );
    let refused = lab.fails_on("cp", &["/root/dcn-old", "upgrade", "--plan"]);
    assert!(
        refused.contains(&format!("set up by dcn {newer_version}"))
            && refused.contains(&format!("this dcn is {}", env!("CARGO_PKG_VERSION"))),
        "{refused}"
    );
    let refused = lab.fails_on("cp", &["/root/dcn-old", "standalone", "init"]);
    assert!(
        refused.contains("a downgrade is not supported"),
        "{refused}"
    );
}

/// `X.Y.Z` with Z one higher.
fn bumped(version: &str) -> String {
    let mut parts: Vec<u64> = version.split('.').map(|p| p.parse().unwrap()).collect();
    *parts.last_mut().unwrap() += 1;
    parts
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// This tree, copied, with `version` and one more key in nova-compute's
/// drop-in, built in release mode (its own target directory under the
/// tree's, kept between runs). The binary's path.
fn build_newer_dcn(work: &Path, version: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tree = work.join("newer");
    let listed = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(src)
        .output()
        .unwrap();
    assert!(listed.status.success());
    for rel in listed.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let rel = Path::new(std::str::from_utf8(rel).unwrap());
        let from = src.join(rel);
        if !from.is_file() {
            continue;
        }
        let to = tree.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
    }
    let this = env!("CARGO_PKG_VERSION");
    for file in ["Cargo.toml", "Cargo.lock"] {
        let text = std::fs::read_to_string(tree.join(file)).unwrap();
        let old = format!("name = \"dcn\"\nversion = \"{this}\"");
        assert!(text.contains(&old), "{file} names dcn {this}");
        let text = text.replacen(&old, &format!("name = \"dcn\"\nversion = \"{version}\""), 1);
        std::fs::write(tree.join(file), text).unwrap();
    }
    let recipe = tree.join("recipes/debian-12/services/nova-compute.yaml");
    let text = std::fs::read_to_string(&recipe).unwrap();
    let anchor = "        state_path: /var/lib/nova\n";
    assert!(
        text.contains(anchor),
        "nova-compute's drop-in sets state_path"
    );
    let text = text.replacen(
        anchor,
        &format!("{anchor}        # Added by the newer dcn of tests/lab_upgrade.rs.\n        {NEW_KEY}: \"120\"\n"),
        1,
    );
    std::fs::write(&recipe, text).unwrap();
    let target = src.join("target/lab-upgrade-newer");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--locked"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(&tree)
        .status()
        .unwrap();
    assert!(status.success(), "building the newer dcn");
    target.join("x86_64-unknown-linux-gnu/release/dcn")
}

/// The lab repository's memcached, rebuilt with `+dcn1` after its version:
/// the .deb and its new version.
fn rebuilt_memcached(lab: &Lab, work: &Path) -> (PathBuf, String) {
    let repo = lab.dir.join("repo/rootfs");
    let deb = std::fs::read_dir(&repo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("memcached_") && n.ends_with(".deb")
        })
        .expect("memcached in the lab's repository");
    let unpacked = work.join("memcached");
    run(Command::new("dpkg-deb").arg("-R").arg(&deb).arg(&unpacked));
    let control = unpacked.join("DEBIAN/control");
    let text = std::fs::read_to_string(&control).unwrap();
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("Version: "))
        .unwrap()
        .to_string();
    let new = format!("{version}+dcn1");
    std::fs::write(
        &control,
        text.replace(
            &format!("Version: {version}\n"),
            &format!("Version: {new}\n"),
        ),
    )
    .unwrap();
    let out = work.join("memcached-dcn1.deb");
    run(Command::new("dpkg-deb").arg("-b").arg(&unpacked).arg(&out));
    (out, new)
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn installed_version(lab: &Lab, package: &str) -> String {
    lab.ok(&["dpkg-query", "-W", "-f=${Version}", package])
        .trim()
        .to_string()
}

/// Each unit's main PID in cp.
fn main_pids(lab: &Lab, units: &[&str]) -> std::collections::BTreeMap<String, String> {
    units
        .iter()
        .map(|u| {
            let pid = lab.ok(&["systemctl", "show", "-p", "MainPID", "--value", u]);
            (u.to_string(), pid.trim().to_string())
        })
        .collect()
}

/// The qemu processes of cp's guests (their PIDs, sorted).
fn qemu_pids(lab: &Lab) -> Vec<String> {
    let out = lab.ok(&[
        "sh",
        "-c",
        "ps -eo pid=,comm= | awk '$2 ~ /^qemu-system/ {print $1}'",
    ]);
    let mut pids: Vec<String> = out.split_whitespace().map(str::to_string).collect();
    pids.sort();
    pids
}
