use super::*;
use crate::centre::sites::Site;
use crate::centre::sites::progress::SILENT_AFTER;
use crate::timefmt::rfc3339;
use std::time::Duration;

#[test]
fn site_status_shows_silent_and_failed_hosts_and_joined_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let files = Files::new(dir.path(), false);
    let reg = Registry::new(&files);
    let now = SystemTime::now();
    for site in ["edge1", "edge2"] {
        reg.save_site(&Site {
            name: site.into(),
            created_at: rfc3339(now),
            aggregate_id: Some(1),
            revoked_at: None,
        })
        .unwrap();
    }
    let store = ProgressStore::new(&files);
    let lock = reg.lock().unwrap();
    let long_ago = now - SILENT_AFTER - Duration::from_secs(60);
    let mut quiet = ProgressRecord::new("edge1-n1", "edge1");
    quiet.apply(
        Phase::InstallerStarted,
        Some("copying the OS"),
        &[],
        long_ago,
    );
    store.save(&lock, &quiet).unwrap();
    let mut bad = ProgressRecord::new("edge1-n2", "edge1");
    bad.apply(Phase::JoinStarted, None, &[], now);
    bad.apply(
        Phase::Failed,
        Some("preflight found problems:\x1b[2J no KVM"),
        &["line one".into(), "\x1b]0;x\x07line two".into()],
        now,
    );
    store.save(&lock, &bad).unwrap();
    let mut busy = ProgressRecord::new("edge1-n3", "edge1");
    busy.apply(Phase::JoinStep, Some("preflight"), &[], now);
    store.save(&lock, &busy).unwrap();
    let mut elsewhere = ProgressRecord::new("edge2-n1", "edge2");
    elsewhere.apply(Phase::FirstBoot, None, &[], now);
    store.save(&lock, &elsewhere).unwrap();
    drop(lock);
    let joined =
        |hostname: &str, config: Option<(u64, Option<&str>)>| crate::centre::sites::NodeRecord {
            hostname: hostname.into(),
            site: "edge1".into(),
            address: "10.0.0.9".into(),
            joined_at: rfc3339(now),
            secret_hash: String::new(),
            state: crate::centre::sites::NodeState::Placed,
            placed_at: Some(rfc3339(now)),
            key_pin: None,
            southbound_ca: None,
            previous_southbound_cas: vec![],
            certificate: None,
            trusted_cas: vec![],
            config: config.map(|(revision, error)| {
                Box::new(crate::centre::sites::AppliedConfig {
                    revision,
                    reported_at: rfc3339(now),
                    error: error.map(String::from),
                })
            }),
        };
    reg.save_node(&joined("edge1-old", Some((1, None))))
        .unwrap();
    reg.save_node(&joined("edge1-cur", Some((2, None))))
        .unwrap();
    reg.save_node(&joined("edge1-sad", Some((1, Some("bad\x1b[2J ini")))))
        .unwrap();
    reg.save_site_config(&crate::centre::sites::site_config::Revision {
        revision: 2,
        updated_at: rfc3339(now),
        config: crate::config::SiteConfig::empty("edge1".parse().unwrap()),
    })
    .unwrap();

    let status = site_status(&files, "edge1", now).unwrap();
    let names: Vec<_> = status.nodes.iter().map(|n| n.hostname.as_str()).collect();
    assert_eq!(
        names,
        [
            "edge1-cur",
            "edge1-n1",
            "edge1-n2",
            "edge1-n3",
            "edge1-old",
            "edge1-sad"
        ]
    );
    let text = status.to_string();
    let row = |host: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{host} ")))
            .unwrap_or_else(|| panic!("no row for {host}: {text}"))
            .to_string()
    };
    assert!(text.starts_with("NODE "), "{text}");
    assert!(
        row("edge1-n1").contains("silent (last: installer-started)"),
        "{text}"
    );
    assert!(row("edge1-n1").contains("11m ago"), "{text}");
    assert!(row("edge1-n2").contains("failed"), "{text}");
    assert!(
        row("edge1-n2").contains("preflight found problems:\\u{1b}[2J no KVM"),
        "{text}"
    );
    assert!(row("edge1-n3").contains("join-step"), "{text}");
    assert!(row("edge1-old").contains("placed"), "{text}");
    // Who runs which revision of the site's config (now 2).
    let config = |host: &str| row(host).split_whitespace().nth(5).unwrap().to_string();
    assert!(row("edge1-old").contains(" 1 of 2 "), "{text}");
    assert_eq!(config("edge1-cur"), "2", "{text}");
    assert!(row("edge1-sad").contains(" 1 (failed) "), "{text}");
    assert!(row("edge1-n1").contains(" - "), "{text}");
    assert!(text.contains("Site config: revision 2"), "{text}");
    assert!(
        text.contains("edge1-sad did not apply the site config at "),
        "{text}"
    );
    assert!(
        text.contains("edge1-n2 failed in join-started at ")
            && text.contains("\n    line one\n    \\u{1b}]0;x\\u{7}line two\n"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "nothing a node sent reaches the terminal raw"
    );
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["configRevision"], 2);
    assert_eq!(json["nodes"][0]["config"]["revision"], 2);
    assert_eq!(json["nodes"][1]["silent"], true);
    assert_eq!(json["nodes"][1]["phase"], "installer-started");
    assert_eq!(json["nodes"][2]["lastError"]["log"][0], "line one");

    let err = site_status(&files, "nope", now).unwrap_err();
    assert!(format!("{err}").contains("dcn site list"), "{err}");
    let empty = site_status(&files, "edge2", now).unwrap();
    assert_eq!(empty.nodes.len(), 1);
}

#[test]
fn a_finished_node_with_a_plane_down_is_flagged_with_where_to_look() {
    use crate::openstack::PlaneState;
    let mut r = ProgressRecord::new("edge1-n1", "edge1");
    r.apply(Phase::JoinFinished, None, &[], SystemTime::UNIX_EPOCH);
    r.apply(Phase::Placed, None, &[], SystemTime::UNIX_EPOCH);
    let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(60);
    let down = Planes {
        compute: PlaneState::Up,
        network: PlaneState::Down,
    };
    let p = NodePhase::from_record(&r, now).with_planes(down);
    assert_eq!(p.shown, "placed, NETWORK down");
    let problems = down.problems("edge1-n1");
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].contains("ovn-controller") && problems[0].contains("ovn-remote"),
        "{problems:?}"
    );
    let up = Planes {
        compute: PlaneState::Up,
        network: PlaneState::Up,
    };
    assert_eq!(
        NodePhase::from_record(&r, now).with_planes(up).shown,
        "placed"
    );
    // A node still joining is not judged by its planes yet.
    let mut joining = ProgressRecord::new("edge1-n2", "edge1");
    joining.apply(
        Phase::JoinStep,
        Some("preflight"),
        &[],
        SystemTime::UNIX_EPOCH,
    );
    assert_eq!(
        NodePhase::from_record(&joining, now)
            .with_planes(down)
            .shown,
        "join-step"
    );
    let status = SiteStatus {
        site: "edge1".into(),
        config_revision: 0,
        nodes: vec![NodePhase::from_record(&r, now).with_planes(down)],
        now,
    };
    let text = status.to_string();
    assert!(
        text.contains("placed, NETWORK down") && text.contains("edge1-n1: NETWORK down"),
        "{text}"
    );
}
