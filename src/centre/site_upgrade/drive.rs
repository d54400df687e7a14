//! One round of an upgrade under way ([`round`]): what each node whose
//! turn it is said since the last round (and whether the centre sees it
//! on the release), then whose turn comes next. Pure over the campaign
//! and a [`Fleet`] that answers what the nodes say and what the centre
//! sees, so the rules — the canary alone, batches, stop once
//! `max_failures` have failed, time limits — are tested without a cloud.

use crate::centre::sites::upgrade_campaign::{Campaign, CampaignNode, Outcome};
use crate::centre::sites::upgrade_state::NodeUpgradeState;
use crate::timefmt::{parse_rfc3339, rfc3339};
use crate::wire::UpgradePhase;
use anyhow::Result;
use std::time::{Duration, SystemTime};

/// What the drive asks of the world.
pub trait Fleet {
    /// What `hostname` last said of its upgrade.
    fn state(&self, hostname: &str) -> Result<Option<NodeUpgradeState>>;
    /// Whether the centre sees `node` on the release: `Ok(())`, or what
    /// it does not see yet.
    fn on_release(&self, node: &CampaignNode, since: SystemTime) -> Result<Result<(), String>>;
}

/// Time limits of a node's turn.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From its order to applied.
    pub node: Duration,
    /// From applied to seen on the release by the centre.
    pub verify: Duration,
}

/// Something the operator hears about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A node's turn began.
    Ordered {
        host: String,
        attempt: u32,
    },
    /// A node reported a new phase (with its detail).
    Phase {
        host: String,
        phase: UpgradePhase,
        detail: Option<String>,
    },
    Upgraded {
        host: String,
    },
    Failed {
        host: String,
        reason: String,
    },
}

/// Where the upgrade stands after a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Nodes are applying or waiting their turn.
    Going,
    /// Every node is on the release.
    Done,
    /// `max_failures` nodes failed and none is applying any more: no new
    /// turns until a re-run.
    Stopped,
}

/// One round at `now`; `seen` holds each node's last phase heard, so a
/// phase is told once.
pub fn round(
    c: &mut Campaign,
    fleet: &dyn Fleet,
    limits: Limits,
    now: SystemTime,
    seen: &mut std::collections::BTreeMap<String, (UpgradePhase, Option<String>)>,
) -> Result<(Vec<Event>, Standing)> {
    let mut events = Vec::new();
    let release = c.release.id.clone();
    for node in c.nodes.iter_mut() {
        if node.outcome.is_some() {
            continue;
        }
        let state = fleet.state(&node.hostname)?;
        let progress = (state.as_ref())
            .and_then(|s| s.check.progress.as_ref())
            .filter(|p| p.release == release);
        if let Some(p) = progress {
            let heard = (p.phase, p.detail.clone());
            if seen.get(&node.hostname) != Some(&heard) {
                seen.insert(node.hostname.clone(), heard.clone());
                events.push(Event::Phase {
                    host: node.hostname.clone(),
                    phase: p.phase,
                    detail: p.detail.clone(),
                });
            }
        }
        let Some(ordered_at) = node
            .ordered_at
            .as_deref()
            .and_then(|t| parse_rfc3339(t).ok())
        else {
            // Not its turn yet: already on the release, from an earlier
            // upgrade that ended before the centre saw it?
            let runs =
                state.as_ref().and_then(|s| s.check.runs.as_deref()) == Some(release.as_str());
            if runs && fleet.on_release(node, SystemTime::UNIX_EPOCH)?.is_ok() {
                node.outcome = Some(Outcome::Upgraded { at: rfc3339(now) });
                events.push(Event::Upgraded {
                    host: node.hostname.clone(),
                });
            }
            continue;
        };
        let this_turn = progress.filter(|p| p.attempt == node.attempt);
        let runs = state.as_ref().and_then(|s| s.check.runs.as_deref()) == Some(release.as_str());
        let since = (state.as_ref())
            .and_then(|s| s.phase_since.as_deref())
            .and_then(|t| parse_rfc3339(t).ok())
            .unwrap_or(ordered_at);
        let failed = |reason: String| Outcome::Failed {
            reason,
            at: rfc3339(now),
        };
        node.outcome = if let Some(p) = this_turn.filter(|p| p.phase == UpgradePhase::Failed) {
            Some(failed(
                p.detail
                    .clone()
                    .unwrap_or_else(|| "(no reason given)".into()),
            ))
        } else if runs || this_turn.is_some_and(|p| p.phase == UpgradePhase::Applied) {
            match fleet.on_release(node, ordered_at)? {
                Ok(()) => Some(Outcome::Upgraded { at: rfc3339(now) }),
                Err(why) if elapsed(since.max(ordered_at), now) > limits.verify => Some(failed(
                    format!("applied, but {why} {}s later", limits.verify.as_secs()),
                )),
                Err(_) => None,
            }
        } else if elapsed(ordered_at, now) > limits.node {
            Some(failed(match progress {
                None => format!(
                    "no word from the node {}s after its turn began (is it up, and reaching the control plane?)",
                    limits.node.as_secs()
                ),
                Some(p) => format!(
                    "still {}{} {}s after its turn began",
                    p.phase,
                    p.detail
                        .as_deref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default(),
                    limits.node.as_secs()
                ),
            }))
        } else {
            None
        };
        match &node.outcome {
            Some(Outcome::Upgraded { .. }) => events.push(Event::Upgraded {
                host: node.hostname.clone(),
            }),
            Some(Outcome::Failed { reason, .. }) => events.push(Event::Failed {
                host: node.hostname.clone(),
                reason: reason.clone(),
            }),
            None => {}
        }
    }
    if c.done() {
        return Ok((events, Standing::Done));
    }
    if c.nodes.iter().any(CampaignNode::in_flight) {
        return Ok((events, Standing::Going));
    }
    if c.failures() >= c.max_failures {
        return Ok((events, Standing::Stopped));
    }
    // The next wave: the first with a node that has not had its turn.
    let next = (c.nodes.iter())
        .filter(|n| n.outcome.is_none() && n.ordered_at.is_none())
        .map(|n| n.wave)
        .min();
    let Some(wave) = next else {
        // Every node had its turn; some failed (fewer than the limit).
        return Ok((events, Standing::Stopped));
    };
    for node in c
        .nodes
        .iter_mut()
        .filter(|n| n.wave == wave && n.outcome.is_none())
    {
        node.attempt += 1;
        node.ordered_at = Some(rfc3339(now));
        events.push(Event::Ordered {
            host: node.hostname.clone(),
            attempt: node.attempt,
        });
    }
    Ok((events, Standing::Going))
}

fn elapsed(from: SystemTime, now: SystemTime) -> Duration {
    now.duration_since(from).unwrap_or_default()
}

#[cfg(test)]
mod tests;
