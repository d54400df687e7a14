//! The `SiteInventory` the lab writes for its bare-metal site, for
//! `dcn site deploy`: into the control plane at [`CP_INVENTORY`] with the
//! BMC password files (0600), and a copy next to the lab's state at
//! DIR/[`HOST_INVENTORY`] (its paths are the control plane's). Built from
//! serde structs, not text, so every value is quoted as YAML needs; the
//! tests read it back with [`crate::config::parse_inventory`].
//!
//! Per node: the BMC (the emulator, the node's domain UUID as its system,
//! the emulator key's pin, user `admin` and a password file), its NIC by
//! MAC with a static address on the site's subnet and the router as
//! gateway, and no DNS (as the lab's container edges: the bundle's hosts
//! entries name the control plane). Every node installs to its only disk,
//! wiping it.

use super::{BMC_USER, CP_EDGE_ISO, MEDIA_PORT, Material, SITE, Site};
use crate::host::{FileSpec, Files};
use crate::lab::state::VmKind;
use anyhow::{Context, Result};
use serde::Serialize;
use std::net::Ipv4Addr;
use std::path::Path;

/// Where the control plane finds the inventory.
pub const CP_INVENTORY: &str = "/etc/dcn/inventory/bm1.yaml";
/// The BMC password, for every node but `bm1-badpw`.
pub const PASSWORD_FILE: &str = "/etc/dcn/bmc/bm1.password";
/// A wrong password, for `bm1-badpw`.
pub const WRONG_PASSWORD_FILE: &str = "/etc/dcn/bmc/bm1-badpw.password";
/// The copy in the lab's directory.
pub const HOST_INVENTORY: &str = "bm1.inventory.yaml";
/// The CA that issued the emulator's certificate (for `tls.ca` instead of
/// the pin), in the lab's directory.
pub const HOST_CA: &str = "bm1-bmc-ca.pem";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Inventory {
    api_version: &'static str,
    kind: &'static str,
    site: &'static str,
    image: &'static str,
    media: Media,
    node_defaults: Defaults,
    nodes: Vec<Node>,
}

#[derive(Serialize)]
struct Media {
    listen: String,
}

#[derive(Serialize)]
struct Defaults {
    disk: Disk,
}

#[derive(Serialize)]
struct Disk {
    select: &'static str,
    wipe: bool,
}

#[derive(Serialize)]
struct Node {
    hostname: String,
    bmc: Bmc,
    interfaces: Vec<Interface>,
}

#[derive(Serialize)]
struct Bmc {
    endpoint: String,
    system: String,
    tls: Tls,
    credentials: Credentials,
}

#[derive(Serialize)]
struct Tls {
    pin: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Credentials {
    username: &'static str,
    password_file: &'static str,
}

#[derive(Serialize)]
struct Interface {
    mac: String,
    addresses: Vec<String>,
    gateway: String,
}

/// The inventory's text; `control_plane` is where `site deploy` serves the
/// ISOs from.
pub(super) fn text(site: &Site, m: &Material, control_plane: Ipv4Addr) -> Result<String> {
    let inventory = Inventory {
        api_version: "dcn/v1alpha1",
        kind: "SiteInventory",
        site: SITE,
        image: CP_EDGE_ISO,
        media: Media {
            listen: format!("{control_plane}:{MEDIA_PORT}"),
        },
        node_defaults: Defaults {
            disk: Disk {
                select: "only",
                wipe: true,
            },
        },
        nodes: site
            .vms
            .iter()
            .map(|vm| Node {
                hostname: vm.name.clone(),
                bmc: Bmc {
                    endpoint: site.bmc_url(),
                    system: vm.uuid.clone(),
                    tls: Tls {
                        pin: m.pin.to_string(),
                    },
                    credentials: Credentials {
                        username: BMC_USER,
                        password_file: match vm.kind {
                            VmKind::BadPassword => WRONG_PASSWORD_FILE,
                            _ => PASSWORD_FILE,
                        },
                    },
                },
                interfaces: vec![Interface {
                    mac: vm.mac.clone(),
                    addresses: vec![format!("{}/24", vm.address)],
                    gateway: site.net.gateway.to_string(),
                }],
            })
            .collect(),
    };
    let yaml = serde_yaml::to_string(&inventory).context("writing the lab's inventory")?;
    let mut out = format!(
        "# Written by `dcn lab up --bare-metal`: the lab's bare-metal site for\n# `dcn site deploy {CP_INVENTORY}` on the control plane (paths are the\n# control plane's).\n"
    );
    for vm in site.vms.iter().filter(|v| v.kind != VmKind::Node) {
        out.push_str(&format!(
            "# {} cannot deploy, on purpose: {}.\n",
            vm.name,
            match vm.kind {
                VmKind::NoDisk => "its VM has no disk",
                _ => "its password file holds a wrong password",
            }
        ));
    }
    out.push_str(&yaml);
    Ok(out)
}

/// Write the inventory and the password files into the control plane's
/// root filesystem, and the inventory and the BMC's CA into `dir`.
pub fn seed_control_plane(
    cp_rootfs: &Path,
    dir: &Path,
    site: &Site,
    m: &Material,
    control_plane: Ipv4Addr,
) -> Result<()> {
    let text = text(site, m, control_plane)?;
    // The inventory must be what `site deploy` accepts.
    crate::config::parse_inventory(&text, HOST_INVENTORY)
        .context("the lab wrote an inventory dcn refuses")?;
    let cp = Files::new(cp_rootfs, false);
    cp.write(CP_INVENTORY, text.as_bytes(), &FileSpec::public())?;
    cp.ensure_dir("/etc/dcn/bmc", &FileSpec::private_dir())?;
    let line = |s: &crate::secrets::Secret| format!("{}\n", s.expose());
    cp.write(
        PASSWORD_FILE,
        line(&m.password).as_bytes(),
        &FileSpec::secret(),
    )?;
    if site.vms.iter().any(|v| v.kind == VmKind::BadPassword) {
        cp.write(
            WRONG_PASSWORD_FILE,
            line(&m.wrong_password).as_bytes(),
            &FileSpec::secret(),
        )?;
    }
    // The ISO is bound here when the container boots; the state directory
    // is dcn's private one.
    cp.ensure_dir(crate::paths::STATE_DIR, &FileSpec::private_dir())?;
    let host = Files::new(dir, false);
    host.write(
        format!("/{HOST_INVENTORY}"),
        text.as_bytes(),
        &FileSpec::public(),
    )?;
    host.write(
        format!("/{HOST_CA}"),
        m.ca_pem.as_bytes(),
        &FileSpec::public(),
    )?;
    Ok(())
}
