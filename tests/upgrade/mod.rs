//! What the upgrade proof needs besides the lab harness: a newer dcn made
//! honestly (this tree, its version bumped, one more key in nova-compute's
//! drop-in, built by cargo), Debian packages of the lab's repository
//! rebuilt with a higher version (and, for the failure, a maintainer
//! script that fails on one host), and what a host runs: package
//! versions, units' and guests' processes, the bytes its WAN link carried.

#![allow(dead_code)]

use crate::common::Lab;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The key the newer dcn's recipes add to nova-compute's drop-in.
pub const NEW_KEY: &str = "heal_instance_info_cache_interval";

/// `X.Y.Z` with Z one higher.
pub fn bumped(version: &str) -> String {
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
pub fn build_newer_dcn(work: &Path, version: &str) -> PathBuf {
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

/// The lab repository's `package` (as Debian shipped it), rebuilt with
/// `+<suffix>` after its version, and with `fails_on` set, a postinst that
/// fails on that host: the .deb and its new version.
pub fn rebuilt(
    lab: &Lab,
    work: &Path,
    package: &str,
    suffix: &str,
    fails_on: Option<&str>,
) -> (PathBuf, String) {
    let repo = lab.dir.join("repo/rootfs");
    let deb = std::fs::read_dir(&repo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(&format!("{package}_")) && n.ends_with(".deb") && !n.contains("dcn")
        })
        .unwrap_or_else(|| panic!("{package} in the lab's repository"));
    let unpacked = work.join(format!("{package}-{suffix}"));
    let _ = std::fs::remove_dir_all(&unpacked);
    run(Command::new("dpkg-deb").arg("-R").arg(&deb).arg(&unpacked));
    let control = unpacked.join("DEBIAN/control");
    let text = std::fs::read_to_string(&control).unwrap();
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("Version: "))
        .unwrap()
        .to_string();
    let new = format!("{version}+{suffix}");
    std::fs::write(
        &control,
        text.replace(
            &format!("Version: {version}\n"),
            &format!("Version: {new}\n"),
        ),
    )
    .unwrap();
    if let Some(host) = fails_on {
        let postinst = unpacked.join("DEBIAN/postinst");
        let text = std::fs::read_to_string(&postinst).unwrap();
        let (shebang, rest) = text.split_once('\n').unwrap();
        std::fs::write(
            &postinst,
            format!(
                "{shebang}\n# Published by tests/lab_upgrade.rs: fails on {host} only.\nif [ \"$(hostname)\" = {host} ]; then echo \"{package} postinst: refusing to configure on $(hostname)\" >&2; exit 1; fi\n{rest}"
            ),
        )
        .unwrap();
    }
    let out = work.join(format!("{package}-{suffix}.deb"));
    run(Command::new("dpkg-deb").arg("-b").arg(&unpacked).arg(&out));
    (out, new)
}

/// Publish `debs` in the lab's package source.
pub fn publish(lab: &Lab, debs: &[&Path]) {
    let mut args = vec!["publish".to_string()];
    args.extend(debs.iter().map(|d| d.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = lab.lab(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn installed_version(lab: &Lab, host: &str, package: &str) -> String {
    lab.ok_on(host, &["dpkg-query", "-W", "-f=${Version}", package])
        .trim()
        .to_string()
}

/// Each unit's main PID on `host`.
pub fn main_pids(lab: &Lab, host: &str, units: &[&str]) -> BTreeMap<String, String> {
    units
        .iter()
        .map(|u| {
            let pid = lab.ok_on(host, &["systemctl", "show", "-p", "MainPID", "--value", u]);
            (u.to_string(), pid.trim().to_string())
        })
        .collect()
}

/// The qemu processes of `host`'s guests (their PIDs, sorted).
pub fn qemu_pids(lab: &Lab, host: &str) -> Vec<String> {
    let out = lab.ok_on(
        host,
        &[
            "sh",
            "-c",
            "ps -eo pid=,comm= | awk '$2 ~ /^qemu-system/ {print $1}'",
        ],
    );
    let mut pids: Vec<String> = out.split_whitespace().map(str::to_string).collect();
    pids.sort();
    pids
}

/// The bytes the lab's router has sent toward `host` (its WAN link's
/// downloads).
pub fn link_bytes(host: &str) -> u64 {
    let out = Command::new("ip")
        .args(["netns", "exec", "dcnlab-router", "cat"])
        .arg(format!("/sys/class/net/r-{host}/statistics/tx_bytes"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}
