//! The lab harness shared by the end-to-end tests: bring a lab up, run
//! commands in its hosts, tear it down even when an assertion fails.

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn dcn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dcn"))
}

/// Whether the lab tests run here (DCN_LAB_E2E=1, as root).
pub fn enabled() -> bool {
    if std::env::var("DCN_LAB_E2E").as_deref() != Ok("1") {
        eprintln!("skipped: set DCN_LAB_E2E=1 (as root) to run the lab end to end");
        return false;
    }
    assert!(nix::unistd::geteuid().is_root(), "DCN_LAB_E2E=1 needs root");
    true
}

/// A lab, removed on drop.
pub struct Lab {
    pub dir: PathBuf,
    /// Everything dcn printed during `lab up` (checked for secrets).
    pub up_output: String,
}

impl Lab {
    pub fn up(dir: &Path, args: &[&str]) -> Lab {
        let out = dcn()
            .args(["lab", "up", "--dir"])
            .arg(dir)
            .args(args)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("{text}");
        let lab = Lab {
            dir: dir.to_path_buf(),
            up_output: text,
        };
        if !out.status.success() {
            lab.dump_logs("cp");
            panic!("dcn lab up failed");
        }
        lab
    }

    /// Run a command in a lab host; its output.
    pub fn exec_on(&self, host: &str, args: &[&str]) -> Output {
        dcn()
            .args(["-q", "lab", "exec", "--dir"])
            .arg(&self.dir)
            .arg(host)
            .arg("--")
            .args(args)
            .output()
            .unwrap()
    }

    pub fn exec(&self, args: &[&str]) -> Output {
        self.exec_on("cp", args)
    }

    /// Run a command that must succeed in a host; its stdout.
    pub fn ok_on(&self, host: &str, args: &[&str]) -> String {
        let out = self.exec_on(host, args);
        if !out.status.success() {
            self.dump_logs(host);
            panic!(
                "`{}` on {host} failed: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_on("cp", args)
    }

    /// A command that must fail on `host`; its stdout and stderr.
    pub fn fails_on(&self, host: &str, args: &[&str]) -> String {
        let out = self.exec_on(host, args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !out.status.success(),
            "`{}` on {host} should have failed: {text}",
            args.join(" ")
        );
        text
    }

    /// An openstack command on the control plane with JSON output.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-f", "json"]);
        serde_json::from_str(&self.ok(&a)).unwrap()
    }

    /// What a server needs, made on the control plane: a tenant network
    /// `net` with a subnet of `cidr`, a 16 MiB raw image `img` and a flavor
    /// `tiny`. Returns the image as glance shows it.
    pub fn guest_prerequisites(&self, cidr: &str) -> Value {
        self.ok(&["openstack", "network", "create", "net"]);
        self.ok(&[
            "openstack",
            "subnet",
            "create",
            "--network",
            "net",
            "--subnet-range",
            cidr,
            "subnet",
        ]);
        self.ok(&["truncate", "-s", "16M", "/var/tmp/e2e.img"]);
        self.ok(&[
            "openstack",
            "image",
            "create",
            "--file",
            "/var/tmp/e2e.img",
            "--disk-format",
            "raw",
            "--container-format",
            "bare",
            "img",
        ]);
        self.ok(&[
            "openstack",
            "flavor",
            "create",
            "--ram",
            "128",
            "--disk",
            "1",
            "--vcpus",
            "1",
            "tiny",
        ]);
        self.json(&["openstack", "image", "show", "img"])
    }

    /// Boot a server of [`Lab::guest_prerequisites`] (in zone `az` when
    /// given), wait for it, and return it as nova shows it.
    pub fn create_server(&self, name: &str, az: Option<&str>) -> Value {
        let mut args = vec![
            "openstack",
            "server",
            "create",
            "--flavor",
            "tiny",
            "--image",
            "img",
            "--network",
            "net",
            "--wait",
        ];
        if let Some(az) = az {
            args.extend(["--availability-zone", az]);
        }
        args.push(name);
        self.ok(&args);
        self.json(&["openstack", "server", "show", name])
    }

    pub fn lab(&self, args: &[&str]) -> Output {
        dcn()
            .arg("lab")
            .args(args)
            .arg("--dir")
            .arg(&self.dir)
            .output()
            .unwrap()
    }

    /// On failure: the failed units of a host and their journals.
    pub fn dump_logs(&self, host: &str) {
        let out = self.exec_on(host, &["sh", "-c", "systemctl --failed --no-legend; for u in $(systemctl --failed --no-legend --plain | awk '{print $1}'); do journalctl -u $u -n 30 --no-pager; done"]);
        eprintln!(
            "--- failed units in {host}:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = dcn().args(["lab", "down", "--dir"]).arg(&self.dir).status();
    }
}

/// Rows of an `openstack ... -f json` list whose `key` is `want`.
pub fn rows_with<'a>(v: &'a Value, key: &str, want: &str) -> Vec<&'a Value> {
    v.as_array()
        .unwrap()
        .iter()
        .filter(|r| r[key] == want)
        .collect()
}

/// No lab leftovers: namespaces, mounts under `dir`, processes.
pub fn assert_nothing_left(dir: &Path) {
    let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&netns.stdout).contains("dcnlab-"),
        "namespaces left"
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(dir.to_str().unwrap()), "mounts left");
    let procs = Command::new("ps").args(["-eo", "args"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&procs.stdout).contains(dir.to_str().unwrap()),
        "processes left"
    );
}
