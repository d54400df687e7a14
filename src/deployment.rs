//! The record of what dcn set up on this host
//! (`/var/lib/dcn/deployment.json`): roles, services and identity. `dcn
//! status` and `dcn reset` read it; `standalone init` and `join` write it
//! before they install anything, so a half-done setup can be shown and
//! removed too.

use crate::engine::{Context, Step};
use crate::host::{FileSpec, Files};
use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

pub const DEPLOYMENT_FILE: &str = "/var/lib/dcn/deployment.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Deployment {
    /// `controller`, `compute`, `edge`.
    pub roles: Vec<String>,
    /// Services of those roles, in start order.
    pub services: Vec<String>,
    pub hostname: String,
    pub address: String,
    /// The edge site, for joined hosts.
    #[serde(default)]
    pub site: Option<String>,
}

impl Deployment {
    /// What this host runs, or `None` when dcn set up nothing here.
    pub fn load(files: &Files) -> Result<Option<Deployment>> {
        match files.read_string(DEPLOYMENT_FILE)? {
            None => Ok(None),
            Some(t) => serde_json::from_str(&t)
                .map(Some)
                .with_context(|| format!("{DEPLOYMENT_FILE} is damaged")),
        }
    }

    fn text(&self) -> String {
        serde_json::to_string_pretty(self).expect("serialisable") + "\n"
    }
}

/// The step that writes the record.
pub struct Record(pub Deployment);

impl Step for Record {
    /// Only files written through `Files`, which fsyncs them.
    fn needs_flush(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "record.deployment".into()
    }
    fn describe(&self) -> String {
        format!("record this host's roles in {DEPLOYMENT_FILE}")
    }
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        ctx.host.files.matches(
            DEPLOYMENT_FILE,
            self.0.text().as_bytes(),
            &FileSpec::secret(),
        )
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        ctx.host.files.write(
            DEPLOYMENT_FILE,
            self.0.text().as_bytes(),
            &FileSpec::secret(),
        )?;
        Ok(())
    }
}

/// The control plane's effective config, saved by init for later commands
/// (`bundle export` needs the region, join port and edge settings).
pub const CONFIG_FILE: &str = "/var/lib/dcn/config.yaml";

/// The step that saves it.
pub struct SaveConfig(pub String);

impl Step for SaveConfig {
    /// Only files written through `Files`, which fsyncs them.
    fn needs_flush(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "record.config".into()
    }
    fn describe(&self) -> String {
        format!("save the effective config to {CONFIG_FILE}")
    }
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        ctx.host
            .files
            .matches(CONFIG_FILE, self.0.as_bytes(), &FileSpec::secret())
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        ctx.host
            .files
            .write(CONFIG_FILE, self.0.as_bytes(), &FileSpec::secret())?;
        Ok(())
    }
}

/// The saved control-plane config, or an error saying init has not run.
/// (Its service keys were checked against the catalogue before it was
/// saved.)
pub fn saved_config(files: &Files) -> Result<crate::config::StandaloneConfig> {
    let text = files.read_string(CONFIG_FILE)?.with_context(|| {
        format!("{CONFIG_FILE} is missing: run `dcn standalone init` on this host first")
    })?;
    Ok(crate::config::read_standalone(&text, CONFIG_FILE)?)
}
