//! The lab's record of what it created (`DIR/lab.json`), written after every
//! creation so `dcn lab down` can remove exactly that, even after a
//! half-failed `lab up`.

use crate::host::{FileSpec, Files};
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
    /// Hosts got a copy of dcn of their own instead of the bound build.
    #[serde(default)]
    pub copy_dcn: bool,
    /// The bare-metal site's VMs (`--bare-metal N`), in their BMC container.
    #[serde(default)]
    pub vms: Vec<VmState>,
    /// The edge ISO bound into the control plane (with `--bare-metal`).
    #[serde(default)]
    pub edge_iso: Option<PathBuf>,
    /// The sushy-tools wheelhouse bound into the BMC container.
    #[serde(default)]
    pub wheelhouse: Option<PathBuf>,
}

/// One bare-metal node: a libvirt domain in its site's BMC container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VmState {
    /// The domain's name, which is also the node's host name.
    pub name: String,
    pub site: String,
    /// The container whose libvirt runs it (and whose emulator is its BMC).
    pub bmc_host: String,
    /// The domain's UUID: its Redfish system id.
    pub uuid: String,
    pub mac: String,
    /// The static address the inventory gives it.
    pub address: String,
    /// Its serial console, on this machine.
    pub serial_log: PathBuf,
    /// What deploying it should do.
    pub kind: VmKind,
}

/// The purpose of a bare-metal node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VmKind {
    /// Deploys and joins.
    Node,
    /// Has no disk: its installer fails ("no disk matches").
    NoDisk,
    /// The inventory gives a wrong BMC password for it: the BMC refuses.
    BadPassword,
}

/// One container.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostState {
    pub name: String,
    /// `controller`, `edge` or `bmc` (a bare-metal site's BMC emulator).
    pub role: String,
    /// The edge site (for edges).
    pub site: Option<String>,
    pub netns: String,
    /// The router's interface toward this host (cut by `lab link`).
    pub router_link: String,
    pub address: String,
    pub rootfs: PathBuf,
    /// The read-only layers under its writable one, topmost first (what
    /// `dcn lab replace` boots a blank host from).
    #[serde(default)]
    pub lowers: Vec<PathBuf>,
    /// PID of systemd-nspawn, and of the container's systemd.
    pub nspawn_pid: Option<u32>,
    pub init_pid: Option<u32>,
}

impl HostState {
    /// A host about to be created on `net`: no root filesystem or
    /// processes yet.
    pub fn planned(
        name: String,
        role: &str,
        site: Option<String>,
        net: &super::net::HostNet,
    ) -> HostState {
        HostState {
            name,
            role: role.into(),
            site,
            netns: net.netns.clone(),
            router_link: net.router_link.clone(),
            address: net.address.to_string(),
            rootfs: PathBuf::new(),
            lowers: Vec::new(),
            nspawn_pid: None,
            init_pid: None,
        }
    }
}

impl LabState {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join("lab.json")
    }

    /// The lab in `dir`, or `None` when there is none.
    pub fn load(files: &Files, dir: &Path) -> Result<Option<LabState>> {
        let p = Self::path(dir);
        match files.read_string(&p)? {
            Some(t) => serde_json::from_str(&t)
                .map(Some)
                .with_context(|| format!("{} is damaged", p.display())),
            None => Ok(None),
        }
    }

    /// Write the state to `dir` in one step (a cut leaves the old or the
    /// new one).
    pub fn save(&self, files: &Files, dir: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        files.write(Self::path(dir), text.as_bytes(), &FileSpec::public())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_older_files_still_load() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new("/", false);
        assert!(LabState::load(&files, dir.path()).unwrap().is_none());
        let state = LabState {
            namespaces: vec!["dcnlab-router".into(), "dcnlab-bm1".into()],
            vms: vec![VmState {
                name: "bm1-n1".into(),
                site: "bm1".into(),
                bmc_host: "bm1-bmc".into(),
                uuid: "0d1f2e3c-0000-4000-8000-000000000001".into(),
                mac: "52:54:00:f0:01:01".into(),
                address: "10.240.1.21".into(),
                serial_log: "/var/lib/dcn-lab/logs/bm1/bm1-n1.serial.log".into(),
                kind: VmKind::NoDisk,
            }],
            edge_iso: Some("/srv/dcn-edge.iso".into()),
            ..LabState::default()
        };
        state.save(&files, dir.path()).unwrap();
        let text = std::fs::read_to_string(LabState::path(dir.path())).unwrap();
        assert!(text.contains("\"serialLog\""), "{text}");
        assert!(text.contains("\"no-disk\""), "{text}");
        let back = LabState::load(&files, dir.path()).unwrap().unwrap();
        assert_eq!(back.vms, state.vms);
        assert_eq!(back.edge_iso, state.edge_iso);
        assert_eq!(back.namespaces, state.namespaces);

        // A lab.json written before bare-metal sites existed.
        std::fs::write(
            LabState::path(dir.path()),
            r#"{"namespaces":[],"mounts":[],"hosts":[]}"#,
        )
        .unwrap();
        let old = LabState::load(&files, dir.path()).unwrap().unwrap();
        assert!(old.vms.is_empty() && old.edge_iso.is_none() && old.wheelhouse.is_none());
    }
}
