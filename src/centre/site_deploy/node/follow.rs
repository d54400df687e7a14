//! Following a node through the centre's records until it reaches a phase,
//! reports a failure, falls silent, or runs out of time.

use super::{Failure, NodeTarget, Run, at, say};
use crate::bmc::Deadline;
use crate::centre::site_deploy::watch::{self, Seen};
use std::time::Duration;

/// Poll the centre's records until `done`, a failure the node reported,
/// silence past the bound, or `deadline`.
pub(super) fn wait(
    ctx: &Run,
    node: &NodeTarget,
    what: &str,
    deadline: &Deadline,
    done: impl Fn(&Seen) -> bool,
) -> Result<(), Failure> {
    let mut last = String::new();
    loop {
        let seen = watch::seen(ctx.files, node.hostname()).map_err(at("following"))?;
        if seen.phase != last {
            say(&seen.phase);
            if seen.retrying
                && let Some(reason) = &seen.failed
            {
                say(&format!(
                    "its join failed ({reason}); its first-boot unit tries again"
                ));
            }
            last = seen.phase.clone();
        }
        if done(&seen) {
            return Ok(());
        }
        // A failed join is retried by the node: keep following it, up to
        // the limit.
        if let Some(reason) = seen.failed.filter(|_| !seen.retrying) {
            return Err(Failure {
                phase: "node".into(),
                error: anyhow::anyhow!("the node reported: {reason}"),
                recorded: true,
                unheard: false,
            });
        }
        if seen.silent {
            return Err(Failure {
                phase: seen.phase.clone(),
                error: anyhow::anyhow!(
                    "the node has reported nothing for {} (last: {}); see its console through the BMC",
                    humantime::format_duration(Duration::from_secs(seen.quiet_seconds)),
                    seen.phase
                ),
                recorded: false,
                unheard: seen.unheard,
            });
        }
        if deadline.passed() {
            return Err(Failure {
                phase: seen.phase.clone(),
                error: anyhow::anyhow!(
                    "waited {} for {what} (last: {}); raise {} if the hardware is slow",
                    humantime::format_duration(deadline.total()),
                    seen.phase,
                    deadline.setting().unwrap_or("the limit")
                ),
                recorded: false,
                unheard: false,
            });
        }
        deadline.sleep(ctx.limits.poll);
    }
}
