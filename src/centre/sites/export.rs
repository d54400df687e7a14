//! `dcn bundle export --site NAME`: create the site if it is new (or
//! re-admit a revoked one), record a join token by its
//! hash, and write a bundle (format v3) that carries the CA, the exports,
//! the site and the token — no long-lived password.

use super::registry::{Registry, Site, TokenRecord};
use crate::bundle::{
    BundleContents, ControlPlaneInfo, FORMAT_VERSION, HostsEntry, HttpsUrl, JoinToken, Manifest,
    save_bundle, write_bundle,
};
use crate::config::StandaloneConfig;
use crate::deployment::{CONFIG_FILE, Deployment, saved_config};
use crate::host::Host;
use crate::openstack::compute::ComputeCloud;
use crate::pki::Pin;
use crate::recipes::Recipes;
use crate::timefmt::rfc3339;
use crate::types::IniText;
use crate::types::SiteName;
use crate::types::bundle_ttl::check_ttl;
use anyhow::{Context, Result, anyhow, bail};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// Options of `bundle export`.
pub struct ExportOptions {
    pub site: SiteName,
    /// Default: the config's `bundle.ttl`.
    pub ttl: Option<Duration>,
    /// Default: the config's `bundle.maxUses`.
    pub max_uses: Option<u32>,
    pub output: PathBuf,
}

/// What export did.
pub struct Exported {
    pub path: PathBuf,
    pub pin: Pin,
    pub site_created: bool,
    pub token_id: String,
    pub not_after: SystemTime,
    pub max_uses: u32,
}

/// The site, new, revoked (then re-admitted) or known, with its zone;
/// whether it was made (or re-admitted) now. Its nodes get their
/// credentials when they join.
fn admit_site(host: &Host, registry: &Registry, site_name: &str) -> Result<bool> {
    let existing = registry.site(site_name)?;
    let site_created = existing.as_ref().is_none_or(|s| s.revoked_at.is_some());
    let aggregate = crate::openstack::compute_cloud(host)?.ensure_zone(site_name)?;
    registry.save_site(&Site {
        name: site_name.to_string(),
        created_at: match &existing {
            Some(s) if s.revoked_at.is_none() => s.created_at.clone(),
            _ => rfc3339(SystemTime::now()),
        },
        aggregate_id: Some(aggregate),
        revoked_at: None,
    })?;
    Ok(site_created)
}

/// The bundle's lifetime and uses: the command line's, else the config's.
fn limits(
    opts: &ExportOptions,
    config: &crate::config::StandaloneConfig,
) -> Result<(std::time::Duration, u32)> {
    // The saved config's bundle.ttl was checked when it was parsed.
    let ttl = opts.ttl.unwrap_or(config.bundle.ttl.0);
    let max_uses = opts.max_uses.unwrap_or(config.bundle.max_uses);
    if max_uses == 0 {
        bail!("bundle.maxUses in {CONFIG_FILE} must be at least 1");
    }
    Ok((ttl, max_uses))
}

/// Export a join bundle for `opts.site`. The options are checked before
/// anything is read, created or written.
pub fn export(recipes: &Recipes, host: &Host, opts: &ExportOptions) -> Result<Exported> {
    if let Some(ttl) = opts.ttl {
        check_ttl(ttl).map_err(|why| anyhow!("--ttl {why}"))?;
    }
    if opts.max_uses == Some(0) {
        bail!("--max-uses must be at least 1");
    }
    let files = &host.files;
    let deployment = Deployment::load(files)?
        .filter(|d| d.roles.iter().any(|r| r == "controller"))
        .context("this host is not a dcn control plane: run `dcn standalone init` first")?;
    let config = saved_config(files)?;
    let (ttl, max_uses) = limits(opts, &config)?;
    // During a CA rotation the new CA signs (and is pinned); the one the
    // services still present is trusted beside it.
    let authorities = crate::certs::authority::Authorities::new(files);
    let ca = authorities.bundle_signer()?;
    let also_trusted: Vec<String> = (authorities.trusted()?.into_iter())
        .filter(|c| c.trim() != ca.cert_pem().trim())
        .collect();
    let registry = Registry::new(files);
    let _lock = registry.lock()?;

    let site_name = opts.site.as_str();
    let site_created = admit_site(host, &registry, site_name)?;

    // The token, stored as its hash only.
    let token = JoinToken::generate();
    let now = SystemTime::now();
    let not_after = now + ttl;
    registry.save_token(&TokenRecord {
        id: token.id.clone(),
        hash: token.hash(),
        site: site_name.to_string(),
        created_at: rfc3339(now),
        not_after: rfc3339(not_after),
        max_uses,
        uses: 0,
    })?;

    let manifest = manifest(
        recipes,
        site_name,
        &deployment,
        &config,
        &config.services.custom_configs(),
        (now, not_after),
        &token.id,
    )
    .context("internal error building the manifest")?;
    let manifest = Manifest {
        also_trusted,
        ..manifest
    };
    let bytes = write_bundle(
        recipes,
        &BundleContents {
            manifest,
            ca_cert_pem: ca.cert_pem().to_string(),
            token: token.clone(),
        },
        &ca,
    )?;
    save_bundle(&opts.output, &bytes)
        .with_context(|| format!("writing {}", opts.output.display()))?;
    Ok(Exported {
        path: opts.output.clone(),
        pin: ca.pin(),
        site_created,
        token_id: token.id.clone(),
        not_after,
        max_uses,
    })
}

/// The manifest of a bundle for `site`: the catalogue's exports rendered
/// with the control plane's `cp.*` values, as its own recipes are, and the
/// `customServiceConfig` of the services that run on edges.
pub(crate) fn manifest(
    recipes: &Recipes,
    site: &str,
    deployment: &Deployment,
    config: &StandaloneConfig,
    custom: &BTreeMap<String, IniText>,
    (created_at, not_after): (SystemTime, SystemTime),
    token_id: &str,
) -> Result<Manifest> {
    fn parse<T: std::str::FromStr<Err: std::fmt::Display>>(s: String) -> Result<T> {
        s.parse().map_err(|e| anyhow!("{e}"))
    }
    let a = &deployment.address;
    let edge_keys = recipes.edge_config_keys();
    let cp =
        crate::centre::control_plane::values::control_plane_map(config, &deployment.hostname, a);
    Ok(Manifest {
        format_version: FORMAT_VERSION,
        site: parse(site.to_string())?,
        created_at,
        not_after,
        control_plane: ControlPlaneInfo {
            join_endpoint: parse::<HttpsUrl>(format!(
                "https://{a}:{}",
                config.control_plane.join_port.0
            ))?,
            region: config.control_plane.region.clone(),
            exports: crate::recipes::exports::render(recipes, &cp)?,
        },
        hosts: vec![HostsEntry {
            address: parse(a.clone())?,
            names: vec![parse(deployment.hostname.clone())?],
        }],
        custom_service_config: (custom.iter())
            .filter(|(key, text)| edge_keys.contains(&key.as_str()) && !text.is_empty())
            .map(|(key, text)| (key.clone(), text.clone()))
            .collect(),
        config_drive: config.zones.edge_config_drive,
        also_trusted: Vec::new(),
        token_id: token_id.to_string(),
        // write_bundle fills in the digests, then validates the whole.
        members: BTreeMap::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::RecordingRunner;
    use std::path::Path;
    use std::sync::Arc;

    /// Every file under `dir` with its bytes, to show nothing changed.
    fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(tree(&p));
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
        out.sort();
        out
    }

    /// A control plane's state in a temporary root: the deployment record,
    /// the saved config (with `bundle_yaml` appended) and the CA.
    fn control_plane(root: &Path, bundle_yaml: &str) {
        let put = |path: &str, text: &str| {
            let p = root.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(
            crate::deployment::DEPLOYMENT_FILE,
            r#"{"roles":["controller"],"services":[],"hostname":"cp","address":"10.240.0.10"}"#,
        );
        put(
            CONFIG_FILE,
            &format!("apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\n{bundle_yaml}"),
        );
        let ca = crate::pki::CertificateAuthority::generate("export test CA").unwrap();
        put(crate::paths::CA_CERT, ca.cert_pem());
        put(crate::paths::CA_KEY, ca.key_pem().expose());
    }

    #[test]
    fn an_absurd_ttl_is_refused_before_anything_is_provisioned_or_written() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        control_plane(&root, "");
        let before = tree(tmp.path());
        let runner = Arc::new(RecordingRunner::new());
        let host = Host::with_runner(&root, runner.clone(), false);
        let year = Duration::from_secs(365 * 86400);
        for ttl in [8000 * year, Duration::MAX, Duration::ZERO, year * 2] {
            let opts = ExportOptions {
                site: "edge1".parse().unwrap(),
                ttl: Some(ttl),
                max_uses: None,
                output: tmp.path().join("edge1.tar.gz"),
            };
            let e = format!(
                "{:#}",
                export(crate::recipes::for_tests(), &host, &opts)
                    .err()
                    .expect("refused")
            );
            assert!(
                e.starts_with("--ttl ") && e.contains("allowed range") && e.contains("1s to 365d"),
                "{e}"
            );
        }
        // A saved config with an absurd bundle.ttl is refused the same way.
        control_plane(&root, "bundle:\n  ttl: 8000y\n");
        let before_config = tree(tmp.path());
        let opts = ExportOptions {
            site: "edge1".parse().unwrap(),
            ttl: None,
            max_uses: None,
            output: tmp.path().join("edge1.tar.gz"),
        };
        let e = format!(
            "{:#}",
            export(crate::recipes::for_tests(), &host, &opts)
                .err()
                .expect("refused")
        );
        assert!(e.contains("bundle.ttl") && e.contains("1s to 365d"), "{e}");
        assert!(runner.calls().is_empty(), "{:?}", runner.command_lines());
        assert_eq!(tree(tmp.path()), before_config);
        assert_eq!(before.len(), before_config.len());
    }
}
