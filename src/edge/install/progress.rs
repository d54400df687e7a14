//! The installer's progress: lines on stdout (the journal) and on each
//! console, the last of them kept for a failure report, and its steps
//! reported to the control plane once the node's network is up.

use super::network;
use crate::edge::join::reporter::{self, Reporter};
use crate::host::{Files, Runner};
use crate::wire::Phase;
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How many of the last progress lines a failure report carries.
const KEPT_LINES: usize = 20;

/// Progress lines on stdout and on each console (the last ones kept for a
/// failure report), and steps reported to the control plane. Each line
/// opens the console anew: a getty starting on it hangs up descriptors
/// opened before.
pub(super) struct Progress {
    consoles: Vec<PathBuf>,
    pub started: Instant,
    lines: VecDeque<String>,
    reporter: Reporter,
}

impl Progress {
    pub fn new(consoles: &[PathBuf]) -> Progress {
        Progress {
            consoles: consoles.to_vec(),
            started: Instant::now(),
            lines: VecDeque::new(),
            reporter: Reporter::off(),
        }
    }

    /// The installer is at `step` (reported, not printed).
    pub fn step(&self, step: &str) {
        self.reporter.phase(Phase::InstallerStarted, Some(step));
    }

    /// Report the last phase: `disk-written`, or `failed` (`detail` is the
    /// reason) with the last lines; give the reports a bounded time to
    /// leave, and report no more.
    pub fn finish_reports(&mut self, phase: Phase, detail: &str) {
        if phase == Phase::Failed {
            self.reporter
                .failed(detail, self.lines.iter().cloned().collect());
        } else {
            self.reporter.phase(phase, Some(detail));
        }
        std::mem::replace(&mut self.reporter, Reporter::off()).finish(reporter::FINISH_WITHIN);
    }

    pub fn say(&mut self, msg: &str) {
        let line = format!(
            "[{:6.1}s] dcn install: {msg}",
            self.started.elapsed().as_secs_f64()
        );
        for l in line.lines() {
            if self.lines.len() == KEPT_LINES {
                self.lines.pop_front();
            }
            self.lines.push_back(l.to_string());
        }
        println!("{line}");
        let _ = std::io::stdout().flush();
        // A console is a character device, written as a stream.
        for c in &self.consoles {
            if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(c) {
                let _ = write!(f, "{}\r\n", line.replace('\n', "\r\n"));
            }
        }
    }
}

/// Bring up the node's network in the live system and start reporting to
/// the bundle's join service with its token. Neither may stop the install:
/// a failure is said, and the install goes on unreported.
pub(super) fn start_reporting(
    runner: &dyn Runner,
    host: &Files,
    node: &crate::config::NodeConfig,
    bundle: &crate::bundle::VerifiedBundle,
    progress: &mut Progress,
) {
    let links = network::links(host, Path::new("/sys/class/net"));
    match network::bring_up(runner, &node.interfaces, &links) {
        Ok(said) => {
            for line in said {
                progress.say(&format!("network: {line}"));
            }
        }
        Err(e) => progress.say(&format!(
            "the node's network did not come up in the live system ({e:#}); the install goes on, but the control plane may not see its progress"
        )),
    }
    let endpoint = bundle.manifest.control_plane.join_endpoint.as_str();
    match crate::edge::join::client::JoinClient::new(endpoint, &bundle.trusted_pem()) {
        Ok(client) => {
            progress.reporter = Reporter::new(
                client,
                node.hostname.as_str(),
                crate::secrets::Secret::new(bundle.token.expose_full()),
                reporter::HEARTBEAT,
            );
            progress.say(&format!("reporting progress to {endpoint}"));
            progress.step("bundle verified");
        }
        Err(e) => progress.say(&format!(
            "progress is not reported to the control plane ({e:#}); the install goes on"
        )),
    }
}
