//! The lab's record of what it created (`DIR/lab.json`), written after every
//! creation so `dcn lab down` can remove exactly that, even after a
//! half-failed `lab up`.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Everything a lab consists of.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabState {
    /// Network namespaces created, router first.
    pub namespaces: Vec<String>,
    /// Overlay mount points, in mount order.
    pub mounts: Vec<PathBuf>,
    pub hosts: Vec<HostState>,
    /// The dcn binary and package repository bound into the containers.
    #[serde(default)]
    pub dcn_binary: PathBuf,
    #[serde(default)]
    pub repo: PathBuf,
}

/// One container.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostState {
    pub name: String,
    /// `controller` or `edge`.
    pub role: String,
    /// The edge site (for edges).
    pub site: Option<String>,
    pub netns: String,
    /// The router's interface toward this host (cut by `lab link`).
    pub router_link: String,
    pub address: String,
    pub rootfs: PathBuf,
    /// PID of systemd-nspawn, and of the container's systemd.
    pub nspawn_pid: Option<u32>,
    pub init_pid: Option<u32>,
}

impl LabState {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join("lab.json")
    }

    /// The lab in `dir`, or `None` when there is none.
    pub fn load(dir: &Path) -> Result<Option<LabState>> {
        let p = Self::path(dir);
        match std::fs::read_to_string(&p) {
            Ok(t) => serde_json::from_str(&t)
                .map(Some)
                .with_context(|| format!("{} is damaged", p.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
        }
    }

    pub fn save(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let p = Self::path(dir);
        let tmp = p.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &p).with_context(|| format!("writing {}", p.display()))?;
        Ok(())
    }

    pub fn host(&self, name: &str) -> Result<&HostState> {
        self.hosts.iter().find(|h| h.name == name).with_context(|| {
            format!(
                "the lab has no host {name:?}; its hosts: {}",
                self.hosts
                    .iter()
                    .map(|h| h.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    pub fn host_mut(&mut self, name: &str) -> Option<&mut HostState> {
        self.hosts.iter_mut().find(|h| h.name == name)
    }
}
