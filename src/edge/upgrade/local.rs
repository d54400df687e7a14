//! This node's record of its upgrades (`/var/lib/dcn/node/upgrade.json`):
//! the edge release it applied last and its last report, which every
//! check sends; and from both, whether an order asks for work this node
//! has not done, or gave up on until the centre gives a new attempt.

use crate::host::{FileSpec, Host};
use crate::release::THIS;
use crate::wire::{UpgradeAction, UpgradeCheck, UpgradeOrder, UpgradePhase, UpgradeProgress};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// What this node did of its upgrades.
const LOCAL: &str = "/var/lib/dcn/node/upgrade.json";

/// This node's record of its upgrades.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Local {
    /// The edge release it applied last.
    #[serde(default)]
    pub runs: Option<String>,
    /// Its last report.
    #[serde(default)]
    pub progress: Option<UpgradeProgress>,
}

impl Local {
    pub fn load(host: &Host) -> Result<Local> {
        match host.files.read_string(LOCAL)? {
            None => Ok(Local::default()),
            Some(t) => serde_json::from_str(&t).with_context(|| format!("{LOCAL} is damaged")),
        }
    }

    pub fn save(&self, host: &Host) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("serialisable") + "\n";
        host.files
            .write(LOCAL, text.as_bytes(), &FileSpec::secret())?;
        Ok(())
    }

    pub fn check(&self, host: &Host) -> UpgradeCheck {
        UpgradeCheck {
            dcn_version: THIS.into(),
            runs: self.runs.clone(),
            progress: self.progress.clone(),
            image_cache: crate::openstack::local_node::cached_images(&host.files)
                .unwrap_or_default(),
        }
    }

    /// Whether `order` asks for work this node has not done (or given up
    /// on until a new attempt).
    pub fn has_work(&self, order: &UpgradeOrder) -> bool {
        let Some(release) = order.release.as_ref() else {
            return false;
        };
        let mine = self.progress.as_ref().filter(|p| p.release == release.id);
        match order.action {
            UpgradeAction::None => false,
            UpgradeAction::Stage => {
                !matches!(
                    mine.map(|p| p.phase),
                    Some(UpgradePhase::Staged | UpgradePhase::Applied)
                ) && self.runs.as_deref() != Some(&release.id)
            }
            UpgradeAction::Apply => {
                let failed_this_attempt = mine
                    .is_some_and(|p| p.phase == UpgradePhase::Failed && p.attempt == order.attempt);
                let reported_done = self.runs.as_deref() == Some(&release.id)
                    && mine.is_some_and(|p| p.phase == UpgradePhase::Applied);
                !failed_this_attempt && !reported_done
            }
        }
    }
}
