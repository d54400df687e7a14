//! Joins at the edge and what a node may do: refused joins change nothing
//! on the host, a good join converges when repeated and gets its site's
//! config, each node's credentials reach only its own things (no cloud
//! admin, no neighbour's chassis or queues, its MariaDB user over TLS on
//! its databases only), and removing a node kills every credential while
//! its neighbour keeps working.

use super::observe::{at_host, last_rounds, node_health, rounds_since, wait_for};
use super::operator::{export, hand_over, untouched};
use crate::common::{Guest, Lab};
use crate::day2;
use std::collections::BTreeMap;
use std::time::Duration;

/// Refused joins on the spare host edge3 change nothing: a wrong pin, the
/// control plane's own name, an expired bundle, an unreachable control
/// plane, a revoked site. Its bundle is for site edge1, which it joins
/// later as that site's second node; returns the CA pin.
pub fn refused_joins_change_nothing(lab: &Lab) -> String {
    let pin = export(
        lab,
        &[
            "--site",
            "edge1",
            "--max-uses",
            "1",
            "-o",
            "/root/edge3.tar.gz",
        ],
    );
    hand_over(lab, "cp", "edge3", "/root/edge3.tar.gz");
    // edge3's join with its bundle and `extra`, which must fail.
    let refused = |extra: &[&str]| {
        let mut args = vec!["dcn", "join", "/root/edge3.tar.gz", "--ca-pin", &pin];
        args.extend_from_slice(extra);
        lab.fails_on("edge3", &args)
    };
    let bad_pin = format!("sha256:{}", "0".repeat(64));
    let out = lab.fails_on(
        "edge3",
        &["dcn", "join", "/root/edge3.tar.gz", "--ca-pin", &bad_pin],
    );
    assert!(out.to_lowercase().contains("pin"), "{out}");
    untouched(lab, "edge3");
    // The site's token cannot join a host as the control plane itself.
    let out = refused(&["--hostname", "cp"]);
    assert!(
        out.contains("name-reserved") && out.contains("control plane's own host name"),
        "{out}"
    );
    untouched(lab, "edge3");

    export(
        lab,
        &["--site", "edge1", "--ttl", "1s", "-o", "/root/old.tar.gz"],
    );
    hand_over(lab, "cp", "edge3", "/root/old.tar.gz");
    std::thread::sleep(Duration::from_secs(2));
    let out = lab.fails_on(
        "edge3",
        &["dcn", "join", "/root/old.tar.gz", "--ca-pin", &pin],
    );
    assert!(out.contains("expired"), "{out}");
    untouched(lab, "edge3");

    assert!(lab.lab(&["link", "edge3", "down"]).status.success());
    let out = refused(&["--timeout", "20s"]);
    assert!(
        out.contains("did not answer within the join timeout"),
        "{out}"
    );
    untouched(lab, "edge3");
    assert!(lab.lab(&["link", "edge3", "up"]).status.success());

    export(lab, &["--site", "doomed", "-o", "/root/doomed.tar.gz"]);
    hand_over(lab, "cp", "edge3", "/root/doomed.tar.gz");
    lab.ok(&["dcn", "site", "revoke", "doomed"]);
    let out = lab.fails_on(
        "edge3",
        &["dcn", "join", "/root/doomed.tar.gz", "--ca-pin", &pin],
    );
    assert!(out.contains("revoked"), "{out}");
    untouched(lab, "edge3");
    pin
}

/// edge3's `dcn join` with its bundle for site edge1, packages from the
/// lab's repository.
fn joins_edge1(pin: &str) -> [&str; 7] {
    [
        "dcn",
        "join",
        "/root/edge3.tar.gz",
        "--ca-pin",
        pin,
        "--packages",
        "local:/srv/dcn-repo",
    ]
}

/// A good join of edge3 to site edge1, repeated (it converges); it gets
/// the site's config; its bundle cannot join a node of another site.
pub fn second_node_joins(lab: &Lab, pin: &str, outputs: &mut String) {
    let joined = lab.ok_on("edge3", &joins_edge1(pin));
    outputs.push_str(&joined);
    assert!(joined.contains("joined site edge1"), "{joined}");
    let again = lab.ok_on("edge3", &joins_edge1(pin));
    assert!(
        again.contains("is still a node of site edge1"),
        "a second join converges: {again}"
    );
    day2::new_node_gets_the_site_config(lab, "edge3");
    hand_over(lab, "cp", "edge2", "/root/edge3.tar.gz");
    let out = lab.fails_on(
        "edge2",
        &["dcn", "join", "/root/edge3.tar.gz", "--ca-pin", pin],
    );
    assert!(out.contains("is a node of site edge2"), "{out}");
}

/// Least privilege: each node's own credentials work, and its OVN
/// certificate changes its own chassis only, not a neighbour's; its
/// keystone user is no cloud admin; its MariaDB user is its own.
pub fn least_privilege(lab: &Lab) {
    for (host, other) in [("edge3", "edge1"), ("edge1", "edge2")] {
        let p = probe(lab, host, other);
        for cred in ["rabbit", "keystone", "token", "join", "ovn-own"] {
            assert_eq!(p[cred].0, "ok", "{host}'s {cred}: {p:?}");
        }
        assert!(
            p["ovn-other"].0 == "refused" && p["ovn-other"].1.contains("RBAC"),
            "{host} may not write {other}'s chassis: {p:?}"
        );
        assert_eq!(
            p["rabbit-other"].0, "refused",
            "{host} may not read or bind to {other}'s or the conductor's RPCs: {p:?}"
        );
        // Its keystone user is no cloud admin: it reads what nova-compute
        // needs, and nova, keystone and neutron refuse the rest.
        assert_eq!(p["placement"].0, "ok", "{host}'s service user: {p:?}");
        if host == "edge1" {
            // Its guests' ports, bound to it, binding details included.
            assert_eq!(p["ports"].0, "ok", "{host}'s service user: {p:?}");
        }
        for admin in ["all-servers", "user-create", "net-delete"] {
            assert_eq!(
                p[admin].0, "refused",
                "{host}'s service user: {admin}: {p:?}"
            );
        }
    }
    node_database_account(lab);
}

/// Removing edge3 kills each of its credentials; its site neighbour edge1
/// keeps working, guests included; after a reset the used token is
/// refused.
pub fn removal_revokes_everything(lab: &Lab, pin: &str, guests: &[Guest]) {
    let edge1_guests = at_host(guests, "edge1");
    let marks = last_rounds(lab, &edge1_guests);

    // Removing edge3 kills each of its credentials; its site neighbour
    // edge1 keeps working, guests included.
    lab.ok(&["dcn", "node", "remove", "edge3"]);
    let p = probe(lab, "edge3", "edge1");
    for cred in [
        "rabbit",
        "rabbit-other",
        "keystone",
        "token",
        "join",
        "ovn-own",
        "ovn-other",
    ] {
        assert_eq!(p[cred].0, "refused", "removed edge3's {cred}: {p:?}");
    }
    let conns = lab.ok(&[
        "rabbitmqctl",
        "list_connections",
        "--quiet",
        "--no-table-headers",
        "user",
    ]);
    assert!(
        !conns.contains("dcn-node-edge3"),
        "edge3's open connections were closed: {conns}"
    );
    let chassis = lab.ok(&["ovn-sbctl", "--columns=name", "list", "Chassis"]);
    assert!(!chassis.contains("edge3"), "{chassis}");
    wait_for(
        "edge1 is healthy after its neighbour was removed",
        Duration::from_secs(120),
        || node_health(lab)["edge1"] == ("placed".into(), "up".into(), "up".into()),
    );
    let p = probe(lab, "edge1", "edge2");
    for cred in ["rabbit", "keystone", "token", "join", "ovn-own"] {
        assert_eq!(p[cred].0, "ok", "edge1's {cred} after edge3 left: {p:?}");
    }
    for (name, (n, lost)) in rounds_since(lab, &edge1_guests, &marks) {
        assert!(
            n > 0 && lost.is_empty(),
            "{name} while its neighbour was removed: {n} rounds, lost {lost:?}"
        );
    }
    lab.ok_on("edge3", &["dcn", "reset", "--yes"]);
    let out = lab.fails_on("edge3", &joins_edge1(pin));
    assert!(out.contains("used"), "{out}");
}

/// A node's MariaDB user at the centre (a recipe's `databaseUser`
/// credential), made and removed by the join service's own code against
/// the control plane's MariaDB: it may log in over TLS only, holds
/// privileges on its databases only, survives being made twice, and is
/// gone once removed.
fn node_database_account(lab: &Lab) {
    use dcn::openstack::database::{ensure_user, remove_user};
    let files = dcn::host::Files::new("/", false);
    let state = dcn::lab::LabState::load(&files, &lab.dir).unwrap().unwrap();
    let init = state.host("cp").unwrap().init_pid.unwrap();
    let cp = dcn::host::Host::with_runner(
        "/",
        std::sync::Arc::new(dcn::lab::ContainerRunner::new(init)),
        false,
    );
    let user = "dcn-lab-db-edge9";
    let password = dcn::secrets::Secret::new("Lab0db0password0edge9");
    let databases = ["nova".to_string()];
    ensure_user(&cp, user, &password, &databases).unwrap();
    ensure_user(&cp, user, &password, &databases).unwrap();
    let sql = |q: &str| lab.ok(&["mysql", "--batch", "--skip-column-names", "-e", q]);
    assert_eq!(
        sql(&format!(
            "SELECT Host, ssl_type FROM mysql.user WHERE User='{user}'"
        ))
        .trim(),
        "%\tANY",
        "one user, for any address, over TLS only"
    );
    // Two grants: USAGE on everything (no privilege but logging in), and
    // every privilege on its own database. (The first holds the password's
    // hash: not shown.)
    let grants = sql(&format!("SHOW GRANTS FOR '{user}'@'%'"));
    let lines: Vec<&str> = grants.lines().collect();
    assert!(
        lines.len() == 2
            && lines[0].starts_with("GRANT USAGE ON *.* TO")
            && lines[1].starts_with("GRANT ALL PRIVILEGES ON `nova`.* TO"),
        "its own database only: {}",
        lines.get(1).unwrap_or(&"")
    );
    let plain = lab.exec(&[
        "mysql",
        "--protocol=TCP",
        "-h",
        "127.0.0.1",
        "--skip-ssl",
        "-u",
        user,
        "-pLab0db0password0edge9",
        "-e",
        "SELECT 1",
    ]);
    assert!(
        !plain.status.success(),
        "a node's database user cannot log in without TLS"
    );
    remove_user(&cp, user).unwrap();
    assert_eq!(
        sql(&format!(
            "SELECT COUNT(*) FROM mysql.user WHERE User='{user}'"
        ))
        .trim(),
        "0"
    );
    remove_user(&cp, user).unwrap();
}

/// Run tests/fixtures/lab/credential-probe.py on `host`: each of its
/// credentials tried from the host, `name -> (ok|refused|error, detail)`.
fn probe(lab: &Lab, host: &str, other_chassis: &str) -> BTreeMap<String, (String, String)> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/lab/credential-probe.py"
    );
    std::fs::copy(script, lab.host_path(host, "/root/credential-probe.py")).unwrap();
    let out = lab.ok_on(
        host,
        &[
            "python3",
            "/root/credential-probe.py",
            "10.240.0.10",
            other_chassis,
        ],
    );
    eprintln!("credentials of {host}:\n{out}");
    out.lines()
        .filter_map(|l| {
            let mut w = l.splitn(3, ' ');
            Some((
                w.next()?.to_string(),
                (w.next()?.to_string(), w.next().unwrap_or("").to_string()),
            ))
        })
        .collect()
}
