use super::*;
use std::time::Duration;

fn t(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs)
}

#[test]
fn phases_are_kept_in_order_and_a_heartbeat_only_renews_the_time() {
    let mut r = ProgressRecord::new("edge1-n1", "edge1");
    assert_eq!(r.shown_phase(t(0)), "-");
    r.apply(Phase::MediaInserted, None, &[], t(0));
    r.apply(Phase::InstallerStarted, Some("copying the OS"), &[], t(10));
    r.apply(Phase::InstallerStarted, Some("copying the OS"), &[], t(70));
    r.apply(Phase::InstallerStarted, Some("installing GRUB"), &[], t(80));
    let phases: Vec<_> = r
        .history
        .iter()
        .map(|e| (e.phase, e.detail.as_deref()))
        .collect();
    assert_eq!(
        phases,
        [
            (Phase::MediaInserted, None),
            (Phase::InstallerStarted, Some("copying the OS")),
            (Phase::InstallerStarted, Some("installing GRUB")),
        ]
    );
    assert_eq!(
        r.history[1].at,
        rfc3339(t(10)),
        "the heartbeat kept its entry's time"
    );
    assert_eq!(r.updated_at, rfc3339(t(80)));
}

#[test]
fn history_detail_and_log_are_bounded_and_safe_to_print() {
    let mut r = ProgressRecord::new("n", "edge1");
    for i in 0..100 {
        r.apply(Phase::JoinStep, Some(&format!("step {i}")), &[], t(i));
    }
    assert_eq!(r.history.len(), MAX_HISTORY);
    let oldest_kept = format!("step {}", 100 - MAX_HISTORY);
    assert_eq!(
        r.history[0].detail.as_deref(),
        Some(oldest_kept.as_str()),
        "the oldest go"
    );
    let long = "x".repeat(10_000);
    let log: Vec<String> = (0..1000)
        .map(|i| format!("line {i}\x1b[2J\r\n{long}"))
        .collect();
    r.apply(
        Phase::Failed,
        Some(&format!("\x1b]0;owned\x07{long}")),
        &log,
        t(200),
    );
    let e = r.last_error.as_ref().unwrap();
    assert_eq!(e.phase, Some(Phase::JoinStep), "the phase it failed in");
    assert!(
        e.reason.starts_with("\\u{1b}]0;owned\\u{7}"),
        "{}",
        e.reason
    );
    assert_eq!(e.reason.chars().count(), MAX_DETAIL);
    assert_eq!(e.log.len(), MAX_LOG_LINES);
    assert!(
        e.log[0].starts_with("line 980\\u{1b}[2J\\r\\n"),
        "the last lines: {}",
        e.log[0]
    );
    assert!(e.log.iter().all(|l| l.chars().count() <= MAX_LOG_LINE));
    let text = serde_json::to_string(&r).unwrap();
    assert!(!text.contains('\u{1b}') && !text.contains("\\r\\n\""));
    assert!(
        text.len() < 24 * 1024,
        "a record stays small: {}",
        text.len()
    );
    r.apply(Phase::Placed, None, &[], t(300));
    assert!(r.last_error.is_none(), "placed clears the last error");
}

/// Seen in the lab: the placer placed a node while its join was still
/// configuring services, and the join's next heartbeat made it look as if
/// it had left its zone.
#[test]
fn the_rest_of_the_join_that_placed_a_node_leaves_it_placed() {
    let mut r = ProgressRecord::new("n", "edge1");
    r.apply(Phase::JoinStarted, None, &[], t(0));
    r.apply(Phase::Joined, None, &[], t(8));
    r.apply(
        Phase::JoinStep,
        Some("install and configure the compute services"),
        &[],
        t(9),
    );
    r.apply(Phase::Placed, None, &[], t(350));
    r.apply(
        Phase::JoinStep,
        Some("install and configure the compute services"),
        &[],
        t(361),
    );
    r.apply(
        Phase::JoinStep,
        Some("wait until the control plane sees this host"),
        &[],
        t(380),
    );
    r.apply(Phase::Joined, None, &[], t(381));
    assert_eq!(r.current().unwrap().phase, Phase::Placed);
    assert_eq!(r.history.len(), 4);
    assert_eq!(r.updated_at, rfc3339(t(381)), "the node is not silent");
    // A failure after placement, and a new join after it, are recorded.
    r.apply(
        Phase::Failed,
        Some("the metadata agent did not start"),
        &[],
        t(400),
    );
    assert_eq!(r.current().unwrap().phase, Phase::Failed);
    r.apply(Phase::JoinStarted, None, &[], t(430));
    r.apply(Phase::JoinStep, Some("preflight"), &[], t(431));
    assert_eq!(r.current().unwrap().phase, Phase::JoinStep);
    r.apply(Phase::Placed, None, &[], t(500));
    r.apply(Phase::JoinStarted, None, &[], t(600));
    assert_eq!(
        r.current().unwrap().phase,
        Phase::JoinStarted,
        "a re-join is shown"
    );
}

#[test]
fn a_node_is_silent_after_ten_minutes_unless_done() {
    let mut r = ProgressRecord::new("n", "edge1");
    r.apply(Phase::DiskWritten, None, &[], t(0));
    assert!(!r.is_silent(t(600)));
    assert!(r.is_silent(t(601)));
    assert_eq!(r.shown_phase(t(601)), "silent (last: disk-written)");
    r.apply(Phase::Failed, Some("no disk"), &[], t(700));
    assert!(!r.is_silent(t(100_000)), "a failed node is not silent");
    assert_eq!(r.shown_phase(t(100_000)), "failed");
    r.apply(Phase::Placed, None, &[], t(800));
    assert!(!r.is_silent(t(100_000)));
}

#[test]
fn the_store_keeps_private_records_and_deploy_writes_only_its_phases() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let files = Files::new(dir.path(), false);
    assert!(read(&files, "edge1-n1").unwrap().is_none());
    let r = record_at_centre(&files, "edge1", "edge1-n1", Phase::MediaInserted, None, &[]).unwrap();
    assert_eq!(r.current().unwrap().phase, Phase::MediaInserted);
    let r = record_at_centre(
        &files,
        "edge1",
        "edge1-n1",
        Phase::Failed,
        Some("the BMC refused the password"),
        &["401 Unauthorized".into()],
    )
    .unwrap();
    assert_eq!(read(&files, "edge1-n1").unwrap(), Some(r));
    let mode = |p: &str| {
        std::fs::metadata(dir.path().join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("var/lib/dcn/progress"), 0o700);
    assert_eq!(mode("var/lib/dcn/progress/edge1-n1.json"), 0o600);
    // Phases the node or the join service report are not the deploy's.
    for p in [Phase::Joined, Phase::Placed, Phase::DiskWritten] {
        let e = record_at_centre(&files, "edge1", "edge1-n2", p, None, &[]).unwrap_err();
        assert!(format!("{e}").contains("not the deploy"), "{e}");
    }
    // A host of another site is not taken over.
    let e = record_at_centre(&files, "edge2", "edge1-n1", Phase::PoweredOn, None, &[]).unwrap_err();
    assert!(format!("{e}").contains("dcn node remove edge1-n1"), "{e}");
    // Names that are not host names never become paths.
    assert!(read(&files, "../../etc/passwd").unwrap().is_none());
    assert!(record_at_centre(&files, "edge1", "../x", Phase::PoweredOn, None, &[]).is_err());
    let store = ProgressStore::new(&files);
    assert_eq!(store.all().unwrap().len(), 1);
    let reg = Registry::new(&files);
    let lock = reg.lock().unwrap();
    store.remove(&lock, "edge1-n1").unwrap();
    assert!(store.all().unwrap().is_empty());
}

/// Issue 22: `placed` is the end of the node's join with both planes up,
/// not the moment the placer put it in its zone while the join still ran.
#[test]
fn a_node_in_its_zone_is_not_placed_until_its_join_finished() {
    let mut r = ProgressRecord::new("n", "edge1");
    r.apply(Phase::JoinStarted, None, &[], t(0));
    r.apply(Phase::Joined, None, &[], t(8));
    let configure = Some("install and configure the compute services");
    r.apply(Phase::JoinStep, configure, &[], t(9));
    r.apply(Phase::InZone, None, &[], t(40));
    let wait = Some("wait until the control plane sees this host");
    r.apply(Phase::JoinStep, wait, &[], t(41));
    assert_eq!(r.current().unwrap().phase, Phase::InZone);
    assert_eq!(r.updated_at, rfc3339(t(41)), "the join's heartbeat counts");
    // Its join still runs: a node in its zone that stops reporting is silent.
    assert!(r.is_silent(t(41) + SILENT_AFTER * 2));
    // A power cut now: the node's join starts again at its next boot.
    r.apply(Phase::FirstBoot, None, &[], t(300));
    r.apply(Phase::JoinStarted, None, &[], t(301));
    r.apply(Phase::JoinStep, configure, &[], t(310));
    assert_eq!(r.current().unwrap().phase, Phase::JoinStep);
    r.apply(Phase::JoinFinished, None, &[], t(330));
    // Done on the node's side: it reports nothing more and is not silent
    // while the centre waits for its planes.
    assert!(!r.is_silent(t(330) + SILENT_AFTER * 2));
    r.apply(Phase::Placed, None, &[], t(335));
    assert_eq!(r.current().unwrap().phase, Phase::Placed);
}
