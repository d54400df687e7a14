//! `dcn backup`: one archive of everything the control plane knows, taken
//! while it runs. dcn's registry and PKI locks are held throughout, so no
//! join, renewal or config change lands half in it; the databases are
//! dumped in one transaction, and OVN's databases right after them, each
//! as one snapshot. The archive holds every secret of the cloud: it is
//! written 0600, under a temporary name until it is complete.

use super::archive::{DirEntry, DumpEntry, FORMAT_VERSION, FileEntry, Manifest, Writer};
use super::{STATE_PART, state_excluded};
use crate::certs::authority::Authorities;
use crate::deployment::Deployment;
use crate::host::lock::FileLock;
use crate::host::{Cmd, Files, Host};
use crate::pki::CertificateAuthority;
use crate::recipes::Recipes;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// What to back up, and where.
#[derive(Debug, Clone)]
pub struct Options {
    pub output: PathBuf,
    /// Glance's image files too.
    pub with_images: bool,
}

/// One part of a backup.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    pub name: String,
    pub bytes: u64,
    pub seconds: f64,
}

/// What `dcn backup` wrote.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub path: PathBuf,
    /// The archive's size (compressed).
    pub size: u64,
    /// What it holds (uncompressed).
    pub content: u64,
    pub seconds: f64,
    pub parts: Vec<Part>,
}

/// Take a backup of the control plane on `host`.
pub fn backup(recipes: &Recipes, host: &Host, opts: &Options) -> Result<Report> {
    let started = Instant::now();
    let files = &host.files;
    let deployment = Deployment::load(files)?
        .filter(|d| d.roles.iter().any(|r| r == "controller"))
        .context("this host is not a dcn control plane: `dcn backup` runs where `dcn standalone init` ran")?;
    let out_dir = output_dir(files, opts)?;
    // Nothing of dcn's state changes while the backup runs.
    let registry = crate::centre::sites::Registry::new(files);
    let _registry = registry.lock()?;
    let _pki = FileLock::wait(files, crate::centre::renewal::renew::PKI_LOCK)?;
    let ca = Authorities::new(files).current()?;

    let mut writer = Writer::create(&opts.output)?;
    let staging = tempfile::Builder::new()
        .prefix(".dcn-backup-dumps-")
        .tempdir_in(out_dir.parent().unwrap_or(Path::new("/")))
        .context("making a directory for the dumps beside the archive")?;
    let mut manifest = manifest(&deployment, &ca, opts);
    let mut parts = Vec::new();

    let t = Instant::now();
    let bytes = add_tree(
        host,
        &mut writer,
        &mut manifest,
        STATE_PART,
        crate::paths::STATE_DIR,
        &state_excluded,
    )?;
    parts.push(part(STATE_PART, bytes, t));

    let databases = databases(recipes, &deployment);
    for name in &deployment.services {
        let Some(service) = recipes.services.get(name) else {
            continue;
        };
        for b in &service.backup {
            if b.only_with_images && !opts.with_images {
                continue;
            }
            let t = Instant::now();
            let bytes = if let Some(dump) = &b.dump {
                let dump = Dump {
                    part: &b.name,
                    service: &service.service,
                    argv: expand(dump, &databases),
                };
                dump.add(host, &mut writer, &mut manifest, staging.path())?
            } else {
                let mut bytes = 0;
                for p in &b.paths {
                    bytes += add_tree(host, &mut writer, &mut manifest, &b.name, p, &|_| false)?;
                }
                bytes
            };
            tracing::info!(
                "  {}: {} bytes in {:.1}s",
                b.name,
                bytes,
                t.elapsed().as_secs_f64()
            );
            parts.push(part(&b.name, bytes, t));
        }
    }
    let content = writer.members().values().map(|m| m.size).sum();
    let size = writer.finish(manifest, &ca)?;
    Ok(Report {
        path: opts.output.clone(),
        size,
        content,
        seconds: started.elapsed().as_secs_f64(),
        parts,
    })
}

/// The archive's directory, refused inside dcn's state (which it holds).
fn output_dir(files: &crate::host::Files, opts: &Options) -> Result<PathBuf> {
    let state = files.host_path(crate::paths::STATE_DIR)?;
    let out_dir = absolute(&opts.output)?;
    if out_dir.starts_with(&state) {
        bail!(
            "{} is inside dcn's state directory {}, which the backup holds; write it elsewhere (the default is under /var/backups/dcn)",
            opts.output.display(),
            state.display()
        );
    }
    Ok(out_dir)
}

/// The manifest of a backup about to be taken, its lists still empty.
fn manifest(deployment: &Deployment, ca: &CertificateAuthority, opts: &Options) -> Manifest {
    Manifest {
        format_version: FORMAT_VERSION,
        dcn_version: env!("CARGO_PKG_VERSION").into(),
        created_at: crate::timefmt::rfc3339(SystemTime::now()),
        hostname: deployment.hostname.clone(),
        address: deployment.address.clone(),
        ca_pin: ca.pin().to_string(),
        with_images: opts.with_images,
        members: Default::default(),
        dumps: Vec::new(),
        files: Vec::new(),
        dirs: Vec::new(),
    }
}

/// Every database the recipes of the deployed services declare.
fn databases(recipes: &Recipes, deployment: &Deployment) -> Vec<String> {
    deployment
        .services
        .iter()
        .filter_map(|s| recipes.services.get(s))
        .filter_map(|s| s.database.as_ref())
        .flat_map(|d| d.names.clone())
        .collect()
}

/// A part of the backup that a command dumps.
struct Dump<'a> {
    part: &'a str,
    service: &'a str,
    argv: Vec<String>,
}

impl Dump<'_> {
    /// Run the dump into a file in `staging`, add that to the archive and
    /// remove it; its size.
    fn add(
        &self,
        host: &Host,
        writer: &mut Writer,
        manifest: &mut Manifest,
        staging: &Path,
    ) -> Result<u64> {
        let file = staging.join(self.part);
        let (program, args) = self.argv.split_first().context("an empty dump command")?;
        host.runner.run(
            &Cmd::new(
                format!("dumping {} for the backup", self.part),
                program.as_str(),
            )
            .args(args.iter().cloned())
            .stdout_file(&file)
            .timeout(Duration::from_secs(3600)),
        )?;
        let member = format!("dumps/{}", self.part);
        let info = writer.add_file(&member, &file)?;
        Files::new(staging, false).remove(format!("/{}", self.part))?;
        manifest.dumps.push(DumpEntry {
            part: self.part.to_string(),
            service: self.service.to_string(),
            member,
        });
        Ok(info.size)
    }
}

fn part(name: &str, bytes: u64, started: Instant) -> Part {
    Part {
        name: name.to_string(),
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// `argv` with an argument that is exactly `{{ databases }}` replaced by
/// the database names.
fn expand(argv: &[String], databases: &[String]) -> Vec<String> {
    argv.iter()
        .flat_map(|a| {
            if a.replace(' ', "") == "{{databases}}" {
                databases.to_vec()
            } else {
                vec![a.clone()]
            }
        })
        .collect()
}

fn absolute(path: &Path) -> Result<PathBuf> {
    Ok(if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    })
}

/// Add every regular file and directory under `path` (a system path) to
/// the archive, with its mode and owner; links and special files are
/// left out with a warning, as is what `skip` names. A path that is not
/// there adds nothing. Returns the bytes added.
fn add_tree(
    host: &Host,
    writer: &mut Writer,
    manifest: &mut Manifest,
    part: &str,
    path: &str,
    skip: &dyn Fn(&str) -> bool,
) -> Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let root = host.files.root();
    let hp = host.files.host_path(path)?;
    // The entry itself, not followed, with its owner and type, which
    // Files does not tell.
    let meta = match std::fs::symlink_metadata(&hp) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::warn!("{part}: {path} is not there; the backup holds nothing of it");
            return Ok(0);
        }
        Err(e) => return Err(e).with_context(|| format!("reading {path}")),
    };
    if skip(path) {
        return Ok(0);
    }
    let owner = crate::host::users::user_name(root, meta.uid())?;
    let group = crate::host::users::group_name(root, meta.gid())?;
    let mode = meta.mode() & 0o7777;
    if meta.is_dir() {
        manifest.dirs.push(DirEntry {
            path: path.to_string(),
            mode,
            owner,
            group,
            part: part.to_string(),
        });
        let names = (host.files.list(path)).with_context(|| format!("listing {path}"))?;
        let mut bytes = 0;
        for n in names {
            bytes += add_tree(
                host,
                writer,
                manifest,
                part,
                &format!("{}/{n}", path.trim_end_matches('/')),
                skip,
            )?;
        }
        Ok(bytes)
    } else if meta.is_file() {
        let member = format!("files{path}");
        let info = writer.add_file(&member, &hp)?;
        manifest.files.push(FileEntry {
            path: path.to_string(),
            member,
            mode,
            owner,
            group,
            part: part.to_string(),
        });
        Ok(info.size)
    } else {
        tracing::warn!("{part}: {path} is not a regular file or directory; left out");
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_databases_placeholder_becomes_one_argument_each() {
        let argv: Vec<String> = ["mysqldump", "--databases", "{{ databases }}"]
            .map(String::from)
            .to_vec();
        let dbs = vec!["keystone".to_string(), "nova".to_string()];
        assert_eq!(
            expand(&argv, &dbs),
            ["mysqldump", "--databases", "keystone", "nova"]
        );
    }
}
