//! What a compute node can see of itself, on the node: whether its OVN
//! chassis is connected to the southbound, whether each guest's port is
//! wired (ovn-controller put its flows in and marked the port
//! `ovn-installed`), and which images nova keeps in its image cache. An
//! upgrade checks the first two before it calls itself done; the node
//! reports the third so the centre can follow `dcn site cache-image`.

use crate::host::{Cmd, Files, Runner};
use anyhow::{Context, Result};
use serde_json::Value;
use std::time::Duration;

/// Where nova's libvirt driver keeps base images: its instances path and
/// the image cache's folder (`[DEFAULT] instances_path`,
/// `[image_cache] subdirectory_name`, both left at nova's defaults).
const IMAGE_CACHE: &str = "/var/lib/nova/instances/_base";

/// Whether ovn-controller says it is connected to the southbound.
pub fn chassis_connected(runner: &dyn Runner) -> Result<bool> {
    let out = runner.run(
        &Cmd::new(
            "asking ovn-controller whether it is connected",
            "ovn-appctl",
        )
        .args(["-t", "ovn-controller", "connection-status"])
        .read_only()
        .unchecked()
        .timeout(Duration::from_secs(10)),
    )?;
    Ok(out.success() && out.stdout.trim() == "connected")
}

/// The guests' ports on this node (OVS interfaces that nova plugged for
/// an instance) that ovn-controller has not wired yet.
pub fn unwired_guest_ports(runner: &dyn Runner) -> Result<Vec<String>> {
    let out = runner.run(
        &Cmd::new("listing the guests' ports", "ovs-vsctl")
            .args([
                "--format=json",
                "--columns=name,external_ids",
                "list",
                "Interface",
            ])
            .read_only()
            .timeout(Duration::from_secs(10)),
    )?;
    unwired(&out.stdout)
}

fn unwired(json: &str) -> Result<Vec<String>> {
    let v: Value = serde_json::from_str(json).context("reading ovs-vsctl's interfaces")?;
    let mut out = Vec::new();
    for row in v["data"].as_array().into_iter().flatten() {
        let name = row[0].as_str().unwrap_or_default();
        let ids: Vec<(&str, &str)> = (row[1][1].as_array().into_iter().flatten())
            .filter_map(|kv| Some((kv[0].as_str()?, kv[1].as_str()?)))
            .collect();
        let get = |k: &str| ids.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        // nova's ports name their instance; the metadata agent's and
        // the tunnels do not.
        if get("vm-uuid").is_some()
            && get("iface-id").is_some()
            && get("ovn-installed") != Some("true")
        {
            out.push(name.to_string());
        }
    }
    Ok(out)
}

/// The names of the base images in nova's image cache (each the SHA-1 of
/// its image id, in hex).
pub fn cached_images(files: &Files) -> Result<Vec<String>> {
    Ok(files
        .list(IMAGE_CACHE)?
        .into_iter()
        .filter(|n| crate::wire::is_cache_name(n))
        .collect())
}

/// Where nova's cache keeps image `id`: what its boot path reads before it
/// fetches a kernel or ramdisk, and writes when it does.
pub fn cache_file(image_id: &str) -> String {
    format!("{IMAGE_CACHE}/{}", cache_name(image_id))
}

/// How nova keeps its image cache: the folder and each file are nova's.
pub fn cache_specs() -> (crate::host::FileSpec, crate::host::FileSpec) {
    use crate::host::FileSpec;
    (
        FileSpec::public_dir().owner("nova", "nova"),
        FileSpec::public().owner("nova", "nova"),
    )
}

/// The folder of nova's image cache.
pub const IMAGE_CACHE_DIR: &str = IMAGE_CACHE;

/// The name nova gives an image in its cache.
pub fn cache_name(image_id: &str) -> String {
    use sha1::{Digest, Sha1};
    hex::encode(Sha1::digest(image_id.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_guest_ports_that_ovn_did_not_install_are_unwired() {
        let json = r#"{"data":[
            ["ovn-edge3-0",["map",[]]],
            ["tap9ad5b9b4-2b",["map",[["attached-mac","fa:16:3e:42:d6:84"],["iface-id","9ad5"],["iface-status","active"],["ovn-installed","true"],["vm-uuid","37d2"]]]],
            ["tapbbbb",["map",[["iface-id","bbbb"],["vm-uuid","38"]]]],
            ["tapmeta",["map",[["iface-id","cccc"]]]],
            ["br-int",["map",[]]]],"headings":["name","external_ids"]}"#;
        assert_eq!(unwired(json).unwrap(), ["tapbbbb"]);
        assert!(unwired("not json").is_err());
    }

    #[test]
    fn cache_names_are_nova_s() {
        // nova.virt.imagecache.get_cache_fname: sha1 of the id, in hex.
        assert_eq!(
            cache_name("155d900f-4e14-4e4c-a73d-069cbf4541e6"),
            "f2d1a8250ed3d4b744a8250dab8f6840179d502a"
        );
    }
}
