//! A joining host's calls to the join service, each retried with jittered
//! backoff up to a deadline: reaching it (and the endpoints the host will
//! use, with a clock check) before the join, and waiting until the control
//! plane sees the host after it.

use super::client::{self, JoinClient, Refused};
use super::edge;
use crate::bundle::VerifiedBundle;
use anyhow::{Result, bail};
use std::time::{Duration, Instant, SystemTime};

/// Largest clock difference with the control plane that is accepted:
/// tokens expire and certificates start an hour back.
const MAX_SKEW: Duration = Duration::from_secs(300);

/// Reach the join service (bounded retries with jitter), check the clocks,
/// and check that every control-plane endpoint the host will use answers.
pub(super) fn reach(client: &JoinClient, bundle: &VerifiedBundle, deadline: Instant) -> Result<()> {
    let health = retry(
        deadline,
        &format!("the join service at {}", client.endpoint()),
        || client.health(),
    )?;
    let theirs = crate::timefmt::parse_rfc3339(&health.time)?;
    let now = SystemTime::now();
    let skew = now
        .duration_since(theirs)
        .or_else(|e| Ok::<_, anyhow::Error>(e.duration()))?;
    if skew > MAX_SKEW {
        bail!(
            "this host's clock is {} off the control plane's; tokens and certificates depend on time: fix NTP (chrony) and join again",
            crate::timefmt::rough(skew)
        );
    }
    if skew > Duration::from_secs(30) {
        tracing::warn!(
            "this host's clock is {}s off the control plane's; keep NTP running",
            skew.as_secs()
        );
    }
    for (name, target) in edge::endpoints(bundle) {
        retry(deadline, &format!("{name} at {target}"), || {
            edge::tcp_reachable(&target)
        })?;
    }
    Ok(())
}

/// Call `f` until it succeeds, with jittered exponential backoff up to the
/// deadline. Refusals by the join service are not retried, but for
/// `rate-limited`: this host asked too often, and may ask again soon.
pub(crate) fn retry<T>(
    deadline: Instant,
    what: &str,
    mut f: impl FnMut() -> Result<T>,
) -> Result<T> {
    let mut pause = Duration::from_secs(1);
    let mut attempt = 1;
    loop {
        match f() {
            Ok(v) => return Ok(v),
            // Slowed down, not refused: the service takes this host's
            // requests again within seconds.
            Err(e)
                if e.downcast_ref::<Refused>()
                    .is_some_and(|r| r.0.error != "rate-limited") =>
            {
                return Err(e);
            }
            Err(e) if e.downcast_ref::<client::Untrusted>().is_some() => return Err(e),
            Err(e) => {
                if Instant::now() + pause > deadline {
                    return Err(e.context(format!(
                        "{what} did not answer within the join timeout; check the WAN link and that the control plane's ports are open, then run `dcn join` again (this host was not changed by this attempt)"
                    )));
                }
                tracing::warn!(
                    "waiting for {what} (attempt {attempt}, next in {}s): {e:#}",
                    pause.as_secs()
                );
                let mut jitter = [0u8; 1];
                getrandom::fill(&mut jitter).ok();
                std::thread::sleep(pause + Duration::from_millis(jitter[0] as u64 * 4));
                pause = (pause * 2).min(Duration::from_secs(30));
                attempt += 1;
            }
        }
    }
}

/// Poll the join service until the control plane reports the node ready.
pub(super) fn wait_ready(
    client: &JoinClient,
    hostname: &str,
    secret: &crate::secrets::Secret,
    deadline: Instant,
) -> Result<()> {
    let mut last = None;
    loop {
        let status = retry(deadline, "the join service", || {
            client.node_status(hostname, secret.expose())
        })?;
        if last.as_ref() != Some(&status) {
            tracing::info!(
                "    compute service {}, cell {}, aggregate {}, placement {}",
                status.compute_service,
                if status.cell_mapped {
                    "mapped"
                } else {
                    "not yet"
                },
                if status.in_aggregate {
                    status.site.as_str()
                } else {
                    "not yet"
                },
                if status.resource_provider {
                    "yes"
                } else {
                    "not yet"
                }
            );
        }
        if status.ready() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "the control plane does not report {hostname} ready in time (last: compute service {}, in aggregate {}, resource provider {}); see `journalctl -u nova-compute` here and `journalctl -u dcn-join` on the control plane",
                status.compute_service,
                status.in_aggregate,
                status.resource_provider
            );
        }
        last = Some(status);
        std::thread::sleep(Duration::from_secs(3));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ErrorReply;

    fn refused(error: &str) -> anyhow::Error {
        Refused(ErrorReply {
            error: error.into(),
            message: "no".into(),
        })
        .into()
    }

    #[test]
    fn a_rate_limited_request_is_tried_again_and_a_refusal_is_not() {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut calls = 0;
        let r = retry(deadline, "the join service", || {
            calls += 1;
            if calls < 3 {
                Err(refused("rate-limited"))
            } else {
                Ok(calls)
            }
        });
        assert_eq!(r.unwrap(), 3);
        let mut calls = 0;
        let r: Result<()> = retry(deadline, "the join service", || {
            calls += 1;
            Err(refused("token-expired"))
        });
        assert!(r.is_err());
        assert_eq!(calls, 1);
    }
}
