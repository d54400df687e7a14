//! The node's settings written into the installed system, through the file
//! writer rooted at the target's mount point: host name, hosts entries,
//! static network (systemd-networkd), DNS, NTP, root's SSH key, fstab,
//! GRUB's menu, the join bundle (0600) and the first-boot unit.

use crate::bundle::VerifiedBundle;
use crate::config::NodeConfig;
use crate::edge::install::firstboot;
use crate::host::{FileSpec, Files};
use anyhow::Result;
use std::fmt::Write as _;

/// What the installer knows about the new disk.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root_uuid: String,
    pub esp_uuid: String,
    /// The kernel and initrd, relative to the root (`/vmlinuz`).
    pub kernel: String,
    pub initrd: String,
    /// Kernel command line beyond `root=` (console settings).
    pub kernel_args: String,
}

/// Write every node file under `files`' root.
pub fn write_node_files(
    files: &Files,
    node: &NodeConfig,
    node_yaml: &str,
    bundle_bytes: &[u8],
    bundle: &VerifiedBundle,
    unit_template: &str,
    layout: &Layout,
) -> Result<()> {
    let public = FileSpec::public();
    files.write(
        "/etc/hostname",
        format!("{}\n", node.hostname).as_bytes(),
        &public,
    )?;
    files.write("/etc/hosts", hosts(node, bundle).as_bytes(), &public)?;
    for (i, iface) in node.interfaces.iter().enumerate() {
        files.write(
            format!("/etc/systemd/network/10-dcn-{i}.network"),
            network_file(iface).as_bytes(),
            &public,
        )?;
    }
    files.write("/etc/resolv.conf", resolv_conf(node).as_bytes(), &public)?;
    if !node.ntp_servers.is_empty() {
        let mut t = String::from("# Written by dcn install from the node config.\n");
        for s in &node.ntp_servers {
            writeln!(t, "server {s} iburst").expect("string");
        }
        files.write("/etc/chrony/sources.d/dcn.sources", t.as_bytes(), &public)?;
    }
    if let Some(key) = &node.root_ssh_key {
        files.ensure_dir("/root/.ssh", &FileSpec::private_dir())?;
        files.write(
            "/root/.ssh/authorized_keys",
            format!("{key}\n").as_bytes(),
            &FileSpec::secret(),
        )?;
    }
    files.ensure_dir(crate::paths::ETC_DIR, &FileSpec::public_dir())?;
    files.write(firstboot::BUNDLE, bundle_bytes, &FileSpec::secret())?;
    files.write(
        "/etc/dcn/node.yaml",
        node_yaml.as_bytes(),
        &FileSpec::secret(),
    )?;
    let unit = firstboot::render_unit(unit_template, node)?;
    files.write(firstboot::UNIT, unit.as_bytes(), &public)?;
    files.write("/etc/fstab", fstab(layout).as_bytes(), &public)?;
    files.write(
        "/boot/grub/grub.cfg",
        grub_cfg(node, layout).as_bytes(),
        &public,
    )?;
    Ok(())
}

fn hosts(node: &NodeConfig, bundle: &VerifiedBundle) -> String {
    let me = node
        .my_ip()
        .map(|i| i.to_string())
        .unwrap_or_else(|| "127.0.1.1".into());
    let short = node.hostname.as_str().split('.').next().unwrap_or_default();
    let mut t = format!(
        "# Written by dcn install.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n{me}\t{}{}\n",
        node.hostname,
        if short != node.hostname.as_str() {
            format!(" {short}")
        } else {
            String::new()
        }
    );
    if !bundle.manifest.hosts.is_empty() {
        t.push_str("# The control plane, from the join bundle.\n");
        for h in &bundle.manifest.hosts {
            let names: Vec<&str> = h.names.iter().map(|n| n.as_str()).collect();
            writeln!(t, "{}\t{}", h.address, names.join(" ")).expect("string");
        }
    }
    t
}

fn network_file(iface: &crate::config::node::Interface) -> String {
    let mut t = String::from("# Written by dcn install from the node config.\n[Match]\n");
    if let Some(mac) = &iface.mac {
        writeln!(t, "MACAddress={mac}").expect("string");
    }
    if let Some(name) = &iface.name {
        writeln!(t, "Name={name}").expect("string");
    }
    t.push_str("\n[Network]\nDHCP=no\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n");
    for a in &iface.addresses {
        writeln!(t, "Address={a}").expect("string");
    }
    if let Some(gw) = iface.gateway {
        writeln!(t, "Gateway={gw}").expect("string");
    }
    for r in &iface.routes {
        write!(
            t,
            "\n[Route]\nDestination={}\nGateway={}\n",
            String::from(r.to),
            r.via
        )
        .expect("string");
    }
    t
}

fn resolv_conf(node: &NodeConfig) -> String {
    let mut t = String::from("# Written by dcn install from the node config (dnsServers).\n");
    for s in &node.dns_servers {
        writeln!(t, "nameserver {s}").expect("string");
    }
    t
}

fn fstab(l: &Layout) -> String {
    format!(
        "# Written by dcn install.\nUUID={}\t/\text4\terrors=remount-ro\t0\t1\nUUID={}\t/boot/efi\tvfat\tumask=0077\t0\t2\n",
        l.root_uuid, l.esp_uuid
    )
}

/// GRUB's menu for BIOS and UEFI alike: the root file system by UUID, the
/// console on screen and serial line.
fn grub_cfg(node: &NodeConfig, l: &Layout) -> String {
    format!(
        "# Written by dcn install.\nserial --unit=0 --speed=115200\nterminal_input console serial\nterminal_output console serial\nset timeout=2\nset default=0\nsearch --no-floppy --fs-uuid --set=root {uuid}\n\nmenuentry \"Debian GNU/Linux, dcn edge node {host}\" {{\n    linux {kernel} root=UUID={uuid} ro {args}\n    initrd {initrd}\n}}\n",
        uuid = l.root_uuid,
        host = node.hostname,
        kernel = l.kernel,
        initrd = l.initrd,
        args = l.kernel_args
    )
}

/// The live system's kernel arguments, without those that only make sense
/// for the live system (`boot=live`, ...), for the installed system.
pub fn installed_kernel_args(cmdline: &str) -> String {
    const LIVE_ONLY: [&str; 6] = [
        "BOOT_IMAGE=",
        "boot=",
        "components",
        "live-media",
        "initrd=",
        "root=",
    ];
    cmdline
        .split_whitespace()
        .filter(|w| !LIVE_ONLY.iter().any(|p| w.starts_with(p)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_args_keep_consoles_only() {
        assert_eq!(
            installed_kernel_args(
                "BOOT_IMAGE=/live/vmlinuz boot=live components=no live-media-path=/live console=tty0 console=ttyS0,115200n8\n"
            ),
            "console=tty0 console=ttyS0,115200n8"
        );
    }

    #[test]
    fn network_file_matches_by_mac_with_routes() {
        let node = crate::config::parse_node(
            "apiVersion: dcn/v1alpha1\nkind: NodeConfig\nhostname: e\ninterfaces:\n- mac: 52:54:00:AA:00:01\n  addresses: [10.240.1.20/24]\n  gateway: 10.240.1.1\n  routes:\n  - to: 10.9.0.0/16\n    via: 10.240.1.254\n",
            "n",
        )
        .unwrap();
        let t = network_file(&node.interfaces[0]);
        assert!(t.contains("MACAddress=52:54:00:aa:00:01\n"), "{t}");
        assert!(
            t.contains("Address=10.240.1.20/24\nGateway=10.240.1.1\n"),
            "{t}"
        );
        assert!(
            t.contains("[Route]\nDestination=10.9.0.0/16\nGateway=10.240.1.254\n"),
            "{t}"
        );
    }
}
