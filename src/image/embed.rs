//! `dcn image embed` and `dcn image show`: write a node's payload into the
//! ISO's payload area, found through the ISO 9660 directory, or read it
//! back. In place, the work is a few directory reads and one write of the
//! area, whatever the size of the ISO.

use super::payload::{self, Payload};
use super::{PAYLOAD_PATH, iso9660};
use crate::bundle::{ReadOptions, VerifiedBundle, read_bundle};
use crate::config::NodeConfig;
use crate::host::read::{self, ReadSpec};
use crate::recipes::Recipes;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// An ISO file, or a device holding one: read by seeking to its payload
/// area only, so its size is not limited.
const ISO: ReadSpec = ReadSpec::up_to(u64::MAX).or_block_device();

/// Where the payload goes.
#[derive(Debug, Clone)]
pub enum Destination {
    /// Into the given ISO itself.
    InPlace,
    /// Into a copy written to this path.
    Copy(PathBuf),
}

/// What an embed did.
#[derive(Debug, Clone, Serialize)]
pub struct EmbedReport {
    pub iso: PathBuf,
    pub hostname: String,
    pub site: String,
    pub payload_bytes: u64,
    pub area_bytes: u64,
    /// Time to find the area and write it (the copy, if any, excluded).
    pub write_seconds: f64,
}

/// Verify the bundle and the node config, then write both into the ISO.
pub fn embed(
    recipes: &Recipes,
    iso: &Path,
    bundle_file: &Path,
    node_file: &Path,
    dest: &Destination,
) -> Result<EmbedReport> {
    let node_yaml = read_capped(
        node_file,
        payload::MAX_NODE_CONFIG,
        "node config",
        "check that --node is the NodeConfig YAML",
    )?;
    let node_yaml = String::from_utf8(node_yaml)
        .with_context(|| format!("node config {} is not UTF-8 text", node_file.display()))?;
    let node = crate::config::parse_node(&node_yaml, &node_file.display().to_string())?;
    let bundle = read_capped(
        bundle_file,
        payload::MAX_BUNDLE,
        "bundle",
        "a join bundle is a few kilobytes; check that --bundle is the file `dcn bundle export` wrote",
    )?;
    let verified = verify_bundle(recipes, &bundle, &node, true).with_context(|| {
        format!(
            "refusing to embed {}: it does not verify",
            bundle_file.display()
        )
    })?;
    let (target, in_place) = match dest {
        Destination::InPlace => (iso.to_path_buf(), true),
        Destination::Copy(out) => (out.clone(), false),
    };
    let spec = if in_place { ISO.writable() } else { ISO };
    let mut f = read::open(iso, &spec).with_context(|| {
        let how = if in_place { " for writing" } else { "" };
        format!("cannot open the ISO{how}")
    })?;
    // The area is found, and the payload checked against it, in the input:
    // nothing is copied for an ISO the payload cannot go into.
    let extent = find_area(&mut f, iso)?;
    let framed = payload::encode(&bundle, &node_yaml, extent.length)?;
    let mut write_seconds = 0.0;
    let mut write = |f: &mut File| {
        let started = Instant::now();
        write_payload(f, &target, extent, &framed)?;
        write_seconds = started.elapsed().as_secs_f64();
        Ok(())
    };
    match dest {
        // The ISO holds a join token from now on: its owner's only.
        Destination::InPlace => {
            write(&mut f)?;
            let mode = f
                .metadata()
                .map(|m| m.permissions().mode())
                .unwrap_or(0o600);
            f.set_permissions(std::fs::Permissions::from_mode(mode & 0o700))
                .with_context(|| format!("making {} readable by its owner only", iso.display()))?;
        }
        Destination::Copy(out) => super::output::write_copy(&mut f, iso, out, write)?,
    }
    Ok(EmbedReport {
        iso: target,
        hostname: node.hostname.to_string(),
        site: verified.manifest.site.to_string(),
        payload_bytes: framed.len() as u64,
        area_bytes: extent.length,
        write_seconds,
    })
}

/// The contents of `path`, a regular file of at most `cap` bytes.
fn read_capped(path: &Path, cap: u64, what: &str, hint: &str) -> Result<Vec<u8>> {
    read::read(path, &ReadSpec::up_to(cap))
        .map_err(|e| anyhow::anyhow!("cannot read the {what}: {e}; {hint}"))
}

/// Check a bundle as embed and install do: format, integrity, signature,
/// the node's CA pin when it has one, and (when `check_expiry`) expiry.
pub fn verify_bundle(
    recipes: &Recipes,
    bytes: &[u8],
    node: &NodeConfig,
    check_expiry: bool,
) -> Result<VerifiedBundle> {
    let opts = ReadOptions {
        check_expiry,
        ..ReadOptions::new().with_pin(node.join.ca_pin.as_ref().map(|p| p.pin()))
    };
    Ok(read_bundle(recipes, bytes, &opts)?)
}

/// Write the framed payload at the start of the area, and zeros behind it
/// up to the end of what an earlier payload used: O(payload), whatever the
/// size of the ISO. The rest of the area is zero already.
fn write_payload(f: &mut File, iso: &Path, extent: iso9660::Extent, framed: &[u8]) -> Result<()> {
    let mut header = [0u8; payload::HEADER_LEN];
    f.seek(SeekFrom::Start(extent.offset))?;
    f.read_exact(&mut header)
        .with_context(|| format!("reading the payload area of {}", iso.display()))?;
    let old = payload::used_len(&header, extent.length);
    f.seek(SeekFrom::Start(extent.offset))?;
    f.write_all(framed)
        .with_context(|| format!("writing the payload into {}", iso.display()))?;
    let mut zeros = old.saturating_sub(framed.len() as u64);
    let block = [0u8; 64 * 1024];
    while zeros > 0 {
        let n = zeros.min(block.len() as u64) as usize;
        f.write_all(&block[..n])
            .with_context(|| format!("writing the payload into {}", iso.display()))?;
        zeros -= n as u64;
    }
    f.sync_data()
        .with_context(|| format!("flushing {} to disk", iso.display()))?;
    Ok(())
}

fn find_area<R: Read + Seek>(image: &mut R, iso: &Path) -> Result<iso9660::Extent> {
    let extent = iso9660::find_file(image, PAYLOAD_PATH)
        .with_context(|| format!("reading {}", iso.display()))?
        .with_context(|| {
            format!(
                "{} has no payload area ({PAYLOAD_PATH}): it was not built by `dcn image build`; build the edge ISO with `dcn image build -o dcn-edge.iso`",
                iso.display()
            )
        })?;
    if extent.length < payload::HEADER_LEN as u64 {
        bail!(
            "the payload area of {} is only {} bytes; build the ISO again with `dcn image build`",
            iso.display(),
            extent.length
        );
    }
    check_area_size(extent.length, iso)?;
    Ok(extent)
}

/// An area larger than dcn builds is refused before anything is read.
fn check_area_size(len: u64, iso: &Path) -> Result<()> {
    if len > payload::MAX_AREA {
        bail!(
            "the payload area of {} is {len} bytes, more than the {} dcn builds and reads: the ISO is damaged or was not built by `dcn image build`; build it again",
            iso.display(),
            payload::MAX_AREA
        );
    }
    Ok(())
}

/// Read the payload out of an ISO file or a device holding one.
pub fn read_payload(iso: &Path) -> Result<Payload> {
    let mut f = read::open(iso, &ISO).context("cannot open the ISO")?;
    let extent = find_area(&mut f, iso)?;
    f.seek(SeekFrom::Start(extent.offset))?;
    payload::read(&mut f.take(extent.length), extent.length)
        .with_context(|| format!("reading the payload area of {}", iso.display()))
}

/// Decode a payload area read from a file (the mounted medium).
pub fn read_payload_file(area_file: &Path) -> Result<Payload> {
    // Its size is checked below, with the limit's reason.
    let f = read::open(area_file, &ReadSpec::up_to(u64::MAX))
        .context("cannot read the payload area")?;
    let len = f.metadata()?.len();
    check_area_size(len, area_file)?;
    payload::read(&mut f.take(len), len)
        .with_context(|| format!("reading the payload area {}", area_file.display()))
}

/// What `dcn image show` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Shown {
    pub node: NodeConfig,
    pub my_ip: Option<String>,
    pub bundle: crate::bundle::Inspection,
    pub payload_bytes: u64,
}

/// The payload of `iso`, parsed; the bundle's token redacted.
pub fn show(recipes: &Recipes, iso: &Path) -> Result<Shown> {
    let p = read_payload(iso)?;
    parse_payload(recipes, &p)
}

/// Parse and verify a payload's parts (an expired bundle is shown, marked).
pub fn parse_payload(recipes: &Recipes, p: &Payload) -> Result<Shown> {
    let node = crate::config::parse_node(&p.node_yaml, "the embedded node config")?;
    let bundle = verify_bundle(recipes, &p.bundle, &node, false).context("the embedded bundle")?;
    Ok(Shown {
        my_ip: node.my_ip().map(|i| i.to_string()),
        payload_bytes: (payload::HEADER_LEN + p.bundle.len() + p.node_yaml.len()) as u64,
        bundle: bundle.inspect(),
        node,
    })
}

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = &self.node;
        writeln!(
            f,
            "Node {} ({} bytes of payload)",
            n.hostname, self.payload_bytes
        )?;
        let d = &n.disk;
        match &d.device {
            Some(dev) => write!(f, "  Disk:            {dev}")?,
            None => write!(
                f,
                "  Disk:            {:?} non-removable disk of at least {} GiB",
                d.select, d.min_size_gib
            )?,
        }
        writeln!(
            f,
            "{}",
            if d.wipe {
                " (wipe: erases existing partitions)"
            } else {
                ""
            }
        )?;
        for i in &n.interfaces {
            let which = match (&i.name, &i.mac) {
                (Some(name), _) => format!("name {name}"),
                (_, Some(mac)) => format!("MAC {mac}"),
                _ => "?".into(),
            };
            let addrs: Vec<String> = i.addresses.iter().map(|a| a.to_string()).collect();
            write!(f, "  Interface:       {which}: {}", addrs.join(", "))?;
            if let Some(gw) = i.gateway {
                write!(f, ", gateway {gw}")?;
            }
            for r in &i.routes {
                write!(f, ", route {} via {}", String::from(r.to), r.via)?;
            }
            writeln!(f)?;
        }
        let list = |v: Vec<String>| {
            if v.is_empty() {
                "(none)".to_string()
            } else {
                v.join(", ")
            }
        };
        writeln!(
            f,
            "  DNS:             {}",
            list(n.dns_servers.iter().map(|s| s.to_string()).collect())
        )?;
        writeln!(
            f,
            "  NTP:             {}",
            list(n.ntp_servers.iter().map(|s| s.to_string()).collect())
        )?;
        writeln!(
            f,
            "  Root SSH key:    {}",
            n.root_ssh_key
                .as_ref()
                .map(|k| k.to_string())
                .unwrap_or_else(|| "(none)".into())
        )?;
        writeln!(
            f,
            "  Join:            my IP {}, CA pin {}, {} per attempt",
            self.my_ip.as_deref().unwrap_or("(none)"),
            n.join
                .ca_pin
                .as_ref()
                .map(|p| p.to_string())
                .unwrap_or_else(|| "(not pinned)".into()),
            String::from(n.join.timeout)
        )?;
        write!(f, "{}", self.bundle)
    }
}

#[cfg(test)]
mod tests {
    use crate::image::payload::PayloadError;

    #[test]
    fn payload_error_is_typed_through_anyhow() {
        let e: anyhow::Error = PayloadError::Empty.into();
        assert!(matches!(
            e.downcast_ref::<PayloadError>(),
            Some(PayloadError::Empty)
        ));
    }
}
