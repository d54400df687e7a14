//! The config-files step of a service: directories, rendered config files,
//! the operator's `customServiceConfig` drop-in, files to remove, and
//! certificates. It is done when every file already has its contents,
//! mode and owner.

use crate::engine::{Context, Step};
use crate::host::{FileSpec, Files};
use crate::recipes::{
    CertificateRecipe, CustomConfigRecipe, RenderedFile, ServiceRecipe, Values, render_files,
};
use crate::secrets::Secret;
use anyhow::{Context as _, Result, bail};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The first line of every drop-in dcn writes from `customServiceConfig`.
pub const DROP_IN_HEADER: &str =
    "# customServiceConfig from the dcn config: wins over dcn's settings.\n";

/// How a `customServiceConfig` drop-in is kept, on the control plane and on
/// an edge alike: operators may put credentials in it, so it stays out of
/// diffs and only the service's group reads it.
pub fn drop_in_spec(c: &CustomConfigRecipe) -> FileSpec {
    FileSpec::secret().mode(0o640).owner(&c.owner, &c.group)
}

/// A drop-in's contents: dcn's header, then the operator's text.
pub fn drop_in_body(text: &str) -> String {
    format!("{DROP_IN_HEADER}{text}")
}

/// Where certificates named in recipes come from.
pub trait CertSource: Send + Sync {
    /// The certificate and key (PEM) of the leaf called `name`.
    fn leaf(&self, files: &Files, name: &str) -> Result<(String, Secret)>;
    /// The CA certificate (PEM).
    fn ca(&self, files: &Files) -> Result<String>;
}

pub struct ConfigFiles {
    service: String,
    dirs: Vec<(String, FileSpec)>,
    files: Vec<RenderedFile>,
    /// The drop-in path and its text (empty: the drop-in is removed).
    custom: Option<(String, FileSpec, String)>,
    remove: Vec<String>,
    certs: Vec<CertificateRecipe>,
    cert_source: Arc<dyn CertSource>,
}

fn parse_mode(mode: &str, what: &str) -> Result<u32> {
    u32::from_str_radix(mode.trim_start_matches("0o"), 8)
        .with_context(|| format!("mode {mode:?} of {what} is not octal"))
}

impl ConfigFiles {
    pub fn new(
        s: &ServiceRecipe,
        values: &Values,
        custom_config: &BTreeMap<String, String>,
        cert_source: Arc<dyn CertSource>,
    ) -> Result<ConfigFiles> {
        let dirs = s
            .directories
            .iter()
            .map(|d| {
                Ok((
                    d.path.clone(),
                    FileSpec::public_dir()
                        .mode(parse_mode(&d.mode, &d.path)?)
                        .owner(&d.owner, &d.group),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let custom = s.custom_config.as_ref().map(|c| {
            let spec = drop_in_spec(c);
            let text = custom_config
                .get(&c.config_key)
                .cloned()
                .unwrap_or_default();
            (c.path.clone(), spec, text)
        });
        let certs = s
            .certificates
            .iter()
            .filter(|c| {
                c.when_role
                    .as_ref()
                    .is_none_or(|r| values.roles.contains(r))
            })
            .cloned()
            .collect();
        Ok(ConfigFiles {
            service: s.service.clone(),
            dirs,
            files: render_files(s, values)?,
            custom,
            remove: s.remove_files.clone(),
            certs,
            cert_source,
        })
    }

    /// Every (path, contents, spec) this step writes; certificates are read
    /// from their source.
    fn writes(&self, files: &Files) -> Result<Vec<(String, Vec<u8>, FileSpec)>> {
        let mut out: Vec<(String, Vec<u8>, FileSpec)> = self
            .files
            .iter()
            .map(|f| {
                (
                    f.path.clone(),
                    f.contents.clone().into_bytes(),
                    f.spec.clone(),
                )
            })
            .collect();
        if let Some((path, spec, text)) = &self.custom
            && !text.trim().is_empty()
        {
            let body = drop_in_body(text);
            out.push((path.clone(), body.into_bytes(), spec.clone()));
        }
        for c in &self.certs {
            out.extend(certificate_files(c, self.cert_source.as_ref(), files)?);
        }
        Ok(out)
    }

    /// The paths and contents of rendered files (for conflict checks and
    /// restart fingerprints).
    pub fn rendered(&self) -> &[RenderedFile] {
        &self.files
    }
}

/// The copies of a certificate a service reads (certificate, key, CA
/// certificates), as (path, contents, spec), from `source`.
pub fn certificate_files(
    c: &CertificateRecipe,
    source: &dyn CertSource,
    files: &Files,
) -> Result<Vec<(String, Vec<u8>, FileSpec)>> {
    let (cert, key) = source.leaf(files, &c.leaf)?;
    let ca = source.ca(files)?;
    Ok(vec![
        (
            c.cert.clone(),
            cert.into_bytes(),
            FileSpec::public().owner(&c.owner, &c.group),
        ),
        (
            c.key.clone(),
            key.expose().as_bytes().to_vec(),
            FileSpec::secret().owner(&c.owner, &c.group),
        ),
        (
            c.ca.clone(),
            ca.into_bytes(),
            FileSpec::public().owner(&c.owner, &c.group),
        ),
    ])
}

/// Two services may write the same file (the empty `nova.conf` of nova and
/// nova-compute) only with the same contents.
pub fn check_no_conflicts(steps: &[ConfigFiles]) -> Result<()> {
    let mut seen: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    for s in steps {
        for f in &s.files {
            if let Some((other, contents)) = seen.insert(&f.path, (&s.service, &f.contents))
                && contents != f.contents
            {
                bail!(
                    "recipe bug: services {other} and {} write different contents to {}",
                    s.service,
                    f.path
                );
            }
        }
    }
    Ok(())
}

impl Step for ConfigFiles {
    /// Only files written through `Files`, which fsyncs them.
    fn needs_flush(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        format!("configure.{}", self.service)
    }

    fn describe(&self) -> String {
        format!("write the configuration of {}", self.service)
    }

    fn is_done(&self, ctx: &Context) -> Result<bool> {
        let files = &ctx.host.files;
        for (path, spec) in &self.dirs {
            if !files.dir_matches(path, spec)? {
                return Ok(false);
            }
        }
        for (path, contents, spec) in self.writes(files)? {
            if !files.matches(&path, &contents, &spec)? {
                return Ok(false);
            }
        }
        if let Some((path, _, text)) = &self.custom
            && text.trim().is_empty()
            && files.exists(path)?
        {
            return Ok(false);
        }
        for path in &self.remove {
            if files.exists(path)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn apply(&self, ctx: &Context) -> Result<()> {
        let files = &ctx.host.files;
        for (path, spec) in &self.dirs {
            files.ensure_dir(path, spec)?;
        }
        for (path, contents, spec) in self.writes(files)? {
            if files.write(&path, &contents, &spec)?.changed() {
                tracing::info!("    wrote {path}");
            }
        }
        if let Some((path, _, text)) = &self.custom
            && text.trim().is_empty()
            && files.remove(path)?.changed()
        {
            tracing::info!("    removed {path} (no customServiceConfig any more)");
        }
        for path in &self.remove {
            files.remove(path)?;
        }
        Ok(())
    }
}
