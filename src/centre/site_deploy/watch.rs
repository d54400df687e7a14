//! What the deploy reads and writes of a node's progress at the centre
//! ([`crate::centre::sites::progress`], where the join service keeps what nodes
//! report) and of its place in the registry. A node is placed when the
//! registry has it in its zone *and* its record's last word is `placed`
//! (its join finished and the centre saw both planes up): a node cut off
//! in its zone and running its join again after the reboot is not placed.

use crate::centre::sites::progress::{self, Phase};
use crate::centre::sites::{NodeState, Registry};
use crate::host::Files;
use anyhow::{Result, bail};
use std::time::SystemTime;

/// A node as the deploy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The phase it is in (`-` with no record).
    pub phase: String,
    /// Nothing recorded at all.
    pub none: bool,
    /// The installer reported the disk written after the last time the
    /// deploy inserted its media: the disk holds the installed system.
    pub on_disk: bool,
    /// The installed system booted (its first-boot join reported) after
    /// the last insert.
    pub booted: bool,
    /// In its zone and finished: the registry has it in its site's
    /// aggregate and the last thing recorded is `placed`.
    pub placed: bool,
    /// The last thing recorded is a failure, with this reason.
    pub failed: Option<String>,
    /// The failure came from the installed system's join, which its
    /// first-boot unit retries by itself (every 30 s until it joined).
    pub retrying: bool,
    /// Not done, and silent past the bound.
    pub silent: bool,
    /// Silent, and nothing came from the node since the deploy powered it
    /// on (its boot hung, or never started).
    pub unheard: bool,
    /// Seconds since anything was recorded.
    pub quiet_seconds: u64,
}

/// How `hostname` stands now.
pub fn seen(files: &Files, hostname: &str) -> Result<Seen> {
    let in_zone = Registry::new(files)
        .node(hostname)?
        .is_some_and(|n| n.state == NodeState::Placed);
    let now = SystemTime::now();
    let Some(rec) = progress::read(files, hostname)? else {
        // No record at all: a node that joined before dcn kept them.
        return Ok(Seen::unrecorded(in_zone));
    };
    let current = rec.current().map(|e| e.phase);
    let failed = (current == Some(Phase::Failed)).then(|| {
        rec.last_error
            .as_ref()
            .map_or_else(|| "(no reason given)".to_string(), |e| e.reason.clone())
    });
    let retrying = failed.is_some()
        && rec
            .last_error
            .as_ref()
            .and_then(|e| e.phase)
            .is_some_and(is_installed_join);
    let quiet_seconds = crate::timefmt::parse_rfc3339(&rec.updated_at)
        .ok()
        .and_then(|t| now.duration_since(t).ok())
        .map_or(0, |d| d.as_secs());
    Ok(Seen {
        phase: rec.shown_phase(now),
        none: rec.history.is_empty(),
        on_disk: since_last_insert(&rec, |p| p == Phase::DiskWritten),
        booted: since_last_insert(&rec, |p| is_installed_join(p) || p == Phase::Placed),
        placed: in_zone && current == Some(Phase::Placed),
        failed,
        retrying,
        silent: rec.is_silent(now),
        unheard: rec.is_silent(now) && current == Some(Phase::PoweredOn),
        quiet_seconds,
    })
}

impl Seen {
    /// A node with no progress record: placed if the registry says so.
    fn unrecorded(in_zone: bool) -> Seen {
        Seen {
            phase: "-".into(),
            none: true,
            on_disk: false,
            booted: false,
            placed: in_zone,
            failed: None,
            retrying: false,
            silent: false,
            unheard: false,
            quiet_seconds: 0,
        }
    }
}

/// A phase of the installed system's join, which its first-boot unit
/// runs (and retries by itself, every 30 s until it joined).
fn is_installed_join(p: Phase) -> bool {
    matches!(
        p,
        Phase::FirstBoot
            | Phase::JoinStarted
            | Phase::JoinStep
            | Phase::Joined
            | Phase::InZone
            | Phase::JoinFinished
    )
}

/// Whether a phase that `is` was recorded after the deploy last inserted
/// its media (or ever, when it never did).
fn since_last_insert(rec: &progress::ProgressRecord, is: impl Fn(Phase) -> bool) -> bool {
    rec.history
        .iter()
        .rev()
        .take_while(|e| e.phase != Phase::MediaInserted)
        .any(|e| is(e.phase))
}

/// Record a phase the deploy caused (`media-inserted`, `powered-on`,
/// `media-ejected`).
pub fn record(files: &Files, site: &str, hostname: &str, phase: Phase, detail: &str) -> Result<()> {
    if phase == Phase::Failed {
        bail!("internal error: failures are recorded with `fail`");
    }
    let detail = (!detail.is_empty()).then_some(detail);
    progress::record_at_centre(files, site, hostname, phase, detail, &[])?;
    Ok(())
}

/// Record that the deploy failed `hostname` in `stretch` for `reason`.
pub fn fail(
    files: &Files,
    site: &str,
    hostname: &str,
    stretch: &str,
    error: &anyhow::Error,
) -> Result<()> {
    let detail = format!("site deploy, {stretch}: {}", cause_first(error));
    progress::record_at_centre(files, site, hostname, Phase::Failed, Some(&detail), &[])?;
    Ok(())
}

/// `error` with its most specific cause first, then what dcn was doing:
/// the centre keeps the first [`crate::wire::MAX_DETAIL`]
/// characters of a failure, and "401 Unauthorized" matters more than
/// "logging in to the BMC at …".
fn cause_first(error: &anyhow::Error) -> String {
    let chain: Vec<String> = error.chain().map(|e| e.to_string()).collect();
    match chain.split_last() {
        Some((cause, doing)) if !doing.is_empty() => {
            format!("{cause} (while {})", doing.join(": "))
        }
        _ => chain.concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_at_the_centre_starts_with_its_cause() {
        let e = anyhow::anyhow!("the BMC answered 401 Unauthorized to GET /redfish/v1/Systems")
            .context("listing the BMC's systems")
            .context("logging in to the BMC at https://10.0.0.5/");
        assert_eq!(
            cause_first(&e),
            "the BMC answered 401 Unauthorized to GET /redfish/v1/Systems (while logging in to the BMC at https://10.0.0.5/: listing the BMC's systems)"
        );
        assert_eq!(cause_first(&anyhow::anyhow!("no disk")), "no disk");
    }

    /// Record `phase` as the node would (through the join service's store).
    fn report(files: &Files, phase: Phase) {
        let lock = Registry::new(files).lock().unwrap();
        let store = progress::ProgressStore::new(files);
        let mut rec = progress::read(files, "n1").unwrap().unwrap();
        rec.apply(phase, None, &[], SystemTime::now());
        store.save(&lock, &rec).unwrap();
    }

    #[test]
    fn placed_means_in_its_zone_and_finished_not_only_in_its_zone() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        record(&files, "edge1", "n1", Phase::MediaInserted, "Cd").unwrap();
        for p in [Phase::FirstBoot, Phase::JoinStarted, Phase::JoinStep] {
            report(&files, p);
        }
        Registry::new(&files)
            .save_node(&crate::centre::sites::NodeRecord::for_test(
                "n1",
                "edge1",
                NodeState::Placed,
            ))
            .unwrap();
        // In its zone, its join still running: not placed.
        report(&files, Phase::InZone);
        assert!(!seen(&files, "n1").unwrap().placed);
        report(&files, Phase::JoinFinished);
        assert!(
            !seen(&files, "n1").unwrap().placed,
            "both planes not seen yet"
        );
        report(&files, Phase::Placed);
        assert!(seen(&files, "n1").unwrap().placed);
        // Power cut: it boots and joins again; the registry still has it
        // in its zone, but it is not finished until it says so again.
        report(&files, Phase::FirstBoot);
        let s = seen(&files, "n1").unwrap();
        assert!(!s.placed && s.booted, "{s:?}");
        assert_eq!(
            crate::centre::site_deploy::plan::start(&s),
            crate::centre::site_deploy::plan::Start::Follow
        );
    }

    #[test]
    fn the_disk_counts_only_after_the_last_insert_and_failures_carry_their_reason() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        let s = seen(&files, "n1").unwrap();
        assert!(s.none && !s.on_disk && !s.placed && s.failed.is_none());

        record(&files, "edge1", "n1", Phase::MediaInserted, "Cd").unwrap();
        record(&files, "edge1", "n1", Phase::PoweredOn, "On").unwrap();
        assert!(!seen(&files, "n1").unwrap().on_disk);
        progress::record_at_centre(&files, "edge1", "n1", Phase::MediaEjected, None, &[]).unwrap();
        // The installer's own reports come through the join service; the
        // store takes them the same way.
        let lock = Registry::new(&files).lock().unwrap();
        let store = progress::ProgressStore::new(&files);
        let mut rec = progress::read(&files, "n1").unwrap().unwrap();
        rec.apply(Phase::DiskWritten, None, &[], SystemTime::now());
        store.save(&lock, &rec).unwrap();
        drop(lock);
        let s = seen(&files, "n1").unwrap();
        assert!(
            s.on_disk && !s.booted && !s.none && s.failed.is_none(),
            "{s:?}"
        );
        let lock = Registry::new(&files).lock().unwrap();
        rec.apply(Phase::FirstBoot, None, &[], SystemTime::now());
        store.save(&lock, &rec).unwrap();
        drop(lock);
        assert!(seen(&files, "n1").unwrap().booted);
        // A join failure after the first boot: the node retries it.
        let lock = Registry::new(&files).lock().unwrap();
        rec.apply(Phase::JoinStep, Some("preflight"), &[], SystemTime::now());
        rec.apply(
            Phase::Failed,
            Some("preflight found problems"),
            &[],
            SystemTime::now(),
        );
        store.save(&lock, &rec).unwrap();
        drop(lock);
        let s = seen(&files, "n1").unwrap();
        assert!(s.failed.is_some() && s.retrying, "{s:?}");

        // A new insert: the disk written before it no longer counts.
        record(&files, "edge1", "n1", Phase::MediaInserted, "Cd").unwrap();
        let s = seen(&files, "n1").unwrap();
        assert!(!s.on_disk && !s.booted, "{s:?}");

        fail(
            &files,
            "edge1",
            "n1",
            "powered-on",
            &anyhow::anyhow!("the BMC refused the login"),
        )
        .unwrap();
        let s = seen(&files, "n1").unwrap();
        assert!(
            s.failed
                .as_deref()
                .unwrap()
                .contains("the BMC refused the login"),
            "{s:?}"
        );
        assert!(
            !s.retrying,
            "the deploy's own failures are not retried by the node"
        );
        assert!(record(&files, "edge1", "n1", Phase::Failed, "x").is_err());
    }
}
