//! `dcn site deploy`'s phases against a BMC that answers slowly on purpose
//! (tests/support/hostile_bmc.rs, on 127.0.0.1): each phase ends at its
//! own deadline (`--install-timeout`, `--join-timeout`), however slowly
//! each BMC call is answered, because a call made inside a phase gets at
//! most the time the phase has left. Driven through
//! `dcn::centre::site_deploy::node::run` on a temporary control-plane root: no lab.
//! And a node that says nothing after the deploy powered it on (a boot
//! that hung) is powered on once more, and only once, before it fails.

#[path = "support/hostile_bmc.rs"]
mod hostile_bmc;

use dcn::centre::site_deploy::node::{self, Limits, NodeRun, NodeTarget, Outcome};
use dcn::centre::site_deploy::plan::Start;
use dcn::centre::sites::progress::{self, Phase};
use dcn::host::Files;
use hostile_bmc::{Answer, HostileBmc, PASSWORD, SYSTEM};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

const SITE: &str = "edge1";
const HOST: &str = "edge1-n1";
/// The phase's limit in these tests.
const LIMIT: Duration = Duration::from_secs(3);
/// When a run must have ended: the limit and room for a slow machine, far
/// below a BMC call's own 30 s.
const BOUND: Duration = Duration::from_secs(12);

/// The node of a one-node inventory whose BMC is `bmc`.
fn target(dir: &Path, bmc: &HostileBmc) -> NodeTarget {
    let pw = dir.join("bmc.pw");
    std::fs::write(&pw, format!("{PASSWORD}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pw, std::fs::Permissions::from_mode(0o600)).unwrap();
    let inventory = format!(
        "apiVersion: dcn/v1alpha1\nkind: SiteInventory\nsite: {SITE}\nimage: /srv/dcn-edge.iso\n\
         media:\n  listen: 127.0.0.1:8443\nnodes:\n- hostname: {HOST}\n  bmc:\n    endpoint: {}\n\
         \x20   credentials:\n      username: {}\n      passwordFile: {}\n    tls:\n      pin: {}\n",
        bmc.url,
        hostile_bmc::USER,
        pw.display(),
        bmc.pin
    );
    let file = dir.join("site.yaml");
    std::fs::write(&file, inventory).unwrap();
    let inv = dcn::config::load_inventory(&file).unwrap();
    let n = inv.node(HOST).unwrap();
    NodeTarget {
        config: inv.node_config(HOST).unwrap(),
        bmc: n.bmc.client_options(Duration::from_secs(30)).unwrap(),
        system: None,
    }
}

/// Run the node from `start` with both phases limited to [`LIMIT`]; a run
/// still going after a minute is a failure, not a hang.
fn run(root: &Path, node: NodeTarget, start: Start) -> (NodeRun, Duration) {
    let (tx, rx) = std::sync::mpsc::channel();
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        let files = Files::new(root, false);
        let empty = Path::new("");
        let ctx = node::Run {
            files: &files,
            site: SITE,
            iso: empty,
            bundle: empty,
            ca_pin: "",
            media_url: "",
            media_ca: None,
            limits: Limits {
                install: LIMIT,
                join: LIMIT,
                poll: Duration::from_millis(200),
            },
        };
        let t = Instant::now();
        let r = node::run(
            &dcn::recipes::Recipes::embedded().unwrap(),
            &ctx,
            &node,
            start,
        );
        let _ = tx.send((r, t.elapsed()));
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the node's run was still going after 60 s")
}

fn failed(r: &NodeRun) -> (&str, &str) {
    match &r.outcome {
        Outcome::Failed { phase, reason } => (phase, reason),
        o => panic!("not failed: {o:?}"),
    }
}

/// The installer reported the disk written after the deploy's insert.
fn disk_written(files: &Files) {
    progress::record_at_centre(files, SITE, HOST, Phase::MediaInserted, Some("Cd"), &[]).unwrap();
    let lock = dcn::centre::sites::Registry::new(files).lock().unwrap();
    let store = progress::ProgressStore::new(files);
    let mut rec = progress::read(files, HOST).unwrap().unwrap();
    rec.apply(Phase::DiskWritten, None, &[], SystemTime::now());
    store.save(&lock, &rec).unwrap();
}

#[test]
fn a_restart_from_the_disk_ends_at_the_join_deadline_when_the_bmc_trickles() {
    let dir = tempfile::tempdir().unwrap();
    let files = Files::new(dir.path().join("root"), false);
    let bmc = HostileBmc::start();
    let root = bmc.resource("/redfish/v1/");
    bmc.on(move |r| {
        (r.path == "/redfish/v1/").then(|| Answer::Drip(root.clone(), Duration::from_millis(300)))
    });
    let (r, took) = run(
        &dir.path().join("root"),
        target(dir.path(), &bmc),
        Start::Reset,
    );
    assert!(took < BOUND, "took {took:?}: {r:?}");
    let (phase, reason) = failed(&r);
    assert_eq!(phase, "powered-on");
    assert!(
        reason.contains(&format!(
            "the BMC at {}/ did not finish sending its answer to GET /redfish/v1/",
            bmc.url
        )) && reason.contains("the time left of the join phase (3s)")
            && reason.contains("raise --join-timeout"),
        "{reason}"
    );
    // The failure is recorded at the centre for `dcn site status`.
    let rec = progress::read(&files, HOST).unwrap().unwrap();
    assert!(
        rec.last_error.unwrap().reason.contains("join phase"),
        "not recorded"
    );
}

#[test]
fn waiting_for_the_node_to_leave_the_installer_ends_at_the_join_deadline() {
    // A BMC that answers at once, but the node never powers off.
    let dir = tempfile::tempdir().unwrap();
    let files = Files::new(dir.path().join("root"), false);
    let bmc = HostileBmc::start();
    bmc.edit(SYSTEM, |v| v["PowerState"] = "On".into());
    disk_written(&files);
    let (r, took) = run(
        &dir.path().join("root"),
        target(dir.path(), &bmc),
        Start::Follow,
    );
    assert!(took < BOUND, "took {took:?}: {r:?}");
    let (phase, reason) = failed(&r);
    assert_eq!(phase, "media-ejected");
    assert!(
        reason.contains("waited 3s for the node to leave the installer (its power: On)")
            && reason.contains("raise --join-timeout"),
        "{reason}"
    );

    // A BMC whose system trickles in after the first read: the wait still
    // ends at its deadline, not after the call's own 30 s.
    let dir = tempfile::tempdir().unwrap();
    let files = Files::new(dir.path().join("root"), false);
    let bmc = HostileBmc::start();
    bmc.edit(SYSTEM, |v| v["PowerState"] = "On".into());
    let system = bmc.resource(SYSTEM);
    let mut reads = 0;
    bmc.on(move |r| {
        if r.path != SYSTEM {
            return None;
        }
        reads += 1;
        (reads > 1).then(|| Answer::Drip(system.clone(), Duration::from_millis(300)))
    });
    disk_written(&files);
    let (r, took) = run(
        &dir.path().join("root"),
        target(dir.path(), &bmc),
        Start::Follow,
    );
    assert!(took < BOUND, "took {took:?}: {r:?}");
    let (phase, reason) = failed(&r);
    assert_eq!(phase, "media-ejected");
    assert!(
        reason.contains(&format!(
            "did not finish sending its answer to GET {SYSTEM}"
        )) && reason.contains("the time left of the join phase"),
        "{reason}"
    );
}

#[test]
fn the_install_wait_ends_at_its_deadline() {
    // Nothing reported after the insert: the install phase's deadline.
    let dir = tempfile::tempdir().unwrap();
    let files = Files::new(dir.path().join("root"), false);
    let bmc = HostileBmc::start();
    progress::record_at_centre(&files, SITE, HOST, Phase::MediaInserted, Some("Cd"), &[]).unwrap();
    let (r, took) = run(
        &dir.path().join("root"),
        target(dir.path(), &bmc),
        Start::Follow,
    );
    assert!(took < BOUND, "took {took:?}: {r:?}");
    let (_, reason) = failed(&r);
    assert!(
        reason.contains("waited 3s for the disk to be written")
            && reason.contains("raise --install-timeout"),
        "{reason}"
    );
}

/// Every `powered-on` the deploy records is made eleven minutes old (past
/// the silent bound) once, as if the node had said nothing since, until
/// `stop`; returns how many it aged.
fn age_each_power_on(
    root: &Path,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        let files = Files::new(root, false);
        let mut aged = 0;
        let mut seen = 0;
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            let powered_on = |rec: &progress::ProgressRecord| {
                rec.history
                    .iter()
                    .filter(|e| e.phase == Phase::PoweredOn)
                    .count()
            };
            if let Some(rec) = progress::read(&files, HOST).unwrap()
                && powered_on(&rec) > seen
                && rec.current().is_some_and(|e| e.phase == Phase::PoweredOn)
            {
                let lock = dcn::centre::sites::Registry::new(&files).lock().unwrap();
                let mut rec = progress::read(&files, HOST).unwrap().unwrap();
                seen = powered_on(&rec);
                rec.updated_at =
                    dcn::timefmt::rfc3339(SystemTime::now() - Duration::from_secs(660));
                progress::ProgressStore::new(&files)
                    .save(&lock, &rec)
                    .unwrap();
                aged += 1;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        aged
    })
}

#[test]
fn a_node_silent_since_power_on_is_powered_on_once_more_then_failed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let files = Files::new(&root, false);
    let bmc = HostileBmc::start();
    bmc.edit(SYSTEM, |v| v["PowerState"] = "On".into());
    // Every setting and action succeeds.
    bmc.on(|r| (r.method != "GET").then(|| Answer::Text(204, String::new())));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ager = age_each_power_on(&root, stop.clone());
    let (r, took) = run(&root, target(dir.path(), &bmc), Start::Reset);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let aged = ager.join().unwrap();
    assert!(took < BOUND, "took {took:?}: {r:?}");
    let (_, reason) = failed(&r);
    assert!(reason.contains("has reported nothing for 11m"), "{reason}");
    // Two power-ons through the BMC: the first, and one more.
    let resets = bmc
        .seen()
        .iter()
        .filter(|s| s.method == "POST" && s.path.ends_with("ComputerSystem.Reset"))
        .count();
    assert_eq!(
        (resets, aged),
        (2, 2),
        "power-ons asked of the BMC, and seen at the centre"
    );
    let rec = progress::read(&files, HOST).unwrap().unwrap();
    let phases: Vec<_> = rec.history.iter().map(|e| e.phase.to_string()).collect();
    assert_eq!(
        phases,
        [
            "media-ejected",
            "powered-on",
            "media-ejected",
            "powered-on",
            "failed"
        ],
        "{phases:?}"
    );
}

#[test]
fn a_followed_install_silent_since_power_on_boots_its_iso_again() {
    // A re-run follows a node its earlier run powered on; the node never
    // speaks. The follow turns into a new boot of its ISO, whose making is
    // where this test's empty ISO path stops it.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let files = Files::new(&root, false);
    let bmc = HostileBmc::start();
    progress::record_at_centre(&files, SITE, HOST, Phase::MediaInserted, Some("Cd"), &[]).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ager = age_each_power_on(&root, stop.clone());
    progress::record_at_centre(&files, SITE, HOST, Phase::PoweredOn, Some("On (Cd)"), &[]).unwrap();
    let (r, took) = run(&root, target(dir.path(), &bmc), Start::Follow);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(ager.join().unwrap(), 1);
    assert!(took < BOUND, "took {took:?}: {r:?}");
    let (phase, _) = failed(&r);
    assert_eq!(phase, "media", "{r:?}");
}
