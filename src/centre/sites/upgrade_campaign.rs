//! The upgrade under way: which release, which sites' nodes in which
//! order (the canary alone, then batches), whose turn it is, and how each
//! node's turn ended. `/var/lib/dcn/upgrade/campaign.json` (0600), written
//! by `dcn site upgrade` and read by the join service, which answers each
//! node's check with its order from it ([`Campaign::order_for`]).

use crate::host::{FileSpec, Files};
use crate::wire::{EdgeRelease, UpgradeAction, UpgradeOrder};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

const FILE: &str = "/var/lib/dcn/upgrade/campaign.json";

/// How a node's turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
pub enum Outcome {
    /// Applied on the node, and the centre saw its compute service and
    /// chassis up on the release.
    Upgraded { at: String },
    /// Why it did not get there.
    Failed { reason: String, at: String },
}

/// One node of the upgrade.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CampaignNode {
    pub hostname: String,
    pub site: String,
    /// The wave it belongs to (0: the canary's, when there is one).
    pub wave: usize,
    /// Its turn came: the attempt it was told to apply with.
    #[serde(default)]
    pub attempt: u32,
    /// When it was told to apply (RFC 3339).
    #[serde(default)]
    pub ordered_at: Option<String>,
    #[serde(default)]
    pub outcome: Option<Outcome>,
}

impl CampaignNode {
    pub fn upgraded(&self) -> bool {
        matches!(self.outcome, Some(Outcome::Upgraded { .. }))
    }

    pub fn failed(&self) -> Option<&str> {
        match &self.outcome {
            Some(Outcome::Failed { reason, .. }) => Some(reason),
            _ => None,
        }
    }

    /// Told to apply and not done with it.
    pub fn in_flight(&self) -> bool {
        self.ordered_at.is_some() && self.outcome.is_none()
    }
}

/// An upgrade of sites to a release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Campaign {
    pub release: EdgeRelease,
    pub sites: Vec<String>,
    #[serde(default)]
    pub canary: Option<String>,
    pub batch: usize,
    pub max_failures: usize,
    pub started_at: String,
    /// Every node, in order.
    pub nodes: Vec<CampaignNode>,
}

/// The campaign as last read, kept while its file's time and size stay
/// the same: the join service answers every node's check from it, and
/// need not read and parse it each time.
#[derive(Default)]
pub struct KeptCampaign {
    kept: std::sync::Mutex<Option<(KeptStamp, std::sync::Arc<Option<Campaign>>)>>,
}

type KeptStamp = Option<(std::time::SystemTime, u64)>;

impl KeptCampaign {
    /// The campaign on `files` now.
    pub fn get(&self, files: &Files) -> Result<std::sync::Arc<Option<Campaign>>> {
        let stamp = files.stamp(FILE)?;
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, campaign)) = kept.as_ref()
            && *at == stamp
        {
            return Ok(campaign.clone());
        }
        let campaign = std::sync::Arc::new(Campaign::load(files)?);
        *kept = Some((stamp, campaign.clone()));
        Ok(campaign)
    }
}

impl Campaign {
    pub fn load(files: &Files) -> Result<Option<Campaign>> {
        match files.read_string(FILE)? {
            None => Ok(None),
            Some(t) => serde_json::from_str(&t)
                .map(Some)
                .with_context(|| format!("{FILE} is damaged")),
        }
    }

    pub fn save(&self, files: &Files) -> Result<()> {
        files.ensure_dir("/var/lib/dcn/upgrade", &FileSpec::private_dir())?;
        let text = serde_json::to_string_pretty(self).expect("serialisable") + "\n";
        files.write(FILE, text.as_bytes(), &FileSpec::secret())?;
        Ok(())
    }

    /// What `hostname` is to do now: nothing once it is upgraded or when
    /// it is no part of this; apply once its turn came (and again with a
    /// higher attempt after a failure, when a re-run gives one); else
    /// stage, so it is ready when its turn comes.
    pub fn order_for(&self, hostname: &str) -> UpgradeOrder {
        let Some(node) = self.nodes.iter().find(|n| n.hostname == hostname) else {
            return UpgradeOrder::none();
        };
        let action = if node.upgraded() {
            UpgradeAction::None
        } else if node.ordered_at.is_some() {
            UpgradeAction::Apply
        } else {
            UpgradeAction::Stage
        };
        UpgradeOrder {
            action,
            release: (action != UpgradeAction::None).then(|| self.release.clone()),
            attempt: node.attempt,
            image_files: Vec::new(),
        }
    }

    pub fn node_mut(&mut self, hostname: &str) -> Option<&mut CampaignNode> {
        self.nodes.iter_mut().find(|n| n.hostname == hostname)
    }

    /// The nodes whose turn failed.
    pub fn failures(&self) -> usize {
        self.nodes.iter().filter(|n| n.failed().is_some()).count()
    }

    /// Every node upgraded.
    pub fn done(&self) -> bool {
        self.nodes.iter().all(CampaignNode::upgraded)
    }
}

/// The waves of an upgrade of `nodes` (host, site; in the operator's
/// order): the canary alone first when given, then batches of `batch`.
pub fn waves(
    nodes: &[(String, String)],
    canary: Option<&str>,
    batch: usize,
) -> Result<Vec<CampaignNode>> {
    if batch == 0 {
        bail!("--batch must be at least 1");
    }
    if let Some(c) = canary
        && !nodes.iter().any(|(h, _)| h == c)
    {
        bail!(
            "the canary {c} is not a node of the sites being upgraded; pick one of: {}",
            nodes
                .iter()
                .map(|(h, _)| h.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut out = Vec::new();
    let first = usize::from(canary.is_some());
    if let Some((h, s)) = canary.and_then(|c| nodes.iter().find(|(h, _)| h == c)) {
        out.push(node(h, s, 0));
    }
    let rest: Vec<&(String, String)> = (nodes.iter())
        .filter(|(h, _)| Some(h.as_str()) != canary)
        .collect();
    for (i, chunk) in rest.chunks(batch).enumerate() {
        for (h, s) in chunk {
            out.push(node(h, s, first + i));
        }
    }
    Ok(out)
}

fn node(hostname: &str, site: &str, wave: usize) -> CampaignNode {
    CampaignNode {
        hostname: hostname.to_string(),
        site: site.to_string(),
        wave,
        attempt: 0,
        ordered_at: None,
        outcome: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(names: &[&str]) -> Vec<(String, String)> {
        names
            .iter()
            .map(|h| (h.to_string(), h[..5].to_string()))
            .collect()
    }

    #[test]
    fn the_canary_goes_alone_then_batches_in_the_operators_order() {
        let n = hosts(&["edge1-a", "edge1-b", "edge2-a", "edge2-b", "edge3-a"]);
        let w = waves(&n, Some("edge2-a"), 2).unwrap();
        let shown: Vec<(usize, &str)> = w.iter().map(|n| (n.wave, n.hostname.as_str())).collect();
        assert_eq!(
            shown,
            [
                (0, "edge2-a"),
                (1, "edge1-a"),
                (1, "edge1-b"),
                (2, "edge2-b"),
                (2, "edge3-a")
            ]
        );
        let w = waves(&n, None, 3).unwrap();
        assert_eq!(w.iter().filter(|n| n.wave == 0).count(), 3);
        let e = waves(&n, Some("edge9-z"), 1).unwrap_err().to_string();
        assert!(
            e.contains("not a node of the sites") && e.contains("edge1-a"),
            "{e}"
        );
        assert!(waves(&n, None, 0).is_err());
    }

    #[test]
    fn orders_follow_each_nodes_turn() {
        let release = EdgeRelease {
            id: "0.2.1-ab".into(),
            dcn_version: "0.2.1".into(),
            dcn: crate::wire::ReleaseFile {
                name: "dcn".into(),
                sha256: "0".repeat(64),
                size: 1,
            },
            index: crate::wire::ReleaseFile {
                name: "Packages".into(),
                sha256: "0".repeat(64),
                size: 1,
            },
        };
        let mut c = Campaign {
            release,
            sites: vec!["edge1".into()],
            canary: None,
            batch: 1,
            max_failures: 1,
            started_at: crate::timefmt::EARLIEST.into(),
            nodes: waves(&hosts(&["edge1-a", "edge1-b"]), None, 1).unwrap(),
        };
        assert_eq!(c.order_for("edge1-a").action, UpgradeAction::Stage);
        assert_eq!(c.order_for("other").action, UpgradeAction::None);
        let n = c.node_mut("edge1-a").unwrap();
        n.ordered_at = Some("t".into());
        n.attempt = 1;
        let o = c.order_for("edge1-a");
        assert_eq!((o.action, o.attempt), (UpgradeAction::Apply, 1));
        assert_eq!(o.release.unwrap().id, "0.2.1-ab");
        c.node_mut("edge1-a").unwrap().outcome = Some(Outcome::Upgraded { at: "t".into() });
        assert_eq!(c.order_for("edge1-a").action, UpgradeAction::None);
        assert!(!c.done());
        c.node_mut("edge1-b").unwrap().outcome = Some(Outcome::Failed {
            reason: "r".into(),
            at: "t".into(),
        });
        assert_eq!(c.failures(), 1);
        // Stored and read back the same.
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        c.save(&files).unwrap();
        assert_eq!(Campaign::load(&files).unwrap().unwrap(), c);
        // Kept while the file stays, read again once it changed.
        let kept = KeptCampaign::default();
        assert_eq!(kept.get(&files).unwrap().as_ref().as_ref(), Some(&c));
        c.max_failures = 7;
        c.save(&files).unwrap();
        assert_eq!(
            kept.get(&files)
                .unwrap()
                .as_ref()
                .as_ref()
                .unwrap()
                .max_failures,
            7
        );
        files.remove(FILE).unwrap();
        assert!(kept.get(&files).unwrap().is_none());
    }
}
