use super::*;
use crate::centre::sites::{NodeRecord, NodeState, Site, TokenRecord};
use crate::timefmt::rfc3339;
use crate::wire::Phase;
use std::time::Duration;

struct Centre {
    dir: tempfile::TempDir,
    host: Host,
}

impl Centre {
    fn new() -> Centre {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::system(dir.path(), false);
        let reg = Registry::new(&host.files);
        let now = SystemTime::now();
        for (name, revoked) in [("edge1", false), ("edge2", false), ("gone", true)] {
            reg.save_site(&Site {
                name: name.into(),
                created_at: rfc3339(now - Duration::from_secs(60)),
                aggregate_id: Some(1),
                revoked_at: revoked.then(|| rfc3339(now)),
            })
            .unwrap();
        }
        Centre { dir, host }
    }

    fn token(&self, site: &str, ttl: i64, max_uses: u32) -> String {
        let t = JoinToken::generate();
        let now = SystemTime::now();
        Registry::new(&self.host.files)
            .save_token(&TokenRecord {
                id: t.id.clone(),
                hash: t.hash(),
                site: site.into(),
                created_at: rfc3339(now),
                not_after: rfc3339(if ttl >= 0 {
                    now + Duration::from_secs(ttl as u64)
                } else {
                    now - Duration::from_secs(ttl.unsigned_abs())
                }),
                max_uses,
                uses: 0,
            })
            .unwrap();
        t.expose_full()
    }

    fn joined(&self, hostname: &str, site: &str, secret: &str) {
        Registry::new(&self.host.files)
            .save_node(&NodeRecord {
                joined_at: rfc3339(SystemTime::now()),
                secret_hash: if secret.is_empty() {
                    String::new()
                } else {
                    crate::secrets::stored_hash(secret)
                },
                ..NodeRecord::for_test(hostname, site, NodeState::Joined)
            })
            .unwrap();
    }

    fn report(&self, bearer: Option<&str>, hostname: &str, phase: Phase) -> Result<Phase, String> {
        record(
            &self.host,
            bearer,
            &ProgressReport {
                hostname: hostname.into(),
                phase,
                detail: None,
                log: vec![],
            },
            SystemTime::now(),
        )
        .map(|a| a.phase)
        .map_err(|r| format!("{} {} {}", r.status, r.reply.error, r.reply.message))
    }

    /// Every progress file with its contents.
    fn snapshot(&self) -> Vec<(String, String)> {
        let dir = self.dir.path().join("var/lib/dcn/progress");
        let mut v: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .map(|e| {
                        (
                            e.file_name().to_string_lossy().into_owned(),
                            std::fs::read_to_string(e.path()).unwrap(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// `report` is refused with `error`, and nothing is written.
    fn refused(&self, bearer: Option<&str>, hostname: &str, phase: Phase, error: &str) -> String {
        let before = self.snapshot();
        let r = self.report(bearer, hostname, phase).unwrap_err();
        assert!(r.contains(&format!(" {error} ")), "expected {error}: {r}");
        assert_eq!(self.snapshot(), before, "a refusal wrote nothing ({r})");
        r
    }
}

#[test]
fn a_valid_token_reports_for_hosts_of_its_site() {
    let c = Centre::new();
    let token = c.token("edge1", 3600, 2);
    assert_eq!(
        c.report(Some(&token), "edge1-n1", Phase::InstallerStarted),
        Ok(Phase::InstallerStarted)
    );
    let p = ProgressStore::new(&c.host.files)
        .get("edge1-n1")
        .unwrap()
        .unwrap();
    assert_eq!(p.site, "edge1");
    assert_eq!(p.token_id.as_deref(), token.split('.').next());
}

/// Another site's token cannot squat a host's name: what only a token
/// wrote is dropped when the host's real site reports; what the control
/// plane recorded (a site deploy) keeps the host to its site.
#[test]
fn a_token_of_another_site_cannot_squat_a_host_name() {
    let c = Centre::new();
    let squatter = c.token("edge2", 3600, 5);
    let own = c.token("edge1", 3600, 5);
    c.report(Some(&squatter), "edge1-n1", Phase::Failed)
        .unwrap();
    assert_eq!(
        c.report(Some(&own), "edge1-n1", Phase::InstallerStarted),
        Ok(Phase::InstallerStarted)
    );
    let p = ProgressStore::new(&c.host.files)
        .get("edge1-n1")
        .unwrap()
        .unwrap();
    assert_eq!(p.site, "edge1");
    assert_eq!(p.history.len(), 1, "the squatter's report is gone: {p:?}");
    assert_eq!(p.last_error, None);

    let registry = Registry::new(&c.host.files);
    let lock = registry.lock().unwrap();
    ProgressStore::new(&c.host.files)
        .record_centre(&lock, "edge1", "edge1-n2", Phase::PoweredOn, None, &[])
        .unwrap();
    drop(lock);
    let r = c.refused(
        Some(&squatter),
        "edge1-n2",
        Phase::DiskWritten,
        "node-in-other-site",
    );
    assert!(r.contains("dcn node remove edge1-n2"), "{r}");
}

#[test]
fn bad_credentials_and_phases_are_refused_without_writing() {
    let c = Centre::new();
    let good = c.token("edge1", 3600, 5);
    c.refused(None, "n1", Phase::FirstBoot, "token-unknown");
    c.refused(Some("garbage"), "n1", Phase::FirstBoot, "token-unknown");
    let unknown = JoinToken::generate().expose_full();
    c.refused(Some(&unknown), "n1", Phase::FirstBoot, "token-unknown");
    let (id, _) = good.split_once('.').unwrap();
    let forged = format!("{id}.{}", "a".repeat(32));
    c.refused(Some(&forged), "n1", Phase::FirstBoot, "token-unknown");
    let expired = c.token("edge1", -60, 5);
    let r = c.refused(Some(&expired), "n1", Phase::FirstBoot, "token-expired");
    assert!(r.contains("dcn bundle export --site edge1"), "{r}");
    let revoked = c.token("gone", 3600, 5);
    c.refused(Some(&revoked), "n1", Phase::FirstBoot, "site-revoked");
    for p in [
        Phase::Joined,
        Phase::Placed,
        Phase::MediaInserted,
        Phase::PoweredOn,
        Phase::MediaEjected,
    ] {
        let r = c.refused(Some(&good), "n1", p, "bad-request");
        assert!(r.contains("records"), "{r}");
    }
    c.refused(Some(&good), "../etc/x", Phase::FirstBoot, "bad-request");
    c.refused(Some(&good), "", Phase::FirstBoot, "bad-request");
    assert!(c.snapshot().is_empty());
}

#[test]
fn a_token_reports_for_at_most_max_uses_host_names() {
    let c = Centre::new();
    let token = c.token("edge1", 3600, 2);
    c.report(Some(&token), "a", Phase::InstallerStarted)
        .unwrap();
    c.report(Some(&token), "b", Phase::InstallerStarted)
        .unwrap();
    let r = c.refused(Some(&token), "c", Phase::InstallerStarted, "token-used-up");
    assert!(
        r.contains("2 host(s)") && r.contains("dcn site status edge1"),
        "{r}"
    );
    // Its own hosts go on reporting.
    c.report(Some(&token), "a", Phase::DiskWritten).unwrap();
    // A record the deploy made is the token's once the node reports with it.
    crate::centre::sites::progress::record_at_centre(
        &c.host.files,
        "edge1",
        "d",
        Phase::PoweredOn,
        None,
        &[],
    )
    .unwrap();
    c.refused(Some(&token), "d", Phase::InstallerStarted, "token-used-up");
    let fresh = c.token("edge1", 3600, 1);
    c.report(Some(&fresh), "d", Phase::InstallerStarted)
        .unwrap();
    c.refused(Some(&fresh), "e", Phase::InstallerStarted, "token-used-up");
}

#[test]
fn once_joined_only_the_node_secret_is_accepted() {
    let c = Centre::new();
    let token = c.token("edge1", 3600, 5);
    c.report(Some(&token), "n1", Phase::FirstBoot).unwrap();
    c.joined("n1", "edge1", "s3cret");
    let r = c.refused(Some(&token), "n1", Phase::JoinStep, "token-unknown");
    assert!(
        r.contains("node secret") && r.contains("dcn node remove n1"),
        "{r}"
    );
    c.refused(Some("wrong"), "n1", Phase::JoinStep, "token-unknown");
    c.refused(None, "n1", Phase::JoinStep, "token-unknown");
    assert_eq!(
        c.report(Some("s3cret"), "n1", Phase::JoinStep),
        Ok(Phase::JoinStep)
    );
    // A node secret is good for its own host name only.
    c.joined("n2", "edge1", "other");
    c.refused(Some("s3cret"), "n2", Phase::JoinStep, "token-unknown");
    // A removed or revoked node's secret is dead (its hash is emptied).
    c.joined("n3", "edge1", "");
    c.refused(Some(""), "n3", Phase::JoinStep, "token-unknown");
    c.refused(Some(&token), "n3", Phase::JoinStep, "token-unknown");
    // A node of a revoked site reports nothing.
    c.joined("n4", "gone", "four");
    c.refused(Some("four"), "n4", Phase::JoinStep, "site-revoked");
}
