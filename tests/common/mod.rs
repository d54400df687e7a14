//! The lab harness shared by the end-to-end tests: bring a lab up, run
//! commands in its hosts, tear it down even when an assertion fails.

#![allow(dead_code)]

pub mod bare_metal;

pub use dcn::lab::guest::{self, GuestBoot};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn dcn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dcn"))
}

/// The lab tests are `#[ignore]`d (they need root and minutes); run with
/// `--ignored`, they insist on root rather than pass without running.
pub fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "the lab tests create namespaces, mounts and containers: run them as root (tests/run.sh does, with --ignored)"
    );
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

    /// `host`'s nova-compute service as `openstack compute service list
    /// --long` shows it (State, Status, Zone, ...); None when it is not
    /// listed or the API did not answer (as while the control plane
    /// restarts).
    pub fn compute_service(&self, host: &str) -> Option<Value> {
        let out = self.exec(&[
            "openstack",
            "compute",
            "service",
            "list",
            "--service",
            "nova-compute",
            "--long",
            "-f",
            "json",
        ]);
        let v: Value = serde_json::from_slice(&out.stdout).ok()?;
        v.as_array()?.iter().find(|r| r["Host"] == host).cloned()
    }

    /// A port on the lab network (which `dcn lab up` creates with the
    /// guest image and flavor); returns its id and address.
    pub fn port(&self, name: &str) -> (String, String) {
        let p = self.json(&[
            "openstack",
            "port",
            "create",
            "--network",
            guest::NETWORK,
            name,
        ]);
        let ip = p["fixed_ips"][0]["ip_address"]
            .as_str()
            .unwrap_or_else(|| panic!("no address on port {name}: {p}"))
            .to_string();
        (p["id"].as_str().unwrap().to_string(), ip)
    }

    /// Start booting the lab's real guest (`dcn-guest`, a kernel and a
    /// busybox initramfs) without waiting: in zone `az` when given, on
    /// `port` (else the lab network), told to check `peer` (an address)
    /// through its user data.
    pub fn boot_guest(&self, name: &str, az: Option<&str>, port: Option<&str>, peer: Option<&str>) {
        let out = self.try_boot_guest(name, az, port, peer, false);
        assert!(
            out.status.success(),
            "creating {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `openstack server create` of the lab guest (see [`Lab::boot_guest`]),
    /// with `--wait` when `wait`; its output, success or not.
    pub fn try_boot_guest(
        &self,
        name: &str,
        az: Option<&str>,
        port: Option<&str>,
        peer: Option<&str>,
        wait: bool,
    ) -> Output {
        let user_data = format!("/root/user-data-{name}");
        let host_path = self.host_path("cp", &user_data);
        std::fs::write(&host_path, format!("peer={}\n", peer.unwrap_or(""))).unwrap();
        let mut args = vec![
            "openstack",
            "server",
            "create",
            "--flavor",
            guest::FLAVOR,
            "--image",
            guest::IMAGE,
            "--user-data",
            &user_data,
        ];
        let nic = port.map(|p| format!("port-id={p}"));
        match &nic {
            Some(n) => args.extend(["--nic", n.as_str()]),
            None => args.extend(["--network", guest::NETWORK]),
        }
        if let Some(az) = az {
            args.extend(["--availability-zone", az]);
        }
        if wait {
            args.push("--wait");
        }
        args.push(name);
        self.exec(&args)
    }

    /// Wait until a server is ACTIVE (failing on ERROR); it as nova shows it.
    pub fn wait_active(&self, name: &str) -> Value {
        let started = std::time::Instant::now();
        loop {
            let s = self.json(&["openstack", "server", "show", name]);
            match s["status"].as_str() {
                Some("ACTIVE") => return s,
                Some("ERROR") => panic!("server {name} failed: {}", s["fault"]),
                _ => {}
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(300),
                "server {name} not ACTIVE within 300s: {s}"
            );
            std::thread::sleep(std::time::Duration::from_secs(3));
        }
    }

    /// Boot a guest without a peer, wait for it, and return it as nova
    /// shows it.
    pub fn create_server(&self, name: &str, az: Option<&str>) -> Value {
        self.boot_guest(name, az, None, None);
        self.wait_active(name)
    }

    /// Where a path inside a lab host is on this machine.
    pub fn host_path(&self, host: &str, path: &str) -> PathBuf {
        self.dir
            .join("hosts")
            .join(host)
            .join("rootfs")
            .join(path.trim_start_matches('/'))
    }

    /// What a guest reported on its serial console, boot by boot. Read
    /// from its host's disk, so it works while the host's WAN is cut.
    pub fn guest_boots(&self, host: &str, server_id: &str) -> Vec<GuestBoot> {
        let log = self.host_path(
            host,
            &format!("/var/lib/nova/instances/{server_id}/console.log"),
        );
        let text = std::fs::read(&log).unwrap_or_default();
        guest::parse_console(&String::from_utf8_lossy(&text))
    }

    /// Two real guests in zone `az` that check each other every round
    /// (ICMP, TCP to the other's port 7000, a DHCP exchange), ACTIVE.
    pub fn guest_pair(&self, prefix: &str, az: Option<&str>) -> Vec<Guest> {
        let names = [format!("{prefix}-a"), format!("{prefix}-b")];
        let ports: Vec<(String, String)> = names.iter().map(|n| self.port(n)).collect();
        self.boot_guest(&names[0], az, Some(&ports[0].0), Some(&ports[1].1));
        self.boot_guest(&names[1], az, Some(&ports[1].0), Some(&ports[0].1));
        names
            .iter()
            .zip(ports)
            .map(|(name, (_, ip))| {
                let s = self.wait_active(name);
                Guest {
                    name: name.clone(),
                    id: s["id"].as_str().unwrap().to_string(),
                    host: s["OS-EXT-SRV-ATTR:host"].as_str().unwrap().to_string(),
                    zone: s["OS-EXT-AZ:availability_zone"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                    ip,
                }
            })
            .collect()
    }

    /// Wait until the guest's latest boot got its address by DHCP, read
    /// its own uuid from the metadata service (TCP through the host's
    /// metadata agent), and finished a round with every check ok. Returns
    /// that boot; on timeout, fails with its console reports.
    pub fn wait_guest_working(&self, g: &Guest, limit: std::time::Duration) -> GuestBoot {
        let started = std::time::Instant::now();
        loop {
            let boots = self.guest_boots(&g.host, &g.id);
            if let Some(b) = boots.last()
                && guest_works(b, g)
            {
                return b.clone();
            }
            if started.elapsed() > limit {
                // What the host's data plane looked like, for the log.
                let diag = self.exec_on(&g.host, &["sh", "-c", "ovs-vsctl show; ovs-vsctl get bridge br-int datapath_type; ovs-ofctl dump-flows br-int | wc -l; ovs-appctl coverage/show | grep -i -E 'drop|csum|error'; tail -n 25 /var/log/openvswitch/ovs-vswitchd.log /var/log/ovn/ovn-controller.log"]);
                eprintln!(
                    "--- data plane of {}:\n{}{}",
                    g.host,
                    String::from_utf8_lossy(&diag.stdout),
                    String::from_utf8_lossy(&diag.stderr)
                );
                // The short form goes into the failure itself, which is
                // what a truncated log keeps.
                let ports = self.exec_on(
                    &g.host,
                    &[
                        "ovs-vsctl",
                        "--columns=name,ofport,error,external_ids",
                        "list",
                        "interface",
                    ],
                );
                panic!(
                    "guest {} on {} does not work within {}s; br-int created {} times; \
                     its interfaces:\n{}the ports ovn-controller claimed:\n{}\
                     the host's guests' consoles:\n{}its reports:\n{:#?}",
                    g.name,
                    g.host,
                    limit.as_secs(),
                    self.br_int_creations(&g.host),
                    String::from_utf8_lossy(&ports.stdout),
                    self.claims(&g.host),
                    self.console_tails(&g.host),
                    boots
                        .last()
                        .map(|b| b.events.iter().rev().take(12).collect::<Vec<_>>())
                );
            }
            std::thread::sleep(std::time::Duration::from_secs(3));
        }
    }

    /// The lines of `host`'s ovn-controller log that claim or release a
    /// port: whether a guest that is not on the network was ever bound.
    pub fn claims(&self, host: &str) -> String {
        let log = std::fs::read_to_string(self.host_path(host, "/var/log/ovn/ovn-controller.log"))
            .unwrap_or_default();
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| {
                l.contains("Claiming") || l.contains("Releasing") || l.contains("ovn-installed")
            })
            .collect();
        let start = lines.len().saturating_sub(20);
        lines[start..].iter().map(|l| format!("{l}\n")).collect()
    }

    /// The last lines of every guest console on `host`: a guest that
    /// fails its neighbour checks often fails because the neighbour never
    /// booted or never got its address, which only its own console shows.
    pub fn console_tails(&self, host: &str) -> String {
        let dir = self.host_path(host, "/var/lib/nova/instances");
        let mut out = String::new();
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(text) = std::fs::read(entry.path().join("console.log")) else {
                continue;
            };
            let text = String::from_utf8_lossy(&text);
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(8);
            out.push_str(&format!("{}:\n", entry.file_name().to_string_lossy()));
            for l in &lines[start..] {
                let cut: String = l.chars().take(200).collect();
                out.push_str(&format!("  {cut}\n"));
            }
        }
        out
    }

    /// How many times ovs-vswitchd has created `host`'s br-int (its log
    /// says so each time): once per start of ovs-vswitchd, and once more
    /// each time something switched the bridge's datapath type, which
    /// takes every guest on the host off the network.
    pub fn br_int_creations(&self, host: &str) -> usize {
        let log =
            std::fs::read_to_string(self.host_path(host, "/var/log/openvswitch/ovs-vswitchd.log"))
                .unwrap_or_default();
        log.matches("bridge br-int: added interface br-int on port")
            .count()
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

/// A real guest of [`Lab::guest_pair`].
#[derive(Debug, Clone)]
pub struct Guest {
    pub name: String,
    pub id: String,
    pub host: String,
    pub zone: String,
    pub ip: String,
}

/// Every check of a guest boot passed: address, metadata, a good round.
pub fn guest_works(b: &GuestBoot, g: &Guest) -> bool {
    let dhcp = b.event("dhcp").is_some_and(|e| e["ip"] == g.ip);
    let metadata = b.event("metadata").is_some_and(|e| e["uuid"] == g.id);
    let round = b.rounds().iter().any(|r| round_ok(r));
    dhcp && metadata && round
}

/// A round in which ICMP, TCP (each way's connection from this guest) and
/// the DHCP exchange all worked.
pub fn round_ok(r: &std::collections::BTreeMap<String, String>) -> bool {
    ["icmp", "tcp", "dhcp"]
        .iter()
        .all(|k| r.get(*k).map(String::as_str) == Some("ok"))
}

/// The round number of a round report.
pub fn round_no(r: &std::collections::BTreeMap<String, String>) -> u64 {
    r["round"].parse().unwrap()
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
