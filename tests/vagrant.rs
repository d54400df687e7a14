//! vagrant/Vagrantfile stays in step with dcn: every dcn command line in
//! it parses with the current CLI (a renamed flag breaks this build, not an
//! operator's evening), and `vagrant validate` accepts it for 1 and 3 edge
//! sites and with the edge-ISO VM (against libvirt's in-process test
//! driver: VMs cannot boot here, there is no hardware virtualization).

use clap::Parser;
use std::path::Path;
use std::process::Command;

fn vagrantfile() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("vagrant/Vagrantfile"))
        .unwrap()
}

/// Ruby interpolations in dcn command lines, with example values.
const INTERPOLATIONS: &[(&str, &str)] = &[
    ("#{k}", "1"),
    ("#{BUNDLES}", "/vagrant/vagrant/.bundles"),
    ("#{address}", "192.168.61.10"),
    ("#{CP_ADDRESS}", "192.168.50.10"),
    (
        "\"$PIN\"",
        "sha256:0000000000000000000000000000000000000000000000000000000000000000",
    ),
];

/// Every `dcn ...` command line in the Vagrantfile, with interpolations
/// replaced and shell plumbing (`| tee ...`) cut off.
fn command_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        // `dcn` as a command word: at the start, after a space or a quote
        // (not `/etc/dcn `).
        let Some(start) = line
            .match_indices("dcn ")
            .map(|(i, _)| i)
            .find(|&i| i == 0 || matches!(line.as_bytes()[i - 1], b' ' | b'"' | b'\''))
        else {
            continue;
        };
        if line.trim_start().starts_with('#') || line[..start].contains("cargo") {
            continue;
        }
        let mut cmd = line[start..].to_string();
        for stop in ["|", "\"}", "\" }"] {
            if let Some(i) = cmd.find(stop) {
                cmd.truncate(i);
            }
        }
        for (from, to) in INTERPOLATIONS {
            cmd = cmd.replace(from, to);
        }
        assert!(
            !cmd.contains("#{"),
            "add an example value for the interpolation in: {cmd}"
        );
        out.push(cmd.trim().to_string());
    }
    out
}

#[test]
fn every_dcn_command_line_in_the_vagrantfile_parses() {
    let lines = command_lines(&vagrantfile());
    for expected in ["dcn standalone init", "dcn bundle export", "dcn join"] {
        assert!(
            lines.iter().any(|l| l.starts_with(expected)),
            "no `{expected}` in the Vagrantfile: {lines:?}"
        );
    }
    for line in &lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Err(e) = dcn::cli::Cli::try_parse_from(&words) {
            panic!("the Vagrantfile runs `{line}`, which the current CLI refuses:\n{e}");
        }
    }
}

#[test]
fn the_command_line_check_would_catch_a_renamed_flag() {
    let renamed = vagrantfile().replace("--ca-pin", "--pin");
    let line = command_lines(&renamed)
        .into_iter()
        .find(|l| l.starts_with("dcn join"))
        .unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    assert!(dcn::cli::Cli::try_parse_from(&words).is_err());
}

/// Run with `--ignored` (tests/run.sh does, after installing vagrant and
/// vagrant-libvirt).
#[test]
#[ignore = "needs vagrant and vagrant-libvirt: tests/run.sh installs them and runs it with --ignored"]
fn vagrant_validate_accepts_the_lab() {
    assert!(
        Command::new("vagrant").arg("--version").output().is_ok(),
        "vagrant is not installed: apt-get install vagrant vagrant-libvirt (tests/run.sh does)"
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("vagrant");
    let home = tempfile::tempdir().unwrap();
    for env in [
        ("DCN_EDGES", "1"),
        ("DCN_EDGES", "3"),
        ("DCN_EDGE_ISO", "/nonexistent/edge.iso"),
    ] {
        let out = Command::new("vagrant")
            .arg("validate")
            .current_dir(&dir)
            .env(env.0, env.1)
            .env("DCN_LIBVIRT_URI", "test:///default")
            .env("VAGRANT_HOME", home.path())
            .env("VAGRANT_CHECKPOINT_DISABLE", "1")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && text.contains("validated successfully"),
            "vagrant validate with {}={}:\n{text}",
            env.0,
            env.1
        );
    }
}
