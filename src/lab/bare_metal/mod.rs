//! Bare-metal edges in the lab (`dcn lab up --bare-metal N`): one extra
//! site, `bm1`, on its own routed /24 after the container edge sites and
//! spares. Its namespace's uplink is a bridge (see
//! [`super::net::bridge_uplink`]) that carries the BMC container's address
//! (.5) and the taps of real qemu VMs (.20+k), so the VMs sit on the site's
//! routed subnet behind the lab's router, like servers in a rack.
//!
//! The container `bm1-bmc` (role `bmc`, from the base and edge layers:
//! libvirt, qemu and python3-libvirt are there) runs libvirtd and the
//! sushy-tools Redfish emulator with its libvirt driver: virtual-media
//! insert, boot override and power-on really boot a VM from an ISO URL. The
//! lab writes a `SiteInventory` for the nodes into the control plane, with
//! the BMC's pin and password files, for `dcn site deploy` (which the lab
//! never runs itself).
//!
//! The pieces: [`domain`] (the VMs' libvirt XML), [`emulator`] (the BMC
//! container, seeded before boot and set up after), [`inventory`] (what
//! `site deploy` reads) and [`wheelhouse`] (sushy-tools' wheels, fetched on
//! this machine once: the lab's namespaces have no route out).
//! Measurements and pitfalls behind these choices: docs/site-deploy.md.

mod domain;
mod emulator;
mod inventory;
mod wheelhouse;

pub use emulator::{seed as seed_bmc, set_up as set_up_bmc, vm_power};
pub use inventory::{CP_INVENTORY, HOST_INVENTORY, seed_control_plane};
pub use wheelhouse::{SUSHY_TOOLS_VERSION, ensure as ensure_wheelhouse};

use super::UpOptions;
use super::net::HostNet;
use super::state::{LabState, VmKind, VmState};
use crate::host::Files;
use crate::pki::{CertificateAuthority, LeafRequest, Pin, Usage};
use crate::secrets::Secret;
use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

/// The bare-metal site.
pub const SITE: &str = "bm1";
/// Its BMC container (HostState role [`BMC_ROLE`]).
pub const BMC_HOST: &str = "bm1-bmc";
pub const BMC_ROLE: &str = "bmc";
/// The most nodes `--bare-metal` takes (each is a 3 GiB VM).
pub const MAX_NODES: u8 = 4;
/// Where the Redfish emulator listens, on the BMC's address.
pub const BMC_PORT: u16 = 8000;
pub const BMC_USER: &str = "admin";
/// Where `--edge-iso` appears in the control plane (the inventory's `image`).
pub const CP_EDGE_ISO: &str = "/var/lib/dcn/images/dcn-edge.iso";
/// The port `site deploy` serves the per-node ISOs on (the inventory's
/// `media.listen`, on the control plane's address).
pub const MEDIA_PORT: u16 = 8443;
/// The default `--edge-iso`: where the image test (tests/image_e2e.rs)
/// builds the ISO.
pub const DEFAULT_EDGE_ISO: &str = "/var/cache/dcn-image/e2e/dcn-edge.iso";
/// Where DIR/logs/bm1 appears in the BMC container (serial logs).
const LOG_MOUNT: &str = "/var/log/dcn-bm";
/// Where the wheelhouse appears in the BMC container.
const WHEELHOUSE_MOUNT: &str = "/srv/wheelhouse";
/// Host part of the BMC's address; nodes get 20 + their slot.
const BMC_OCTET: u8 = 5;
const NODE_OCTET_BASE: u8 = 20;
/// Slots of the failure nodes: fixed, so they never move the real ones.
const NO_DISK_SLOT: u8 = 8;
const BAD_PASSWORD_SLOT: u8 = 9;
/// Memory of a node that installs, and of one that never gets that far.
const NODE_MIB: u32 = 3072;
const SMALL_MIB: u32 = 1024;

/// One bare-metal node: a libvirt domain behind the site's BMC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vm {
    /// The domain's name and the node's host name.
    pub name: String,
    pub kind: VmKind,
    /// Stable: derived from the name (the emulator's allowed instances).
    pub uuid: String,
    pub mac: String,
    pub address: Ipv4Addr,
    pub memory_mib: u32,
}

impl Vm {
    fn new(site_index: u8, slot: u8, name: String, kind: VmKind, memory_mib: u32) -> Vm {
        Vm {
            uuid: stable_uuid(&name),
            mac: format!("52:54:00:f0:{site_index:02x}:{slot:02x}"),
            address: Ipv4Addr::new(10, 240, site_index, NODE_OCTET_BASE + slot),
            name,
            kind,
            memory_mib,
        }
    }

    /// Whether it boots with UEFI firmware (OVMF) rather than SeaBIOS:
    /// every second deployable node, so a site deploys under both.
    pub fn uefi(&self) -> bool {
        self.kind == VmKind::Node && self.name.ends_with(['2', '4', '6', '8', '0'])
    }

    /// Its disk inside the BMC container; the no-disk node has none.
    pub fn disk(&self) -> Option<String> {
        (self.kind != VmKind::NoDisk)
            .then(|| format!("/var/lib/libvirt/images/{}.qcow2", self.name))
    }

    /// Its serial log inside the BMC container.
    pub fn serial_log(&self) -> String {
        format!("{LOG_MOUNT}/{}.serial.log", self.name)
    }

    /// Its domain XML inside the BMC container.
    pub fn xml_path(&self) -> String {
        format!("/etc/dcn-bm/{}.xml", self.name)
    }
}

/// The bare-metal site's plan: its network and its nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// Its subnet: 10.240.INDEX.0/24.
    pub index: u8,
    /// The BMC container's network (netns `dcnlab-bm1`, link `r-bm1`, .5).
    pub net: HostNet,
    pub vms: Vec<Vm>,
}

impl Site {
    /// `nodes` nodes `bm1-n1…` on subnet `index`; with `failures`, also
    /// `bm1-nodisk` (no disk) and `bm1-badpw` (a wrong password in the
    /// inventory), which must fail to deploy.
    pub fn plan(index: u8, nodes: u8, failures: bool) -> Site {
        let mut vms: Vec<Vm> = (1..=nodes)
            .map(|k| Vm::new(index, k, format!("{SITE}-n{k}"), VmKind::Node, NODE_MIB))
            .collect();
        if failures {
            vms.push(Vm::new(
                index,
                NO_DISK_SLOT,
                format!("{SITE}-nodisk"),
                VmKind::NoDisk,
                SMALL_MIB,
            ));
            vms.push(Vm::new(
                index,
                BAD_PASSWORD_SLOT,
                format!("{SITE}-badpw"),
                VmKind::BadPassword,
                SMALL_MIB,
            ));
        }
        Site {
            index,
            net: HostNet {
                address: Ipv4Addr::new(10, 240, index, BMC_OCTET),
                ..HostNet::new(SITE, index)
            },
            vms,
        }
    }

    /// The emulator's Redfish endpoint.
    pub fn bmc_url(&self) -> String {
        format!("https://{}:{BMC_PORT}", self.net.address)
    }

    /// DIR/logs/bm1: the VMs' serial logs, kept after `lab down`.
    pub fn log_dir(dir: &Path) -> PathBuf {
        dir.join("logs").join(SITE)
    }

    /// The nodes as the lab's state records them.
    pub fn vm_states(&self, dir: &Path) -> Vec<VmState> {
        self.vms
            .iter()
            .map(|vm| VmState {
                name: vm.name.clone(),
                site: SITE.into(),
                bmc_host: BMC_HOST.into(),
                uuid: vm.uuid.clone(),
                mac: vm.mac.clone(),
                address: vm.address.to_string(),
                serial_log: Self::log_dir(dir).join(format!("{}.serial.log", vm.name)),
                kind: vm.kind,
            })
            .collect()
    }

    /// Memory the VMs may take when all run.
    pub fn memory_mib(&self) -> u32 {
        self.vms.iter().map(|v| v.memory_mib).sum()
    }
}

/// The BMC's credentials and certificate, made fresh for each lab.
pub struct Material {
    /// The lab's BMC CA (its key is dropped: nothing else is signed).
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: Secret,
    /// The pin of the emulator's key, as `dcn bmc fingerprint` prints it.
    pub pin: Pin,
    pub password: Secret,
    /// What the inventory gives `bm1-badpw`: never the BMC's password.
    pub wrong_password: Secret,
}

impl Material {
    pub fn generate(site: &Site) -> Result<Material> {
        let ca = CertificateAuthority::generate("dcn lab BMC CA")?;
        let leaf = ca
            .issue(&LeafRequest {
                common_name: BMC_HOST.into(),
                dns_names: vec![BMC_HOST.into()],
                ip_addresses: vec![IpAddr::V4(site.net.address)],
                usage: Usage::Server,
            })
            .context("issuing the BMC emulator's certificate")?;
        let pin = Pin::of_cert_pem(&leaf.cert_pem)?;
        let password = crate::secrets::generate_password();
        let mut wrong_password = crate::secrets::generate_password();
        while wrong_password == password {
            wrong_password = crate::secrets::generate_password();
        }
        Ok(Material {
            ca_pem: ca.cert_pem().to_string(),
            cert_pem: leaf.cert_pem,
            key_pem: leaf.key_pem,
            pin,
            password,
            wrong_password,
        })
    }
}

/// A UUID (version 4 layout) from a node's name: the same node gets the
/// same Redfish system id in every lab.
fn stable_uuid(name: &str) -> String {
    let mut b: [u8; 16] = Sha256::digest(format!("dcn lab bare-metal node {name}"))[..16]
        .try_into()
        .expect("16 bytes");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The bare-metal site `opts` ask for, checked before anything is made;
/// `None` without `--bare-metal`. It takes the subnet after the container
/// edge sites and spares.
pub fn plan(opts: &UpOptions) -> Result<Option<Site>> {
    if opts.bare_metal == 0 {
        if opts.bare_metal_failures {
            bail!(
                "--bare-metal-failures adds failing nodes to the bare-metal site: give --bare-metal N (1-{MAX_NODES}) too"
            );
        }
        return Ok(None);
    }
    if opts.bare_metal > MAX_NODES {
        bail!(
            "--bare-metal {} is more than {MAX_NODES} nodes: each is a VM of 3 GiB next to the control plane's 8",
            opts.bare_metal
        );
    }
    if !opts.edge_iso.is_file() {
        bail!(
            "the edge ISO {iso} does not exist; the bare-metal nodes boot it through their BMC. Build it with `dcn image build -o {iso}` (the image test, tests/image_e2e.rs, builds it at {DEFAULT_EDGE_ISO}), or name one with --edge-iso FILE",
            iso = opts.edge_iso.display()
        );
    }
    let index = opts
        .edges
        .checked_add(opts.spare)
        .and_then(|n| n.checked_add(1))
        .context("too many lab subnets")?;
    let site = Site::plan(index, opts.bare_metal, opts.bare_metal_failures);
    tracing::info!(
        "bare-metal site {SITE} on 10.240.{index}.0/24: {} VMs, up to {:.1} GiB of memory when all run",
        site.vms.len(),
        f64::from(site.memory_mib()) / 1024.0
    );
    Ok(Some(site))
}

/// The extra (read-only, writable) binds of a lab host with `role`: the
/// edge ISO into the control plane; the wheelhouse and the serial logs'
/// directory into the BMC container.
pub fn binds(dir: &Path, state: &LabState, role: &str) -> (Vec<Bind>, Vec<Bind>) {
    match role {
        "controller" => (
            state
                .edge_iso
                .iter()
                .map(|iso| (iso.clone(), CP_EDGE_ISO.to_string()))
                .collect(),
            Vec::new(),
        ),
        BMC_ROLE => (
            state
                .wheelhouse
                .iter()
                .map(|w| (w.clone(), WHEELHOUSE_MOUNT.to_string()))
                .collect(),
            // nspawn takes absolute paths only.
            vec![(
                std::path::absolute(Site::log_dir(dir)).unwrap_or_else(|_| Site::log_dir(dir)),
                LOG_MOUNT.to_string(),
            )],
        ),
        _ => (Vec::new(), Vec::new()),
    }
}

/// A bind mount: (path on this machine, path in the container).
pub type Bind = (PathBuf, String);

/// Remove what `lab up` wrote next to the state in `dir` for the site.
pub fn remove_host_files(files: &Files, dir: &Path) -> Result<()> {
    for f in [dir.join(HOST_INVENTORY), dir.join(inventory::HOST_CA)] {
        files.remove(f)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
