//! `dcn standalone init`: turn this host into the control plane, as phases
//! of steps run by the [`crate::engine`].

pub mod identity;
pub mod secrets;

use crate::config::StandaloneConfig;
use crate::engine::{self, Outcome, RunReport};
use crate::host::Host;
use crate::pki::Pin;
use anyhow::Result;

/// The phases `init` can run, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PhaseName {
    Secrets,
}

/// What `init` did.
pub struct InitReport {
    pub run: RunReport,
    /// The CA pin, once the CA exists.
    pub ca_pin: Option<Pin>,
}

/// Run `init` (up to and including `until`) on `host`.
pub fn init(config: &StandaloneConfig, host: &Host, until: PhaseName) -> Result<InitReport> {
    let identity = identity::Identity::resolve(config, host.files.root())?;
    tracing::info!(
        "control plane {} at {}",
        identity.hostname,
        identity.address
    );
    let mut phases = vec![secrets::phase(&identity)];
    phases.truncate(until as usize + 1);
    let run = engine::run(&phases, host)?;
    let ca_pin = match host.files.read_string(crate::paths::CA_CERT)? {
        Some(pem) if !pem.is_empty() => Some(Pin::of_cert_pem(&pem)?),
        _ => None,
    };
    Ok(InitReport { run, ca_pin })
}

impl InitReport {
    /// Steps applied (or, in a dry run, that would be).
    pub fn changed_steps(&self) -> Vec<&str> {
        self.run
            .steps
            .iter()
            .filter(|(_, o)| *o != Outcome::AlreadyDone)
            .map(|(n, _)| n.as_str())
            .collect()
    }
}
