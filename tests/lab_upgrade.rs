//! Upgrades for real (issue 26): the control plane with `dcn upgrade`,
//! then its edge sites with `dcn site upgrade`, in one lab whose hosts
//! own their dcn (`--copy-dcn`): cp and three edge sites of one host each,
//! and pairs of real guests on cp, edge1 and edge2 that check DHCP, ICMP
//! and TCP with each other every round (each pair on one host: between
//! hosts, the userspace datapath carries no guest traffic,
//! docs/edge-workloads.md).
//!
//! 1. Debian's updates of the base system on the control plane (`dcn
//!    upgrade` with this dcn): the lab's root filesystem is debootstrap's
//!    release, the repository has the point and security updates.
//! 2. A newer dcn — this tree with its version bumped and one more key in
//!    nova-compute's drop-in, built by cargo — and newer packages —
//!    memcached and haproxy rebuilt as `+dcn1` and published. The plan
//!    shows them and changes nothing; an upgrade killed after its
//!    packages step is still planned; the upgrade restarts only what
//!    changed and keeps the guests; a second run finds nothing; the old
//!    dcn refuses the upgraded host.
//! 3. The window: edge3, still on this dcn, takes a site config revision
//!    and reports a join's progress to the upgraded control plane.
//! 4. `dcn site upgrade edge1 edge2 --canary edge1 --batch 1`: every node
//!    ends on the newer dcn, the new haproxy and Debian's updates, its
//!    guests keep their qemu processes and their rounds, `dcn site status`
//!    shows each phase, and a re-run finds nothing to do.
//! 5. A failure: haproxy `+dcn2`, whose postinst fails on edge2, published
//!    with the control plane upgraded to it. The canary takes it, edge2
//!    fails with its reason and dpkg's words at the centre, edge3 is
//!    untouched. Then the fix, `+dcn3`: a re-run resumes and finishes.
//! 6. `dcn site cache-image edge3 dcn-guest` over an 8 Mbit/s link: a
//!    copy of the guest that is not cached brings its images across the
//!    link; the cached one boots with next to nothing crossing it, and
//!    sooner.
//!
//! It needs root, cargo and half an hour: `#[ignore]`d, run by
//! tests/run.sh.

mod common;
mod upgrade;

use common::*;
use serde_json::Value;
use std::time::{Duration, Instant};
use upgrade::*;

const THIS: &str = env!("CARGO_PKG_VERSION");

#[test]
#[ignore = "needs root, cargo and the lab (half an hour): tests/run.sh runs it with --ignored"]
fn the_control_plane_then_its_sites_upgrade_to_a_newer_dcn_and_newer_packages() {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("dcn-lab-upgrade-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let started = Instant::now();
    let newer_version = bumped(THIS);
    let newer = build_newer_dcn(work.path(), &newer_version);
    eprintln!(
        "--- the newer dcn built in {}s",
        started.elapsed().as_secs()
    );
    let lab = Lab::up(&work.path().join("lab"), &["--edges", "3", "--copy-dcn"]);
    let cp_guests = lab.guest_pair("up", None);
    let mut edge_guests = lab.guest_pair("e1", Some("edge1"));
    edge_guests.extend(lab.guest_pair("e2", Some("edge2")));
    for g in cp_guests.iter().chain(&edge_guests) {
        lab.wait_guest_working(g, Duration::from_secs(600));
    }
    std::fs::copy(&newer, lab.host_path("cp", "/root/dcn-new")).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_dcn"),
        lab.host_path("cp", "/root/dcn-old"),
    )
    .unwrap();

    let t = Instant::now();
    control_plane(&lab, work.path(), &newer_version);
    eprintln!(
        "--- the control plane's upgrades took {}s",
        t.elapsed().as_secs()
    );
    let t = Instant::now();
    old_edges_keep_working(&lab);
    eprintln!("--- the window's checks took {}s", t.elapsed().as_secs());
    let t = Instant::now();
    sites(&lab, &newer_version, &edge_guests);
    eprintln!("--- the site upgrade took {}s", t.elapsed().as_secs());
    let t = Instant::now();
    failure_then_fix(&lab, work.path(), &newer_version);
    eprintln!(
        "--- the failure and its fix took {}s",
        t.elapsed().as_secs()
    );
    let t = Instant::now();
    cached_images(&lab);
    eprintln!("--- the image cache took {}s", t.elapsed().as_secs());
    for g in cp_guests.iter().chain(&edge_guests) {
        good_round_from_now(&lab, g);
    }
    eprintln!("--- in all {}s", started.elapsed().as_secs());
}

/// The rounds of a guest's latest boot.
fn rounds(lab: &Lab, g: &Guest) -> Vec<std::collections::BTreeMap<String, String>> {
    let boots = lab.guest_boots(&g.host, &g.id);
    let last = boots.last().expect("the guest booted");
    last.rounds().into_iter().cloned().collect()
}

/// Wait for a round of `g` after now with every check ok; the rounds
/// before it that were not.
fn good_round_from_now(lab: &Lab, g: &Guest) -> usize {
    let seen = rounds(lab, g).len();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let r = rounds(lab, g);
        if r.len() > seen && r[seen..].iter().any(round_ok) {
            return r.iter().filter(|r| !round_ok(r)).count();
        }
        if Instant::now() >= deadline {
            let new: Vec<_> = r[seen..].iter().collect();
            panic!(
                "{} on {} has no good round in 5 minutes: {} round(s) since, {:?}; \
                 the host's guests' consoles:\n{}",
                g.name,
                g.host,
                new.len(),
                new,
                lab.console_tails(&g.host)
            );
        }
        std::thread::sleep(Duration::from_secs(5));
    }
}

/// Part 1 and 2: the control plane.
fn control_plane(lab: &Lab, work: &std::path::Path, newer_version: &str) {
    let release = |lab: &Lab| lab.ok(&["cat", "/var/lib/dcn/release.json"]);
    assert!(release(lab).contains(THIS));
    let qemu_before = qemu_pids(lab, "cp");
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

    // 2. Newer packages and a newer dcn.
    let (memcached, memcached_version) = rebuilt(lab, work, "memcached", "dcn1", None);
    let (haproxy, haproxy_version) = rebuilt(lab, work, "haproxy", "dcn1", None);
    publish(lab, &[&memcached, &haproxy]);
    let old_memcached = installed_version(lab, "cp", "memcached");
    let dropin = "/etc/nova/nova-compute.conf.d/10-dcn.conf";
    let plan = lab.ok(&["/root/dcn-new", "upgrade", "--plan"]);
    eprintln!("--- plan of the newer dcn:\n{plan}");
    for want in [
        format!("dcn: {THIS} → {newer_version}"),
        format!("memcached {old_memcached} → {memcached_version}"),
        format!(
            "haproxy {} → {haproxy_version}",
            haproxy_version.trim_end_matches("+dcn1")
        ),
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
    assert_eq!(
        installed_version(lab, "cp", "memcached"),
        old_memcached,
        "the plan changed nothing"
    );
    assert!(!lab.ok(&["cat", dropin]).contains(NEW_KEY));

    // As an upgrade killed right after its packages step leaves it.
    lab.ok(&[
        "sh",
        "-c",
        "printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d \
         && apt-get -q update -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/dcn-local.list -o Dir::Etc::sourceparts=- \
         && DEBIAN_FRONTEND=noninteractive apt-get -q -y install memcached \
            -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/dcn-local.list -o Dir::Etc::sourceparts=-; \
         rc=$?; rm -f /usr/sbin/policy-rc.d; exit $rc",
    ]);
    assert_eq!(installed_version(lab, "cp", "memcached"), memcached_version);
    let plan = lab.ok(&["/root/dcn-new", "upgrade", "--plan"]);
    assert!(
        plan.contains("restart memcached.service: memcached installed after it started"),
        "a stopped upgrade's restart is still planned:\n{plan}"
    );

    let restarts = [
        ("memcached", true),
        ("nova-compute", true),
        ("dcn-join", true),
        // haproxy runs the API proxy and the metadata agent's proxies.
        ("dcn-api-proxy", true),
        ("neutron-ovn-metadata-agent", true),
        ("mariadb", false),
        ("rabbitmq-server", false),
        ("keystone", false),
        ("nova-conductor", false),
        ("neutron-server", false),
        ("ovn-controller", false),
        ("libvirtd", false),
    ];
    let units: Vec<&str> = restarts.iter().map(|(u, _)| *u).collect();
    let before = main_pids(lab, "cp", &units);
    let applied = lab.ok(&[
        "/root/dcn-new",
        "upgrade",
        "--ignore-preflight-errors",
        "disk-var",
    ]);
    eprintln!("--- applied:\n{applied}");
    let after = main_pids(lab, "cp", &units);
    for (unit, restarted) in restarts {
        assert_eq!(
            before[unit] != after[unit],
            restarted,
            "{unit}: PID {} before, {} after (restart expected: {restarted})\n{applied}",
            before[unit],
            after[unit]
        );
        assert_ne!(after[unit], "0", "{unit} runs after the upgrade");
    }
    assert!(lab.ok(&["cat", dropin]).contains(NEW_KEY));
    assert!(release(lab).contains(newer_version));
    assert!(
        lab.ok(&["dcn", "--version"]).contains(newer_version),
        "the new dcn installed itself"
    );
    assert!(lab.ok(&["dcn", "status"]).contains("all services are up"));
    let service = lab.compute_service("cp").expect("nova lists cp's compute");
    assert_eq!(service["State"], "up", "{service}");
    assert_eq!(
        qemu_pids(lab, "cp"),
        qemu_before,
        "the guests' qemu processes"
    );
    assert!(
        lab.ok(&["dcn", "upgrade", "--plan"])
            .contains("Nothing to upgrade")
    );
    let refused = lab.fails_on("cp", &["/root/dcn-old", "upgrade", "--plan"]);
    assert!(
        refused.contains(&format!("set up by dcn {newer_version}"))
            && refused.contains(&format!("this dcn is {THIS}")),
        "{refused}"
    );
    let refused = lab.fails_on("cp", &["/root/dcn-old", "standalone", "init"]);
    assert!(
        refused.contains("a downgrade is not supported"),
        "{refused}"
    );
}

/// `dcn site status SITE --output json`'s entry of `node`.
fn status_of(lab: &Lab, site: &str, node: &str) -> Value {
    let v: Value =
        serde_json::from_str(&lab.ok(&["dcn", "site", "status", site, "--output", "json"]))
            .unwrap();
    v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["hostname"] == node)
        .cloned()
        .unwrap_or_else(|| panic!("{node} is not in site {site}: {v}"))
}

/// Part 3: an edge on this (now older) dcn goes on with the upgraded
/// control plane: it applies a site config revision and reports it, and
/// a join run again reports its progress.
fn old_edges_keep_working(lab: &Lab) {
    assert!(lab.ok_on("edge3", &["dcn", "--version"]).contains(THIS));
    std::fs::write(
        lab.host_path("cp", "/root/edge3-config.yaml"),
        "apiVersion: dcn/v1alpha1\nkind: SiteConfig\nsite: edge3\nservices:\n  novaCompute:\n    customServiceConfig: |\n      [DEFAULT]\n      debug = true\n",
    )
    .unwrap();
    lab.ok(&[
        "dcn",
        "site",
        "config",
        "edge3",
        "--file",
        "/root/edge3-config.yaml",
    ]);
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let s = status_of(lab, "edge3", "edge3");
        if s["config"]["revision"] == 1 && s["config"]["error"].is_null() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "edge3 did not apply revision 1: {s:#}"
        );
        std::thread::sleep(Duration::from_secs(5));
    }
    let before = status_of(lab, "edge3", "edge3")["history"]
        .as_array()
        .unwrap()
        .len();
    let pin = lab
        .ok(&["dcn", "ca", "status"])
        .lines()
        .find_map(|l| {
            let at = l.find("sha256:")?;
            Some(
                l[at..]
                    .chars()
                    .take("sha256:".len() + 64)
                    .collect::<String>(),
            )
        })
        .expect("dcn ca status prints the pin");
    lab.ok_on(
        "edge3",
        &[
            "dcn",
            "join",
            "/root/edge3.tar.gz",
            "--ca-pin",
            &pin,
            "--packages",
            "local:/srv/dcn-repo",
            "--ignore-preflight-errors=disk-var",
        ],
    );
    let s = status_of(lab, "edge3", "edge3");
    let history = s["history"].as_array().unwrap();
    assert!(
        history.len() > before && history.iter().any(|e| e["phase"] == "join-started"),
        "edge3's join reported its progress to the upgraded control plane: {s:#}"
    );
}

/// Part 4: edge1 and edge2 to the newer dcn and packages.
fn sites(lab: &Lab, newer_version: &str, guests: &[Guest]) {
    let plan = lab.ok(&[
        "dcn", "site", "upgrade", "edge1", "edge2", "--canary", "edge1", "--plan",
    ]);
    eprintln!("--- site upgrade plan:\n{plan}");
    assert!(plan.contains(&format!("(dcn {newer_version}")), "{plan}");
    assert!(
        plan.contains("canary edge1") && plan.contains("Plan only"),
        "{plan}"
    );
    let qemu: Vec<Vec<String>> = ["edge1", "edge2"]
        .iter()
        .map(|h| qemu_pids(lab, h))
        .collect();
    let failed_before: Vec<usize> = guests
        .iter()
        .map(|g| rounds(lab, g).iter().filter(|r| !round_ok(r)).count())
        .collect();
    let rounds_before: Vec<usize> = guests.iter().map(|g| rounds(lab, g).len()).collect();
    let out = lab.exec(&[
        "dcn", "site", "upgrade", "edge1", "edge2", "--canary", "edge1", "--batch", "1",
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("--- site upgrade:\n{text}");
    assert!(out.status.success(), "the site upgrade failed:\n{text}");
    let canary = text
        .find("edge1: upgraded")
        .expect("the canary was upgraded");
    let second = text.find("edge2: its turn").expect("edge2 had its turn");
    assert!(canary < second, "the canary went first, alone:\n{text}");
    for (i, host) in ["edge1", "edge2"].iter().enumerate() {
        assert!(
            lab.ok_on(host, &["dcn", "--version"])
                .contains(newer_version),
            "{host}'s dcn"
        );
        assert!(
            installed_version(lab, host, "haproxy").ends_with("+dcn1"),
            "{host}'s haproxy"
        );
        assert!(
            lab.ok_on(host, &["cat", "/etc/nova/nova-compute.conf.d/10-dcn.conf"])
                .contains(NEW_KEY)
        );
        assert_eq!(
            qemu_pids(lab, host),
            qemu[i],
            "{host}'s guests keep their qemu processes"
        );
        let s = status_of(lab, host, host);
        assert_eq!(s["upgrade"]["phase"], "upgraded", "{s:#}");
        eprintln!(
            "{host}: restarted {}; changes {}",
            s["upgrade"]["restarted"], s["upgrade"]["changes"]
        );
    }
    assert!(
        lab.ok_on("edge3", &["dcn", "--version"]).contains(THIS),
        "edge3 is not part of it"
    );
    // Debian's library updates restart Open vSwitch and ovn-controller on
    // each node (docs/upgrades.md): a guest may miss at most the one round
    // that falls into that restart, and none beyond it.
    for ((g, before), seen) in guests.iter().zip(failed_before).zip(rounds_before) {
        let failed = good_round_from_now(lab, g) - before;
        let all = rounds(lab, g);
        let missed: Vec<_> = all[seen..].iter().filter(|r| !round_ok(r)).collect();
        eprintln!(
            "{}: {failed} of {} round(s) not fully ok during the site upgrade: {missed:?}",
            g.name,
            all.len() - seen
        );
        assert!(
            failed <= 1,
            "{}: {failed} rounds missed: {missed:?}",
            g.name
        );
    }
    let t = Instant::now();
    let again = lab.ok(&["dcn", "site", "upgrade", "edge1", "edge2"]);
    assert!(
        again.contains("runs the release") && !again.contains("its turn"),
        "{again}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "a re-run finds nothing to do"
    );
}

/// Part 5: a package that fails on edge2, then its fix.
fn failure_then_fix(lab: &Lab, work: &std::path::Path, newer_version: &str) {
    let (bad, bad_version) = rebuilt(lab, work, "haproxy", "dcn2", Some("edge2"));
    publish(lab, &[&bad]);
    lab.ok(&["dcn", "upgrade", "--ignore-preflight-errors", "disk-var"]);
    assert_eq!(
        installed_version(lab, "cp", "haproxy"),
        bad_version,
        "it fails only on edge2"
    );
    let edge3_haproxy = installed_version(lab, "edge3", "haproxy");
    let args = [
        "dcn", "site", "upgrade", "edge1", "edge2", "edge3", "--canary", "edge1", "--batch", "1",
    ];
    let out = lab.exec(&args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("--- site upgrade with a failing package:\n{text}");
    assert!(
        !out.status.success(),
        "a failed node fails the run:\n{text}"
    );
    assert!(
        text.contains("edge2: FAILED") && text.contains("run the same command again"),
        "{text}"
    );
    assert_eq!(
        installed_version(lab, "edge1", "haproxy"),
        bad_version,
        "the canary took it"
    );
    let s = status_of(lab, "edge2", "edge2");
    assert_eq!(s["upgrade"]["phase"], "failed", "{s:#}");
    let log = s["upgrade"]["log"].to_string();
    assert!(
        log.contains("haproxy postinst: refusing to configure on edge2"),
        "dpkg's words at the centre: {s:#}"
    );
    assert!(
        lab.ok(&["dcn", "site", "status", "edge2"])
            .contains("edge2: upgrade to"),
        "site status says why"
    );
    assert_eq!(
        installed_version(lab, "edge3", "haproxy"),
        edge3_haproxy,
        "edge3 untouched"
    );
    assert!(
        lab.ok_on("edge3", &["dcn", "--version"]).contains(THIS),
        "edge3 untouched"
    );
    assert_eq!(
        status_of(lab, "edge3", "edge3")["upgrade"]["phase"],
        "staged",
        "edge3 only staged"
    );

    let (good, good_version) = rebuilt(lab, work, "haproxy", "dcn3", None);
    publish(lab, &[&good]);
    lab.ok(&["dcn", "upgrade", "--ignore-preflight-errors", "disk-var"]);
    let out = lab.exec(&args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("--- the re-run after the fix:\n{text}");
    assert!(out.status.success(), "{text}");
    for host in ["edge1", "edge2", "edge3"] {
        assert_eq!(
            installed_version(lab, host, "haproxy"),
            good_version,
            "{host}"
        );
        assert!(
            lab.ok_on(host, &["dcn", "--version"])
                .contains(newer_version),
            "{host}"
        );
        assert_eq!(status_of(lab, host, host)["upgrade"]["phase"], "upgraded");
        let audit = lab.ok_on(host, &["dpkg", "--audit"]);
        assert!(
            audit.trim().is_empty(),
            "{host}'s packages are all configured: {audit}"
        );
    }
}

/// Part 6: the image cache, over a WAN link of 8 Mbit/s.
fn cached_images(lab: &Lab) {
    // A copy of the guest (its own kernel, ramdisk and disk) that no node
    // cached: what a first server at a site costs its link.
    lab.ok(&[
        "sh",
        "-c",
        "set -e; cd /tmp; export OS_CLOUD=dcn; \
         openstack image save --file k dcn-guest-kernel; openstack image save --file r dcn-guest-initrd; \
         openstack image save --file d dcn-guest; \
         K=$(openstack image create --disk-format aki --container-format aki --public --file k -f value -c id dcn-guest-copy-kernel); \
         R=$(openstack image create --disk-format ari --container-format ari --public --file r -f value -c id dcn-guest-copy-initrd); \
         openstack image create --disk-format raw --container-format bare --public --file d \
            --property kernel_id=$K --property ramdisk_id=$R --property 'os_command_line=console=ttyS0 quiet' dcn-guest-copy",
    ]);
    let out = lab.lab(&["link", "edge3", "up", "--rate", "8mbit"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let boot = |image: &str, name: &str| -> (u64, f64) {
        let (bytes, t) = (link_bytes("edge3"), Instant::now());
        lab.ok(&[
            "openstack",
            "server",
            "create",
            "--flavor",
            guest::FLAVOR,
            "--image",
            image,
            "--network",
            guest::NETWORK,
            "--availability-zone",
            "edge3",
            "--wait",
            name,
        ]);
        (link_bytes("edge3") - bytes, t.elapsed().as_secs_f64())
    };
    let (uncached_bytes, uncached_secs) = boot("dcn-guest-copy", "uncached");
    let cached = lab.ok(&[
        "dcn",
        "site",
        "cache-image",
        "edge3",
        "dcn-guest",
        "--timeout",
        "10m",
    ]);
    eprintln!("--- cache-image:\n{cached}");
    assert!(cached.contains("3 of 3"), "{cached}");
    let (cached_bytes, cached_secs) = boot("dcn-guest", "cached");
    eprintln!(
        "--- first server at edge3: uncached {uncached_bytes} bytes over its link in {uncached_secs:.1}s, cached {cached_bytes} bytes in {cached_secs:.1}s"
    );
    assert!(
        uncached_bytes > 10_000_000,
        "the uncached images crossed the link"
    );
    assert!(
        cached_bytes < 2_000_000,
        "the cached images did not cross it: {cached_bytes} bytes"
    );
    assert!(cached_secs < uncached_secs, "a cached image boots sooner");
    let out = lab.lab(&["link", "edge3", "up", "--rate", "off"]);
    assert!(out.status.success());
    lab.ok(&[
        "openstack",
        "server",
        "delete",
        "--wait",
        "uncached",
        "cached",
    ]);
}
