//! `dcn restore FILE`: the control plane put back on a replacement host of
//! the same name and address (a disk or VM replaced). The archive is read
//! through and checked before anything changes; then dcn's state goes back
//! (its secrets and CA among them: nothing is generated anew), `standalone
//! init` brings up the infrastructure (MariaDB, RabbitMQ, OVN's
//! databases), the dumps are loaded and the files put back, and `init`
//! runs to its end, each step finding what the backup brought. The edges
//! were never told anything: they reconnect to the same address with the
//! same CA and credentials, and the OVN southbound admits them again once
//! the join service lists their CAs. A restore cut off part way is run
//! again from the start.

use super::STATE_PART;
use super::archive::{self, Verified};
use crate::centre::standalone::{InitOptions, PhaseName};
use crate::deployment::Deployment;
use crate::host::{Cmd, FileSpec, Host};
use crate::pki::Pin;
use crate::recipes::Recipes;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where the archive is unpacked while it is checked and loaded.
pub const STAGING: &str = "/var/lib/dcn-restore";

#[derive(Debug, Clone)]
pub struct Options {
    pub archive: PathBuf,
    /// The CA pin of the cloud the backup must be of.
    pub ca_pin: Option<Pin>,
    /// Preflight checks whose errors become warnings.
    pub ignore_preflight: Vec<String>,
}

/// What a restore took.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub hostname: String,
    pub address: String,
    pub backup_created_at: String,
    pub verify_seconds: f64,
    pub infrastructure_seconds: f64,
    pub load_seconds: f64,
    pub services_seconds: f64,
    pub total_seconds: f64,
}

/// This host's name and whether it holds `address`.
pub trait HostIdentity {
    fn hostname(&self) -> Result<String>;
    fn has_address(&self, address: IpAddr) -> Result<bool>;
}

/// The live machine.
pub struct LiveHost;

impl HostIdentity for LiveHost {
    fn hostname(&self) -> Result<String> {
        Ok(nix::unistd::gethostname()
            .context("reading this host's name")?
            .to_string_lossy()
            .into_owned())
    }
    fn has_address(&self, address: IpAddr) -> Result<bool> {
        Ok(nix::ifaddrs::getifaddrs()
            .context("listing network interfaces")?
            .filter_map(|i| i.address)
            .any(|a| {
                a.as_sockaddr_in().map(|s| IpAddr::V4(s.ip())) == Some(address)
                    || a.as_sockaddr_in6().map(|s| IpAddr::V6(s.ip())) == Some(address)
            }))
    }
}

/// Check the archive, and that it may be restored here: this host has the
/// backup's name and address, and is blank or already this cloud's.
pub fn check(
    recipes: &Recipes,
    host: &Host,
    identity: &dyn HostIdentity,
    opts: &Options,
    extract: Option<&Path>,
) -> Result<Verified> {
    let verified = archive::read(recipes, &opts.archive, extract, opts.ca_pin.as_ref())?;
    let m = &verified.manifest;
    let here = identity.hostname()?;
    if here != m.hostname {
        bail!(
            "the backup is of control plane {}, and this host is called {here}: edges reach the control plane by its name and address, so a restore needs both. Give this host the name {} (hostnamectl set-hostname {}), then restore",
            m.hostname,
            m.hostname,
            m.hostname
        );
    }
    let address: IpAddr = m.address.parse().context("the backup's address")?;
    if !identity.has_address(address)? {
        bail!(
            "the backup's control plane is at {address}, which this host does not have: every edge and every certificate names that address, so a restore onto another one is not supported. Give this host the address {address}, then restore"
        );
    }
    if let Some(pem) = host.files.read_string(crate::paths::CA_CERT)? {
        let here = Pin::of_cert_pem(&pem)?.to_string();
        if here != m.ca_pin {
            bail!(
                "this host is already the control plane of another cloud (CA {here}; the backup's is {}): restore onto a blank host, or run `dcn reset --purge` here first",
                m.ca_pin
            );
        }
    }
    Ok(verified)
}

/// Restore the backup at `opts.archive` onto `host`.
pub fn restore(
    recipes: &Recipes,
    host: &Host,
    identity: &dyn HostIdentity,
    opts: &Options,
) -> Result<Report> {
    let started = Instant::now();
    let files = &host.files;
    let staging = files.host_path(STAGING)?;
    files.remove_all(STAGING)?;
    files.ensure_dir(STAGING, &FileSpec::private_dir())?;
    let result = (|| {
        let verified = check(recipes, host, identity, opts, Some(&staging))?;
        let mut report = Report {
            hostname: verified.manifest.hostname.clone(),
            address: verified.manifest.address.clone(),
            backup_created_at: verified.manifest.created_at.clone(),
            verify_seconds: started.elapsed().as_secs_f64(),
            ..Report::default()
        };
        tracing::info!(
            "restoring the control plane {} ({}) from its backup of {}",
            report.hostname,
            report.address,
            report.backup_created_at
        );
        put_files(host, &verified, |part| part == STATE_PART)?;
        let config = crate::deployment::saved_config(files)?;

        let t = Instant::now();
        run_init(
            recipes,
            host,
            &config,
            PhaseName::Infrastructure,
            &opts.ignore_preflight,
        )?;
        report.infrastructure_seconds = t.elapsed().as_secs_f64();

        let t = Instant::now();
        load_dumps(recipes, host, &verified, &staging)?;
        // The databases are the backup's now: a schema sync this host
        // began before (on empty databases) is over, and must never empty
        // them again.
        files.remove_all(crate::paths::SCHEMA_SYNCS_DIR)?;
        put_files(host, &verified, |part| part != STATE_PART)?;
        report.load_seconds = t.elapsed().as_secs_f64();

        let t = Instant::now();
        run_init(
            recipes,
            host,
            &config,
            PhaseName::Finalize,
            &opts.ignore_preflight,
        )?;
        report.services_seconds = t.elapsed().as_secs_f64();
        report.total_seconds = started.elapsed().as_secs_f64();
        Ok(report)
    })();
    let _ = files.remove_all(STAGING);
    result
}

fn run_init(
    recipes: &Recipes,
    host: &Host,
    config: &crate::config::StandaloneConfig,
    until: PhaseName,
    ignore: &[String],
) -> Result<()> {
    crate::centre::standalone::init(
        recipes,
        config,
        host,
        &InitOptions {
            until,
            ignore_preflight: ignore.to_vec(),
            upgrade: false,
        },
    )
    .with_context(|| format!("bringing the control plane up to its {until:?} phase"))?;
    Ok(())
}

/// Write the backup's files of the parts `which` takes (unpacked in
/// [`STAGING`]), with their modes and owners, their directories first.
fn put_files(host: &Host, v: &Verified, which: impl Fn(&str) -> bool) -> Result<()> {
    let files = &host.files;
    for d in v.manifest.dirs.iter().filter(|d| which(&d.part)) {
        let spec = FileSpec::public_dir()
            .mode(d.mode)
            .owner(&d.owner, &d.group);
        files.ensure_dir(&d.path, &spec)?;
    }
    for f in v.manifest.files.iter().filter(|f| which(&f.part)) {
        let spec = FileSpec::secret().mode(f.mode).owner(&f.owner, &f.group);
        // Streamed: with images, a file is as large as a disk image.
        files.copy(format!("{STAGING}/{}", f.member), &f.path, &spec)?;
    }
    Ok(())
}

/// Load each dump with the restore command its service's recipe gives.
fn load_dumps(recipes: &Recipes, host: &Host, v: &Verified, staging: &Path) -> Result<()> {
    let deployment =
        Deployment::load(&host.files)?.context("the backup holds no deployment record")?;
    for d in &v.manifest.dumps {
        if !deployment.services.contains(&d.service) {
            bail!(
                "the backup has a dump of {}, which this control plane does not run",
                d.service
            );
        }
        let part = recipes
            .services
            .get(&d.service)
            .and_then(|s| s.backup.iter().find(|b| b.name == d.part))
            .with_context(|| {
                format!(
                    "this dcn's recipe of {} has no backup part {}; restore with the dcn that wrote the backup",
                    d.service, d.part
                )
            })?;
        let argv = part
            .restore
            .as_ref()
            .context("a dump part without a restore command")?;
        let (program, args) = argv.split_first().context("an empty restore command")?;
        let t = Instant::now();
        host.runner.run(
            &Cmd::new(
                format!("loading {} from the backup", d.part),
                program.as_str(),
            )
            .args(args.iter().cloned())
            .stdin_file(staging.join(&d.member))
            .timeout(Duration::from_secs(3600)),
        )?;
        tracing::info!("  loaded {} in {:.1}s", d.part, t.elapsed().as_secs_f64());
    }
    Ok(())
}
