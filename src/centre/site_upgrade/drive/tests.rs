use super::*;
use crate::centre::sites::upgrade_campaign::waves;
use crate::wire::{EdgeRelease, ReleaseFile, UpgradeProgress};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

const RELEASE: &str = "0.2.1-ab";

#[derive(Default)]
struct FakeFleet {
    states: RefCell<BTreeMap<String, NodeUpgradeState>>,
    /// Nodes the centre sees on the release.
    on: RefCell<BTreeSet<String>>,
}

impl FakeFleet {
    fn says(&self, host: &str, phase: UpgradePhase, attempt: u32, detail: Option<&str>) {
        let mut states = self.states.borrow_mut();
        let s = states.entry(host.into()).or_default();
        s.hostname = host.into();
        s.check.dcn_version = "0.2.1".into();
        if phase == UpgradePhase::Applied {
            s.check.runs = Some(RELEASE.into());
        }
        s.check.progress = Some(UpgradeProgress {
            release: RELEASE.into(),
            phase,
            attempt,
            detail: detail.map(str::to_string),
            log: vec![],
            changes: vec![],
            restarted: vec![],
            guests_on_old_qemu: vec![],
        });
    }
}

impl Fleet for FakeFleet {
    fn state(&self, hostname: &str) -> Result<Option<NodeUpgradeState>> {
        Ok(self.states.borrow().get(hostname).cloned())
    }
    fn on_release(&self, node: &CampaignNode, _since: SystemTime) -> Result<Result<(), String>> {
        Ok(match self.on.borrow().contains(&node.hostname) {
            true => Ok(()),
            false => Err("its compute service has not reported".into()),
        })
    }
}

fn campaign(hosts: &[&str], canary: Option<&str>, batch: usize, max_failures: usize) -> Campaign {
    let file = |name: &str| ReleaseFile {
        name: name.into(),
        sha256: "0".repeat(64),
        size: 1,
    };
    let nodes: Vec<(String, String)> = hosts
        .iter()
        .map(|h| (h.to_string(), "edge1".to_string()))
        .collect();
    Campaign {
        release: EdgeRelease {
            id: RELEASE.into(),
            dcn_version: "0.2.1".into(),
            dcn: file("dcn"),
            index: file("Packages"),
        },
        sites: vec!["edge1".into()],
        canary: canary.map(str::to_string),
        batch,
        max_failures,
        started_at: rfc3339(SystemTime::UNIX_EPOCH),
        nodes: waves(&nodes, canary, batch).unwrap(),
    }
}

const LIMITS: Limits = Limits {
    node: Duration::from_secs(1800),
    verify: Duration::from_secs(300),
};

fn at(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s)
}

fn ordered(c: &Campaign) -> Vec<&str> {
    (c.nodes.iter())
        .filter(|n| n.ordered_at.is_some())
        .map(|n| n.hostname.as_str())
        .collect()
}

#[test]
fn the_canary_goes_alone_then_batches_each_after_the_last_is_on_the_release() {
    let fleet = FakeFleet::default();
    let mut c = campaign(&["n1", "n2", "n3", "n4"], Some("n3"), 2, 1);
    let mut seen = BTreeMap::new();
    let (events, standing) = round(&mut c, &fleet, LIMITS, at(0), &mut seen).unwrap();
    assert_eq!(standing, Standing::Going);
    assert_eq!(
        events,
        [Event::Ordered {
            host: "n3".into(),
            attempt: 1
        }]
    );
    // The canary applies; the centre does not see it on the release yet.
    fleet.says(
        "n3",
        UpgradePhase::Applying,
        1,
        Some("packages, files and restarts"),
    );
    let (events, _) = round(&mut c, &fleet, LIMITS, at(10), &mut seen).unwrap();
    assert!(matches!(
        &events[..],
        [Event::Phase {
            phase: UpgradePhase::Applying,
            ..
        }]
    ));
    fleet.says("n3", UpgradePhase::Applied, 1, None);
    round(&mut c, &fleet, LIMITS, at(20), &mut seen).unwrap();
    assert_eq!(ordered(&c), ["n3"], "the next batch waits for the centre");
    fleet.on.borrow_mut().insert("n3".into());
    let (events, _) = round(&mut c, &fleet, LIMITS, at(30), &mut seen).unwrap();
    assert!(events.contains(&Event::Upgraded { host: "n3".into() }));
    assert_eq!(
        ordered(&c),
        ["n3", "n1", "n2"],
        "then the first batch of two"
    );
    for h in ["n1", "n2"] {
        fleet.says(h, UpgradePhase::Applied, 1, None);
        fleet.on.borrow_mut().insert(h.into());
    }
    round(&mut c, &fleet, LIMITS, at(40), &mut seen).unwrap();
    assert_eq!(ordered(&c), ["n3", "n1", "n2", "n4"]);
    fleet.says("n4", UpgradePhase::Applied, 1, None);
    fleet.on.borrow_mut().insert("n4".into());
    let (_, standing) = round(&mut c, &fleet, LIMITS, at(50), &mut seen).unwrap();
    assert_eq!(standing, Standing::Done);
}

#[test]
fn a_failure_stops_new_turns_once_the_limit_is_reached_and_others_are_left_alone() {
    let fleet = FakeFleet::default();
    let mut c = campaign(&["n1", "n2", "n3"], None, 1, 1);
    let mut seen = BTreeMap::new();
    round(&mut c, &fleet, LIMITS, at(0), &mut seen).unwrap();
    // A staging report from before its turn does not count as its turn's.
    fleet.says("n1", UpgradePhase::Failed, 0, Some("old"));
    round(&mut c, &fleet, LIMITS, at(5), &mut seen).unwrap();
    assert!(c.nodes[0].outcome.is_none());
    fleet.says(
        "n1",
        UpgradePhase::Failed,
        1,
        Some("installing: ovn-host's postinst failed"),
    );
    let (events, standing) = round(&mut c, &fleet, LIMITS, at(10), &mut seen).unwrap();
    assert!(events.contains(&Event::Failed {
        host: "n1".into(),
        reason: "installing: ovn-host's postinst failed".into()
    }));
    assert_eq!(standing, Standing::Stopped);
    assert_eq!(ordered(&c), ["n1"], "nobody else had a turn");
    // With room for two failures, the next node gets its turn.
    let mut c = campaign(&["n1", "n2", "n3"], None, 1, 2);
    fleet.states.borrow_mut().clear();
    round(&mut c, &fleet, LIMITS, at(0), &mut seen).unwrap();
    fleet.says("n1", UpgradePhase::Failed, 1, Some("x"));
    let (_, standing) = round(&mut c, &fleet, LIMITS, at(10), &mut seen).unwrap();
    assert_eq!(standing, Standing::Going);
    assert_eq!(ordered(&c), ["n1", "n2"]);
}

#[test]
fn a_silent_node_or_one_the_centre_never_sees_up_fails_after_its_time() {
    let fleet = FakeFleet::default();
    let mut c = campaign(&["n1", "n2"], None, 2, 5);
    let mut seen = BTreeMap::new();
    round(&mut c, &fleet, LIMITS, at(0), &mut seen).unwrap();
    fleet.says("n2", UpgradePhase::Applied, 1, None);
    round(&mut c, &fleet, LIMITS, at(100), &mut seen).unwrap();
    assert!(c.nodes.iter().all(|n| n.outcome.is_none()));
    let (events, standing) = round(&mut c, &fleet, LIMITS, at(1801), &mut seen).unwrap();
    let reasons: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Failed { reason, .. } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        reasons[0].contains("no word from the node 1800s"),
        "{reasons:?}"
    );
    assert!(
        reasons[1].contains("applied, but its compute service has not reported 300s later"),
        "{reasons:?}"
    );
    assert_eq!(standing, Standing::Stopped);
}

#[test]
fn a_node_already_on_the_release_needs_no_turn() {
    let fleet = FakeFleet::default();
    fleet.says("n1", UpgradePhase::Applied, 3, None);
    fleet.on.borrow_mut().insert("n1".into());
    let mut c = campaign(&["n1", "n2"], None, 1, 1);
    let mut seen = BTreeMap::new();
    let (events, _) = round(&mut c, &fleet, LIMITS, at(0), &mut seen).unwrap();
    assert!(events.contains(&Event::Upgraded { host: "n1".into() }));
    assert_eq!(ordered(&c), ["n2"]);
}
