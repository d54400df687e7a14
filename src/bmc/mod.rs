//! Driving a server's BMC over Redfish: boot it from an ISO through virtual
//! media, show and change its boot override and power, and publish ISOs
//! over HTTP for BMCs to fetch (`dcn image serve`).
//!
//! A small typed client ([`client`], [`model`]) follows links from
//! `/redfish/v1/` rather than guessing vendor paths. Vendor behaviour that
//! departs from the standard is handled where the request is made
//! (`media.rs`, `power.rs`), each case named after the BMC known to do it.
//! TLS to the BMC is verified (system CAs, `--bmc-ca`, or `--bmc-pin`);
//! `--insecure` is allowed but warned about on every run. The password is
//! read from a file or the environment, is never printed, and goes only to
//! the origin given with `--bmc` ([`transport`]). What the BMC sends is
//! bounded (body size, collection size, and time: [`deadline`]) and cleaned
//! of the password and of control characters before anything prints it
//! ([`untrusted`]).

mod boot;
pub mod client;
mod collection;
pub mod deadline;
mod discover;
mod disk;
pub mod error;
mod fingerprint;
mod media;
mod media_trust;
pub mod model;
mod power;
mod retry;
mod serve;
mod status;
mod transport;
pub mod untrusted;

pub use boot::{BootReport, BootRequest, boot};
pub use client::{Client, ClientOptions, Retry};
pub use deadline::Deadline;
pub use discover::{Slot, System, cd_slot, find_system, virtual_media};
pub use disk::{DiskBoot, boot_from_disk};
pub use error::RedfishError;
pub use media_trust::{MediaTrust, trust_media_ca};
pub use power::{Power, reset};
pub use serve::{
    ImageServer, Limits as ImageServerLimits, ServeOptions as ImageServeOptions, serve_images,
};
pub use status::{Status, status};
pub(crate) use transport::{OriginError, origin};

use crate::host::read::{self, ReadSpec};
use crate::secrets::Secret;
use crate::tls::ServerTrust;
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::time::Duration;

pub use fingerprint::{Fingerprint, fingerprint};
pub use power::wait_for;

/// The environment variable that may hold the BMC password.
pub const PASSWORD_ENV: &str = "DCN_BMC_PASSWORD";

/// How to reach and log in to one BMC, and which system behind it.
#[derive(Debug, Clone)]
pub struct Connection {
    /// The BMC's URL (`--bmc`).
    pub url: String,
    /// The system to drive, when the BMC has several.
    pub system: Option<String>,
    pub username: String,
    /// The file whose first line is the password; without it, the
    /// password comes from [`PASSWORD_ENV`].
    pub password_file: Option<PathBuf>,
    pub trust: Trust,
    /// The time limit of each call, for all of it (at least one second is
    /// used).
    pub timeout: Duration,
}

/// How the BMC's TLS certificate is checked.
#[derive(Debug, Clone)]
pub enum Trust {
    /// The system's CA certificates.
    SystemRoots,
    /// The CA certificates in this PEM file (`--bmc-ca`).
    CaFile(PathBuf),
    /// The key the BMC must present (`--bmc-pin`).
    Pin(crate::pki::Pin),
    /// Nothing checked (`--insecure`): warned about on every run.
    Insecure,
}

/// Log in and find the system.
pub fn connect(conn: &Connection) -> Result<(Client, System)> {
    let client = Client::new(&ClientOptions {
        url: conn.url.clone(),
        username: conn.username.clone(),
        password: password(conn)?,
        trust: trust(&conn.trust)?,
        timeout: conn.timeout.max(Duration::from_secs(1)),
        timeout_from: Some("--timeout".into()),
        retry: Retry::default(),
        credentials_from: "--username, and the password in --password-file or DCN_BMC_PASSWORD"
            .into(),
    })?;
    let system = find_system(&client, conn.system.as_deref())?;
    Ok((client, system))
}

/// `dcn bmc eject`: empty the virtual CD, and clear a boot override that
/// still points at it, so the next boot is from disk.
pub fn eject(client: &Client, system: &System) -> Result<Vec<String>> {
    let slot = cd_slot(client, system)?;
    let mut lines = Vec::new();
    if slot.media.is_inserted() {
        let what = slot
            .media
            .inserted_image()
            .unwrap_or("the media")
            .to_string();
        media::eject(client, &slot)?;
        lines.push(format!("Ejected {what} from virtual media {}.", slot.id()));
    } else {
        lines.push(format!("Virtual media {} was already empty.", slot.id()));
    }
    let system = system.reload(client)?;
    let boot = system.resource.boot.clone().unwrap_or_default();
    let target = boot.boot_source_override_target.unwrap_or_default();
    let enabled = boot.boot_source_override_enabled.unwrap_or_default();
    if matches!(target.as_str(), "Cd" | "UsbCd") && enabled != "Disabled" {
        power::clear_override(client, &system).with_context(|| {
            format!(
                "the virtual CD was emptied, but the boot override to {target} ({enabled}) is still set"
            )
        })?;
        lines.push(format!(
            "Boot override to {target} ({enabled}) cleared: the next boot is from the disk."
        ));
    }
    Ok(lines)
}

/// The largest BMC password file read (`--password-file`, the
/// inventory's `passwordFile`): a password is a line.
pub(crate) const MAX_PASSWORD_FILE: u64 = 4096;

/// The BMC password: `--password-file` (its first line), else the
/// environment. Never from the command line.
fn password(conn: &Connection) -> Result<Secret> {
    if let Some(file) = &conn.password_file {
        let spec = ReadSpec::up_to(MAX_PASSWORD_FILE);
        let text = read::read_string(file, &spec).context("reading the BMC password")?;
        warn_if_readable_by_others(file);
        let line = text.lines().next().unwrap_or("");
        if line.is_empty() {
            bail!(
                "{} is empty: write the BMC password on its first line",
                file.display()
            );
        }
        return Ok(Secret::new(line));
    }
    match std::env::var(PASSWORD_ENV) {
        Ok(v) if !v.is_empty() => Ok(Secret::new(v)),
        _ => bail!(
            "no BMC password: write it to a file only you can read and pass --password-file FILE, or set {PASSWORD_ENV}"
        ),
    }
}

fn warn_if_readable_by_others(file: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(file)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            "{} holds the BMC password but other users may read it; `chmod 600 {}`",
            file.display(),
            file.display()
        );
    }
}

fn trust(trust: &Trust) -> Result<ServerTrust> {
    match trust {
        Trust::Insecure => Ok(ServerTrust::Insecure),
        Trust::Pin(pin) => Ok(ServerTrust::Pin(pin.clone())),
        Trust::CaFile(file) => {
            let pem = read::read_string(file, &ReadSpec::up_to(read::MAX_PEM))
                .context("reading --bmc-ca")?;
            crate::tls::certs_from_pem(&pem).with_context(|| {
                format!("--bmc-ca {}: no PEM certificate in it", file.display())
            })?;
            Ok(ServerTrust::Ca(pem))
        }
        Trust::SystemRoots => Ok(ServerTrust::SystemRoots),
    }
}

/// After an `--insecure` run: the pin to use next time.
pub fn insecure_reminder(client: &Client, conn: &Connection) {
    if matches!(conn.trust, Trust::Insecure)
        && let Some(pin) = client.presented_pin()
    {
        tracing::info!(
            "The BMC presented the key {pin}: once it is checked out of band (`dcn bmc fingerprint`), pass --bmc-pin {pin} instead of --insecure."
        );
    }
}
