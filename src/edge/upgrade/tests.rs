use super::*;
use crate::host::FileSpec;
use crate::host::RecordingRunner;
use crate::host::command::{Cmd, CmdOutput};
use crate::wire::ReleaseFile;
use crate::wire::{UpgradeOrder, UpgradeProgress};
use sha2::{Digest, Sha256};
use std::sync::Arc;

fn release(id: &str, index: &str) -> EdgeRelease {
    EdgeRelease {
        id: id.into(),
        dcn_version: THIS.into(),
        dcn: ReleaseFile {
            name: "dcn".into(),
            sha256: hex::encode(Sha256::digest(b"dcn")),
            size: 3,
        },
        index: ReleaseFile {
            name: "Packages".into(),
            sha256: hex::encode(Sha256::digest(index.as_bytes())),
            size: index.len() as u64,
        },
    }
}

fn order(action: UpgradeAction, attempt: u32) -> UpgradeOrder {
    UpgradeOrder {
        action,
        release: Some(release("0.2.1-ab", "")),
        attempt,
        image_files: vec![],
    }
}

fn local(runs: Option<&str>, phase: Option<(UpgradePhase, u32)>) -> Local {
    Local {
        runs: runs.map(str::to_string),
        progress: phase.map(|(phase, attempt)| UpgradeProgress {
            release: "0.2.1-ab".into(),
            phase,
            attempt,
            detail: None,
            log: vec![],
            changes: vec![],
            restarted: vec![],
            guests_on_old_qemu: vec![],
        }),
    }
}

#[test]
fn work_is_what_the_order_asks_and_the_node_has_not_done_or_given_up_on() {
    use UpgradeAction::{Apply, Stage};
    use UpgradePhase::*;
    // Nothing ordered.
    assert!(!local(None, None).has_work(&UpgradeOrder::none()));
    // Staging: until staged.
    assert!(local(None, None).has_work(&order(Stage, 0)));
    assert!(local(None, Some((Staging, 0))).has_work(&order(Stage, 0)));
    assert!(!local(None, Some((Staged, 0))).has_work(&order(Stage, 0)));
    // Its turn: until applied and reported; a failed attempt waits for a
    // higher one.
    assert!(local(None, Some((Staged, 0))).has_work(&order(Apply, 1)));
    assert!(!local(None, Some((Failed, 1))).has_work(&order(Apply, 1)));
    assert!(local(None, Some((Failed, 1))).has_work(&order(Apply, 2)));
    assert!(
        local(Some("0.2.1-ab"), Some((Applying, 1))).has_work(&order(Apply, 1)),
        "applied but cut before its report: the report is made"
    );
    assert!(!local(Some("0.2.1-ab"), Some((Applied, 1))).has_work(&order(Apply, 1)));
    // Another release's failure does not hold this one up.
    let mut other = local(None, Some((Failed, 1)));
    other.progress.as_mut().unwrap().release = "0.2.0-cd".into();
    assert!(other.has_work(&order(Apply, 1)));
}

/// Serves a release's files from memory.
struct Served(std::collections::BTreeMap<String, Vec<u8>>);

impl fetch::Source for Served {
    fn piece(&self, name: &str, offset: u64) -> Result<(Vec<u8>, u64)> {
        let data = self.0.get(name).context("no such file")?;
        let start = offset as usize;
        Ok((data[start..].to_vec(), data.len() as u64))
    }
}

fn stanza(name: &str, version: &str, data: &[u8]) -> String {
    crate::host::apt::index::stanza(
        &format!("Package: {name}\nVersion: {version}\nArchitecture: amd64\n"),
        &format!("{name}_{version}_amd64.deb"),
        data.len() as u64,
        &hex::encode(Sha256::digest(data)),
    )
}

#[test]
fn staging_fetches_only_what_apt_wants_of_the_release_and_is_kept() {
    let root = tempfile::tempdir().unwrap();
    // apt would upgrade ovn-host and install nothing else; memcached is
    // in the release too, at the version the node has.
    let runner = Arc::new(RecordingRunner::answering(|cmd: &Cmd| {
        match (cmd.program.as_str(), cmd.args.iter().any(|a| a == "-s")) {
            ("apt-get", true) if cmd.args.iter().any(|a| a == "dist-upgrade") => {
                CmdOutput::ok("Inst ovn-host [23.03.1-1] (23.03.1-1+dcn1 local [amd64])\n")
            }
            ("dpkg-query", _) => {
                // Every edge package is installed.
                let out: String = cmd
                    .args
                    .iter()
                    .skip(2)
                    .map(|p| format!("{p} installed\n"))
                    .collect();
                CmdOutput::ok(out)
            }
            _ => CmdOutput::ok(""),
        }
    }));
    let host = Host::with_runner(root.path(), runner.clone(), false);
    let ovn = b"ovn-host package".to_vec();
    let memcached = b"memcached package".to_vec();
    let index = format!(
        "{}\n{}",
        stanza("ovn-host", "23.03.1-1+dcn1", &ovn),
        stanza("memcached", "1.6.18-1", &memcached)
    );
    let r = release("0.2.1-ab", &index);
    let served = Served(
        [
            ("Packages".to_string(), index.clone().into_bytes()),
            ("ovn-host_23.03.1-1+dcn1_amd64.deb".to_string(), ovn.clone()),
            ("memcached_1.6.18-1_amd64.deb".to_string(), memcached),
        ]
        .into_iter()
        .collect(),
    );
    // A file an earlier release left, which this one does not name.
    host.files
        .write(
            format!("{}/old_1_all.deb", stage::REPO),
            b"x",
            &FileSpec::public(),
        )
        .unwrap();
    let mut steps = Vec::new();
    let s = stage::packages(
        crate::recipes::for_tests(),
        &host,
        &served,
        &r,
        false,
        &mut |p| steps.push(p.to_string()),
    )
    .unwrap();
    assert_eq!(s.changes, ["ovn-host 23.03.1-1 → 23.03.1-1+dcn1"]);
    assert_eq!(steps, ["1 of 1 packages"]);
    let repo = host.files.list(stage::REPO).unwrap();
    assert_eq!(repo, ["Packages", "ovn-host_23.03.1-1+dcn1_amd64.deb"]);
    assert!(
        host.files
            .read_string(crate::host::apt::LOCAL_SOURCE_LIST)
            .unwrap()
            .unwrap()
            .contains(&format!("file:{} ./", stage::REPO)),
        "apt reads the staged repository"
    );
    // Staged: a second call asks apt nothing.
    let calls = runner.calls().len();
    let again = stage::packages(
        crate::recipes::for_tests(),
        &host,
        &served,
        &r,
        false,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(again, s);
    assert_eq!(runner.calls().len(), calls);
    assert_eq!(stage::staged(&host, &r).unwrap(), Some(s));
    assert_eq!(
        stage::staged(&host, &release("0.2.2-cd", "")).unwrap(),
        None
    );
}

#[test]
fn an_index_that_lacks_what_apt_chose_stops_staging() {
    let root = tempfile::tempdir().unwrap();
    let runner = Arc::new(RecordingRunner::answering(|cmd: &Cmd| {
        match cmd.args.iter().any(|a| a == "dist-upgrade") {
            true => CmdOutput::ok("Inst libfoo [1] (2 local [amd64])\n"),
            false => CmdOutput::ok(""),
        }
    }));
    let host = Host::with_runner(root.path(), runner, false);
    let index = stanza("ovn-host", "1", b"x");
    let r = release("0.2.1-ab", &index);
    let served = Served(
        [("Packages".to_string(), index.into_bytes())]
            .into_iter()
            .collect(),
    );
    let e = stage::packages(
        crate::recipes::for_tests(),
        &host,
        &served,
        &r,
        false,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(format!("{e:#}").contains("libfoo 2"), "{e:#}");
    assert_eq!(stage::staged(&host, &r).unwrap(), None);
}
