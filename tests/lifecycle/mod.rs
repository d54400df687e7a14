//! Living with the edge lab for years, in minutes (issue 23): its
//! certificates live four minutes (`dcn lab up --cert-lifetime 4m`), so
//! every one of them renews several times while the rest of the test
//! runs; an edge's certificate expires while its WAN link is cut and it
//! comes back by itself; the CA is rotated with one edge cut off the whole
//! time, which gets back with `dcn node trust-ca`; and the control plane is
//! backed up, destroyed, replaced by a blank host and restored, with every
//! edge re-attaching by itself. Throughout, the edges' guests keep their
//! rounds: what users get is checked from inside them.

use crate::common::{Guest, Lab};
use crate::edge_sites::observe::{
    agent_alive, compute_state, last_rounds, node_health, rounds_since, wait_for,
};
use crate::edge_sites::operator::{export, hand_over, untouched};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Where the backup and restore drill leaves its figures.
const REPORT: &str = "/var/tmp/dcn-lifecycle-report.json";

/// Each guest's last round at each step of a drill, so that a lost round
/// can be placed between two steps.
struct Steps<'a> {
    lab: &'a Lab,
    guests: &'a [Guest],
    started: Instant,
    at: Vec<(String, f64, BTreeMap<String, u64>)>,
}

impl<'a> Steps<'a> {
    fn new(lab: &'a Lab, guests: &'a [Guest]) -> Self {
        let mut s = Steps {
            lab,
            guests,
            started: Instant::now(),
            at: Vec::new(),
        };
        s.mark("start");
        s
    }

    fn mark(&mut self, step: &str) {
        let rounds = last_rounds(self.lab, self.guests)
            .into_iter()
            .map(|(g, (_, n))| (g, n))
            .collect();
        self.at.push((
            step.to_string(),
            self.started.elapsed().as_secs_f64(),
            rounds,
        ));
    }

    /// The steps, for a failure message.
    fn shown(&self) -> String {
        self.at
            .iter()
            .map(|(s, t, r)| format!("  {t:>6.0}s {s}: {r:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Whether the long drills run: the CA rotation and the control plane's
/// backup, replacement and restore (about 15 minutes). tests/run.sh asks
/// for them when their code changed (`DCN_LAB_LIFECYCLE=1`), as it runs
/// the image chain; certificate renewal is proven on every run.
pub fn long_drills() -> bool {
    std::env::var("DCN_LAB_LIFECYCLE").is_ok_and(|v| v == "1")
}

/// The lab's certificate lifetime (`dcn lab up --cert-lifetime`).
pub const LIFETIME: &str = "4m";
const LIFETIME_SECS: u64 = 240;

/// The control plane's certificates.
const LEAVES: [&str; 4] = ["api", "rabbitmq", "ovn-sb", "join"];

/// `(owner, name) -> serial` of `dcn cert list`.
fn serials(lab: &Lab) -> BTreeMap<(String, String), String> {
    let v: Value =
        serde_json::from_str(&lab.ok(&["dcn", "cert", "list", "--output", "json"])).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            ((s("owner"), s("name")), s("serial"))
        })
        .collect()
}

fn cert_rows(lab: &Lab) -> Vec<Value> {
    let v: Value =
        serde_json::from_str(&lab.ok(&["dcn", "cert", "list", "--output", "json"])).unwrap();
    v.as_array().unwrap().clone()
}

fn ca_status(lab: &Lab) -> Value {
    serde_json::from_str(&lab.ok(&["dcn", "ca", "status", "--output", "json"])).unwrap()
}

/// Every certificate of the control plane and of `edges` renews while the
/// edges' planes stay up and their guests lose no round.
pub fn renewal_without_a_blink(lab: &Lab, edges: &[&str], guests: &[Guest]) {
    let mut wanted: Vec<(String, String)> = LEAVES
        .iter()
        .map(|l| ("control plane".to_string(), l.to_string()))
        .collect();
    wanted.extend(edges.iter().map(|e| (e.to_string(), "node".to_string())));
    let start = serials(lab);
    let marks = last_rounds(lab, guests);
    let t = Instant::now();
    loop {
        let health = node_health(lab);
        for e in edges {
            assert_eq!(
                health[*e],
                ("placed".into(), "up".into(), "up".into()),
                "{e} while certificates renew: {health:?}"
            );
        }
        let now = serials(lab);
        let pending: Vec<&(String, String)> = wanted
            .iter()
            .filter(|k| now.get(*k) == start.get(*k))
            .collect();
        if pending.is_empty() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(LIFETIME_SECS + 60),
            "not renewed within a lifetime: {pending:?}"
        );
        std::thread::sleep(Duration::from_secs(10));
    }
    eprintln!(
        "every certificate of the control plane and of {} renewed within {:.0}s",
        edges.join(", "),
        t.elapsed().as_secs_f64()
    );
    for (name, (n, lost)) in rounds_since(lab, guests, &marks) {
        assert!(
            n > 0 && lost.is_empty(),
            "{name} while certificates renewed: {n} rounds, lost {lost:?}"
        );
    }
    // The renewed certificates are what the services present.
    let pem = lab.ok(&[
        "sh",
        "-c",
        "echo | openssl s_client -connect 10.240.0.10:5000 2>/dev/null | openssl x509 -noout -serial",
    ]);
    let presented = pem.trim().trim_start_matches("serial=").to_lowercase();
    let listed = serials(lab)[&("control plane".to_string(), "api".to_string())].clone();
    // The API's certificate may have renewed again in between; then it is
    // at most one further renewal away.
    if presented.trim_start_matches('0') != listed.trim_start_matches('0') {
        std::thread::sleep(Duration::from_secs(15));
        let again = lab.ok(&[
            "sh",
            "-c",
            "echo | openssl s_client -connect 10.240.0.10:5000 2>/dev/null | openssl x509 -noout -serial",
        ]);
        let listed = serials(lab)[&("control plane".to_string(), "api".to_string())].clone();
        assert_eq!(
            again
                .trim()
                .trim_start_matches("serial=")
                .to_lowercase()
                .trim_start_matches('0'),
            listed.trim_start_matches('0'),
            "haproxy presents the API certificate dcn lists"
        );
    }
}

/// Whether the centre's record of `host`'s certificate has expired.
pub fn node_cert_expired(lab: &Lab, host: &str) -> bool {
    cert_rows(lab)
        .iter()
        .any(|r| r["owner"] == host && r["name"] == "node" && r["state"] == "expired")
}

/// After a WAN cut that outlived `host`'s certificate: it renewed by
/// itself, and `dcn site status` says so.
pub fn renewed_after_the_cut(lab: &Lab, host: &str, site: &str) {
    let t = wait_for(
        &format!("{host} renews its expired certificate once its link is back"),
        Duration::from_secs(180),
        || {
            cert_rows(lab)
                .iter()
                .any(|r| r["owner"] == host && r["name"] == "node" && r["state"] == "ok")
        },
    );
    eprintln!(
        "{host}: its expired certificate renewed {:.0}s after the check began",
        t.as_secs_f64()
    );
    let status = lab.ok(&["dcn", "site", "status", site]);
    assert!(!status.contains("CERT expired"), "{status}");
}

/// The serials each certificate was seen with, sampled as the test goes
/// (journals do not survive the control plane's power cycle).
#[derive(Default)]
pub struct History(BTreeMap<(String, String), std::collections::BTreeSet<String>>);

impl History {
    pub fn sample(&mut self, lab: &Lab) {
        for (k, serial) in serials(lab) {
            self.0.entry(k).or_default().insert(serial);
        }
    }

    /// Each certificate of the control plane and of `edges` was seen
    /// renewed at least `times` times.
    pub fn renewed_at_least(&self, edges: &[&str], times: usize) {
        let mut wanted: Vec<(String, String)> = LEAVES
            .iter()
            .map(|l| ("control plane".to_string(), l.to_string()))
            .collect();
        wanted.extend(edges.iter().map(|e| (e.to_string(), "node".to_string())));
        for k in wanted {
            let seen = self.0.get(&k).map_or(0, |s| s.len());
            eprintln!("{} {}: {} serials seen", k.0, k.1, seen);
            assert!(
                seen > times,
                "{k:?} renewed {} times, not {times}",
                seen.saturating_sub(1)
            );
        }
    }
}

/// `dcn ca rotate` with `behind` cut off the whole time: the others move
/// to the new CA, `--finish` names `behind` and goes on with `--force`, a
/// bundle pinned to the old CA is refused (tried on `spare`, a blank
/// host), and `behind` gets back with `dcn node trust-ca` and the pin.
/// Returns the new CA's pin.
pub fn ca_rotation(lab: &Lab, moving: &str, behind: &str, spare: &str, guests: &[Guest]) -> String {
    let old_pin = ca_status(lab)["current"]["pin"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        export(
            lab,
            &["--site", moving, "-o", "/root/before-rotation.tar.gz"]
        ),
        old_pin
    );
    hand_over(lab, "cp", spare, "/root/before-rotation.tar.gz");
    let marks = last_rounds(lab, guests);
    let mut steps = Steps::new(lab, guests);
    assert!(lab.lab(&["link", behind, "down"]).status.success());
    steps.mark(&format!("{behind} cut off"));
    let t = Instant::now();

    let out = lab.ok(&["dcn", "ca", "rotate"]);
    eprintln!("{out}");
    steps.mark("rotate");
    let status = ca_status(lab);
    let new_pin = status["next"]["pin"].as_str().unwrap().to_string();
    assert_ne!(new_pin, old_pin);
    let moved = wait_for(
        &format!("{moving} trusts the new CA"),
        Duration::from_secs(180),
        || {
            ca_status(lab)["nodesMoved"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n == moving)
        },
    );
    eprintln!(
        "{moving} trusted the new CA {:.0}s after the rotation began",
        moved.as_secs_f64()
    );
    assert_eq!(ca_status(lab)["nodesNotMoved"], serde_json::json!([behind]));
    // New bundles pin the new CA from now on.
    assert_eq!(
        export(
            lab,
            &["--site", moving, "-o", "/root/during-rotation.tar.gz"]
        ),
        new_pin
    );

    let refused = lab.exec(&["dcn", "ca", "rotate", "--finish"]);
    let text = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && text.contains(behind) && text.contains("--force"),
        "{text}"
    );
    steps.mark(&format!("{moving} moved"));
    let out = lab.ok(&["dcn", "ca", "rotate", "--finish", "--force"]);
    steps.mark("finish --force");
    eprintln!("{out}");
    assert!(out.contains(behind) && out.contains("trust-ca"), "{out}");
    assert!(ca_status(lab)["next"].is_null());
    assert_eq!(ca_status(lab)["current"]["pin"], new_pin.as_str());
    // Every certificate of the control plane is the new CA's.
    let issuer = ca_status(lab)["current"]["subject"]
        .as_str()
        .unwrap()
        .to_string();
    for r in cert_rows(lab)
        .iter()
        .filter(|r| r["owner"] == "control plane" && r["name"] != "ca")
    {
        assert_eq!(r["issuer"], issuer.as_str(), "{r}");
    }
    wait_for(
        &format!("{moving} trusts the new CA alone"),
        Duration::from_secs(120),
        || {
            lab.ok_on(
                moving,
                &["grep", "-c", "BEGIN CERTIFICATE", "/etc/dcn/ca.crt"],
            )
            .trim()
                == "1"
        },
    );
    wait_for(
        &format!("{moving} is whole after the rotation"),
        Duration::from_secs(180),
        || node_health(lab)[moving] == ("placed".into(), "up".into(), "up".into()),
    );

    // A bundle pinned to the old CA is refused.
    let out = lab.fails_on(
        spare,
        &[
            "dcn",
            "join",
            "/root/before-rotation.tar.gz",
            "--ca-pin",
            &old_pin,
        ],
    );
    eprintln!("a bundle of the old CA: {out}");
    untouched(lab, spare);

    // The node left behind keeps the sessions it had (a short cut does not
    // end them), but can no longer make one: it trusts only the retired
    // CA. Its sync says so and names the documented way back.
    steps.mark(&format!("{moving} whole, old bundle refused"));
    assert!(lab.lab(&["link", behind, "up"]).status.success());
    steps.mark(&format!("{behind}'s link back"));
    // The link is up at once, but the first packets may still find no
    // route (the router's neighbour entry for the host went stale during
    // the cut): what is checked is the answer once it is reachable.
    let started = Instant::now();
    let out = loop {
        let out = lab.fails_on(behind, &["dcn", "node", "sync-config"]);
        let unreachable = out.contains("No route to host") || out.contains("Connection refused");
        if !unreachable || started.elapsed() > Duration::from_secs(60) {
            break out;
        }
        std::thread::sleep(Duration::from_secs(2));
    };
    assert!(
        out.contains("UnknownIssuer") && out.contains("dcn node trust-ca"),
        "{out}"
    );
    let out = lab.ok_on(behind, &["dcn", "node", "trust-ca", "--ca-pin", &new_pin]);
    eprintln!("{out}");
    lab.ok_on(behind, &["dcn", "node", "sync-config"]);
    steps.mark("trust-ca");
    // Every session from now on is made under the new CA: the southbound
    // drops them all; both edges come back.
    lab.ok(&[
        "ovn-appctl",
        "-t",
        "/var/run/ovn/ovnsb_db.ctl",
        "ovsdb-server/reconnect",
    ]);
    steps.mark("the southbound's sessions dropped");
    let back = wait_for(
        &format!("{moving} and {behind} back under the new CA"),
        Duration::from_secs(300),
        || {
            [moving, behind]
                .iter()
                .all(|h| compute_state(lab, h) == "up" && agent_alive(lab, h))
        },
    );
    eprintln!(
        "CA rotation: {:.0}s in all; {behind} back {:.0}s after `dcn node trust-ca`",
        t.elapsed().as_secs_f64(),
        back.as_secs_f64()
    );
    steps.mark("both edges back");
    for (name, (n, lost)) in rounds_since(lab, guests, &marks) {
        assert!(
            n > 0 && lost.is_empty(),
            "{name} through the CA rotation: {n} rounds, lost {lost:?}; each guest's last round at each step:\n{}",
            steps.shown()
        );
    }
    new_pin
}

/// `dcn backup`, the control plane destroyed and replaced by a blank host,
/// `dcn restore`: every edge comes back by itself, the guests lose no
/// round, the sites, servers and config revisions are there, a new server
/// at `site` works, and `spare` joins with a new bundle. What dcn printed
/// goes to `outputs` (checked for secrets).
pub fn backup_and_restore(
    lab: &Lab,
    pin: &str,
    site: &str,
    spare: &str,
    guests: &[Guest],
    outputs: &mut String,
) {
    let site_rows = |s: &str| -> Vec<(String, Value)> {
        let v: Value =
            serde_json::from_str(&lab.ok(&["dcn", "site", "status", s, "--output", "json"]))
                .unwrap();
        v["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["hostname"].as_str().unwrap().to_string(),
                    n["config"]["revision"].clone(),
                )
            })
            .collect()
    };
    let sites = ["edge1", "edge2"];
    let before: Vec<_> = sites.iter().map(|s| site_rows(s)).collect();
    let servers = |lab: &Lab| -> Vec<String> {
        lab.ok(&["openstack", "server", "list", "-f", "value", "-c", "Name"])
            .lines()
            .map(String::from)
            .collect()
    };
    let mut servers_before = servers(lab);
    servers_before.sort();
    // A second tenant network, made for the drill: neutron's database and
    // OVN's northbound must both bring it back.
    lab.ok(&["openstack", "network", "create", "backup-drill"]);
    lab.ok(&[
        "openstack",
        "subnet",
        "create",
        "--network",
        "backup-drill",
        "--subnet-range",
        "10.99.0.0/24",
        "backup-drill-v4",
    ]);
    let networks = |lab: &Lab| -> Vec<String> {
        let mut n: Vec<String> = lab
            .ok(&["openstack", "network", "list", "-f", "value", "-c", "Name"])
            .lines()
            .map(String::from)
            .collect();
        n.sort();
        n
    };
    let networks_before = networks(lab);
    // OVN's northbound holds a logical switch for each network.
    let switches = |lab: &Lab| {
        lab.ok(&["ovn-nbctl", "--timeout=20", "ls-list"])
            .lines()
            .count()
    };
    let switches_before = switches(lab);

    let t = Instant::now();
    let out = lab.ok(&[
        "dcn",
        "backup",
        "--output",
        "/root/cp-backup.tar.gz",
        "--with-images",
    ]);
    let backup_secs = t.elapsed().as_secs_f64();
    eprintln!("{out}");
    outputs.push_str(&out);
    let archive = lab.host_path("cp", "/root/cp-backup.tar.gz");
    let size = std::fs::metadata(&archive).unwrap().len();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&archive).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let kept = lab.dir.join("cp-backup.tar.gz");
    std::fs::copy(&archive, &kept).unwrap();
    lab.ok(&[
        "dcn",
        "backup",
        "verify",
        "/root/cp-backup.tar.gz",
        "--ca-pin",
        pin,
    ]);

    // The control plane's disk dies; a blank host takes its place.
    let marks = last_rounds(lab, guests);
    let mut steps = Steps::new(lab, guests);
    let outage = Instant::now();
    let replaced = lab.lab(&["replace", "cp"]);
    assert!(
        replaced.status.success(),
        "{}",
        String::from_utf8_lossy(&replaced.stderr)
    );
    assert!(
        !lab.exec(&["test", "-e", "/var/lib/dcn"]).status.success(),
        "the new cp is not blank"
    );
    steps.mark("cp replaced by a blank host");
    std::fs::copy(&kept, lab.host_path("cp", "/root/cp-backup.tar.gz")).unwrap();
    let t = Instant::now();
    let out = lab.ok(&[
        "dcn",
        "restore",
        "/root/cp-backup.tar.gz",
        "--ca-pin",
        pin,
        "--ignore-preflight-errors=disk-var",
    ]);
    let restore_secs = t.elapsed().as_secs_f64();
    steps.mark("restored");
    eprintln!("{out}");
    outputs.push_str(&out);
    let t = Instant::now();
    wait_for(
        "every edge whole after the restore",
        Duration::from_secs(600),
        || {
            let h = node_health(lab);
            sites
                .iter()
                .all(|s| h.get(*s) == Some(&("placed".into(), "up".into(), "up".into())))
        },
    );
    let (edges_back, outage_secs) = (t.elapsed().as_secs_f64(), outage.elapsed().as_secs_f64());
    eprintln!(
        "backup {backup_secs:.0}s, {:.1} MiB; restore {restore_secs:.0}s; every edge back {edges_back:.0}s after the restore ({outage_secs:.0}s after the control plane went)",
        size as f64 / (1 << 20) as f64,
    );
    // Kept beside the deploy test's report, for the docs' figures.
    let report = serde_json::json!({
        "backupSeconds": backup_secs,
        "backupBytes": size,
        "restoreSeconds": restore_secs,
        "edgesBackAfterRestoreSeconds": edges_back,
        "controlPlaneOutageSeconds": outage_secs,
    });
    std::fs::write(
        REPORT,
        serde_json::to_string_pretty(&report).expect("a JSON value prints"),
    )
    .unwrap_or_else(|e| panic!("writing {REPORT}: {e}"));
    steps.mark("every edge whole");
    for (name, (n, lost)) in rounds_since(lab, guests, &marks) {
        assert!(
            n > 0 && lost.is_empty(),
            "{name} through the control plane's replacement: {n} rounds, lost {lost:?}; each guest's last round at each step:\n{}",
            steps.shown()
        );
    }
    let after: Vec<_> = sites.iter().map(|s| site_rows(s)).collect();
    assert_eq!(after, before, "the sites' nodes and config revisions");
    let mut servers_after = servers(lab);
    servers_after.sort();
    assert_eq!(servers_after, servers_before);
    assert_eq!(networks(lab), networks_before, "the networks");
    assert_eq!(switches(lab), switches_before, "OVN's logical switches");

    // A new server at the site works: DHCP, metadata, TCP to its pair.
    for g in lab.guest_pair("restored", Some(site)) {
        assert_eq!(g.zone, site);
        lab.wait_guest_working(&g, Duration::from_secs(300));
    }
    // A spare host joins with a new bundle.
    let pin_now = export(
        lab,
        &[
            "--site",
            site,
            "--max-uses",
            "1",
            "-o",
            "/root/after-restore.tar.gz",
        ],
    );
    assert_eq!(pin_now, pin);
    hand_over(lab, "cp", spare, "/root/after-restore.tar.gz");
    let joined = lab.ok_on(
        spare,
        &[
            "dcn",
            "join",
            "/root/after-restore.tar.gz",
            "--ca-pin",
            pin,
            "--packages",
            "local:/srv/dcn-repo",
        ],
    );
    outputs.push_str(&joined);
    assert!(joined.contains(&format!("joined site {site}")), "{joined}");
    wait_for(&format!("{spare} placed"), Duration::from_secs(300), || {
        node_health(lab).get(spare) == Some(&("placed".into(), "up".into(), "up".into()))
    });
}
