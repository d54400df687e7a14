//! Best-effort progress reports from a node to the join service, for the
//! installer and `dcn join`. Reports are queued and sent in order by a
//! thread of their own, so the work reported on never waits for the
//! network; a report that cannot be sent is dropped (the first failure is
//! logged, the next ones only at debug level). While a phase lasts, it is
//! sent again every heartbeat, so a hung node goes silent at the control
//! plane rather than looking busy. [`Reporter::finish`] gives the last
//! reports a bounded time to leave before the process ends or reboots.

use super::client::JoinClient;
use crate::secrets::Secret;
use crate::wire::{Phase, ProgressReport};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

/// How often a lasting phase is sent again (the control plane calls a node
/// silent after 10 minutes).
pub const HEARTBEAT: Duration = Duration::from_secs(30);
/// How long [`Reporter::finish`] waits for the last reports, at most.
pub const FINISH_WITHIN: Duration = Duration::from_secs(15);

enum Message {
    Report(ProgressReport),
    Credential(Secret),
    /// Answered once every report queued before it was sent (or dropped).
    Flush(SyncSender<()>),
}

/// Sends a node's progress. [`Reporter::off`] reports nothing (no bundle
/// to trust yet).
pub struct Reporter {
    hostname: String,
    queue: Option<SyncSender<Message>>,
    done: Option<Receiver<()>>,
}

impl Reporter {
    /// Report for `hostname` through `client`, authenticated with
    /// `credential`, repeating a lasting phase every `heartbeat`.
    pub fn new(
        client: JoinClient,
        hostname: &str,
        credential: Secret,
        heartbeat: Duration,
    ) -> Reporter {
        let (queue, inbox) = std::sync::mpsc::sync_channel(64);
        let (finished, done) = std::sync::mpsc::sync_channel(1);
        std::thread::spawn(move || {
            send_all(&client, credential, &inbox, heartbeat);
            let _ = finished.send(());
        });
        Reporter {
            hostname: hostname.to_string(),
            queue: Some(queue),
            done: Some(done),
        }
    }

    /// A reporter that reports nothing.
    pub fn off() -> Reporter {
        Reporter {
            hostname: String::new(),
            queue: None,
            done: None,
        }
    }

    fn queue(&self, m: Message) {
        if let Some(q) = &self.queue
            && let Err(TrySendError::Full(_)) = q.try_send(m)
        {
            tracing::debug!("progress reports are not leaving; one was dropped");
        }
    }

    /// The node is in `phase` (at step `detail`).
    pub fn phase(&self, phase: Phase, detail: Option<&str>) {
        self.queue(Message::Report(ProgressReport {
            hostname: self.hostname.clone(),
            phase,
            detail: detail.map(String::from),
            log: Vec::new(),
        }));
    }

    /// The node failed: the reason and its last lines of output.
    pub fn failed(&self, reason: &str, log: Vec<String>) {
        self.queue(Message::Report(ProgressReport {
            hostname: self.hostname.clone(),
            phase: Phase::Failed,
            detail: Some(reason.to_string()),
            log,
        }));
    }

    /// Report with `credential` from now on (the node secret, once the
    /// node joined).
    pub fn use_credential(&self, credential: Secret) {
        self.queue(Message::Credential(credential));
    }

    /// Wait until the reports queued so far have been sent (or dropped),
    /// for at most `within`. The join calls it before its request: once the
    /// host has joined, the centre takes only the node secret, so reports
    /// still queued with the join token would be refused.
    pub fn flush(&self, within: Duration) -> bool {
        let (done, flushed) = std::sync::mpsc::sync_channel(1);
        if self.queue.is_none() {
            return true;
        }
        self.queue(Message::Flush(done));
        flushed.recv_timeout(within).is_ok()
    }

    /// Stop: the reports queued so far get up to `within` to be sent.
    pub fn finish(mut self, within: Duration) {
        drop(self.queue.take());
        if let Some(done) = self.done.take() {
            let _ = done.recv_timeout(within);
        }
    }
}

/// The sending thread: each queued report in order, the last lasting one
/// again every `heartbeat`, until the queue is closed.
fn send_all(
    client: &JoinClient,
    mut credential: Secret,
    inbox: &Receiver<Message>,
    heartbeat: Duration,
) {
    let mut lasting: Option<ProgressReport> = None;
    let mut warned = false;
    let mut next_beat = Instant::now() + heartbeat;
    loop {
        let wait = next_beat.saturating_duration_since(Instant::now());
        let report = match inbox.recv_timeout(wait) {
            Ok(Message::Credential(c)) => {
                credential = c;
                continue;
            }
            Ok(Message::Flush(done)) => {
                let _ = done.try_send(());
                continue;
            }
            Ok(Message::Report(r)) => {
                lasting = (r.phase != Phase::Failed).then(|| r.clone());
                r
            }
            Err(RecvTimeoutError::Timeout) => match &lasting {
                Some(r) => r.clone(),
                None => {
                    next_beat = Instant::now() + heartbeat;
                    continue;
                }
            },
            Err(RecvTimeoutError::Disconnected) => return,
        };
        next_beat = Instant::now() + heartbeat;
        if let Err(e) = client.report(credential.expose(), &report) {
            if warned {
                tracing::debug!("progress report ({}) not sent: {e:#}", report.phase);
            } else {
                tracing::warn!(
                    "could not report progress ({}) to the control plane: {e:#}; the work goes on, and further failures to report are not logged",
                    report.phase
                );
                warned = true;
            }
        }
    }
}
