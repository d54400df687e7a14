//! The edge's compute services: the host's view of the control plane
//! (hosts entries, the CA), the values the services are rendered with, and
//! the phases that install, configure and start them.

use super::credentials::{Credentials, NODE_CERT, NODE_KEY};
use crate::bundle::Manifest;
use crate::deploy::{CertSource, Plan};
use crate::deployment::{Deployment, Record};
use crate::engine::{self, Phase};
use crate::host::{FileSpec, Files, Host};
use crate::openstack::compute_link::{ComputeLink, Login, WanLink};
use crate::recipes::{Recipes, ServicePhase, Values};
use crate::secrets::Secret;
use crate::types::PackageSource;
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

const HOSTS: &str = "/etc/hosts";

/// The node's certificate for the OVN southbound database, and the CAs it
/// trusts.
pub(crate) struct NodeCerts;

impl CertSource for NodeCerts {
    fn leaf(&self, files: &Files, name: &str) -> Result<(String, Secret)> {
        if name != "node" {
            bail!("recipe bug: an edge host has only its node certificate, not {name:?}");
        }
        let cert = files
            .read_string(NODE_CERT)?
            .context("the node certificate is missing; join again")?;
        let key = files
            .read_secret(NODE_KEY)?
            .context("the node key is missing; join again")?;
        Ok((cert, Secret::new(key)))
    }

    fn ca(&self, files: &Files) -> Result<String> {
        files
            .read_string(crate::paths::PUBLIC_CA)?
            .context("the CA certificate is missing; join again")
    }
}

/// How a deploy goes: a join, or an upgrade to a new release.
pub struct Deploy<'a> {
    pub manifest: &'a Manifest,
    /// The CAs to trust (PEM), from the bundle: a join writes them; an
    /// upgrade leaves what the node trusts now (a CA rotation may have
    /// changed it since the join).
    pub trusted_pem: Option<&'a str>,
    pub creds: &'a Credentials,
    pub hostname: &'a str,
    pub address: IpAddr,
    pub source: &'a PackageSource,
    /// Also bring every installed package to the source's version.
    pub upgrade: bool,
}

/// Write the host's view of the control plane (hosts entries, the CA),
/// then install, configure and start the compute services; what ran.
pub fn deploy(recipes: &Recipes, host: &Host, d: &Deploy) -> Result<engine::RunReport> {
    let (manifest, creds, hostname, address) = (d.manifest, d.creds, d.hostname, d.address);
    let files = &host.files;
    files.ensure_dir(crate::paths::ETC_DIR, &FileSpec::public_dir())?;
    if let Some(pem) = d.trusted_pem {
        files.write(crate::paths::PUBLIC_CA, pem.as_bytes(), &FileSpec::public())?;
    }
    write_hosts(files, manifest)?;
    let services: Vec<String> = recipes
        .services_for_roles(&["edge"])?
        .iter()
        .map(|s| s.service.clone())
        .collect();
    let facts = crate::host::facts::HostFacts::detect(files.root());
    let values = Arc::new(values(recipes, manifest, creds, hostname, address, &facts)?);
    // The site config this node applied since it joined wins over the
    // bundle's (the control plane's at export): one writer per drop-in.
    let custom: BTreeMap<String, String> =
        match crate::edge::join::config_sync::Applied::load(host)? {
            Some(applied) => applied.services,
            None => (manifest.custom_service_config.iter())
                .map(|(key, text)| (key.clone(), text.as_str().to_string()))
                .collect(),
        };
    files.write(
        crate::edge::join::config_sync::JOIN_ENDPOINT,
        format!("{}\n", manifest.control_plane.join_endpoint).as_bytes(),
        &FileSpec::public(),
    )?;
    let plan = Plan {
        recipes: recipes.clone(),
        services: services.clone(),
        values,
        custom_config: custom,
        source: d.source.clone(),
        certs: Arc::new(NodeCerts),
    };
    let mut packages = plan.packages_phase_for(d.upgrade);
    packages.steps.insert(
        0,
        Box::new(Record(Deployment {
            roles: vec!["edge".into()],
            services,
            hostname: hostname.to_string(),
            address: address.to_string(),
            site: Some(creds.site.clone()),
        })),
    );
    let mut compute = plan.service_phase(ServicePhase::Compute, "compute", BTreeMap::new())?;
    compute.steps.push(Box::new(crate::release::RecordRelease));
    let phases: Vec<Phase> = vec![packages, plan.configure_phase()?, compute];
    let report = engine::run(&phases, host)?;
    tracing::info!("    {} step(s) applied", report.applied());
    Ok(report)
}

/// The control plane's names in /etc/hosts, in a block dcn owns.
pub(crate) fn write_hosts(files: &Files, manifest: &Manifest) -> Result<()> {
    const BEGIN: &str = "# BEGIN dcn: control plane (managed by dcn join)";
    const END: &str = "# END dcn";
    let current = files.read_string(HOSTS)?.unwrap_or_default();
    let mut kept = String::new();
    let mut inside = false;
    for line in current.lines() {
        if line == BEGIN {
            inside = true;
        } else if line == END {
            inside = false;
        } else if !inside {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    let mut block = format!("{BEGIN}\n");
    for h in &manifest.hosts {
        let names: Vec<String> = h.names.iter().map(|n| n.to_string()).collect();
        block.push_str(&format!("{}\t{}\n", h.address, names.join(" ")));
    }
    block.push_str(END);
    block.push('\n');
    files.write(
        HOSTS,
        format!("{kept}{block}").as_bytes(),
        &FileSpec::public(),
    )?;
    Ok(())
}

/// The values an edge's compute services are rendered with: the control
/// plane's exports as they are in the bundle, TLS everywhere, the site's
/// own users; the edge role's recipe gives its network values and which
/// site credentials make its compute link.
pub(crate) fn values(
    recipes: &Recipes,
    manifest: &crate::bundle::Manifest,
    creds: &Credentials,
    hostname: &str,
    address: IpAddr,
    facts: &crate::host::facts::HostFacts,
) -> Result<Values> {
    let role = recipes.role(crate::recipes::catalogue::EDGE_ROLE)?;
    let link = (role.compute_link.as_ref())
        .context("the edge role's recipe has no computeLink: this dcn's recipes are broken")?;
    let cp = &manifest.control_plane;
    let export = |name: &str| {
        cp.exports.get(name).with_context(|| {
            format!(
                "the bundle's controlPlane.exports has no {name}; export a new bundle with this dcn"
            )
        })
    };
    let identity = export("identity")?;
    let messaging = export("messaging")?;
    let auth = (identity.as_str().trim_end_matches('/'))
        .trim_end_matches("/v3")
        .to_string();
    let ca = crate::paths::PUBLIC_CA;
    let strings = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        (pairs.iter())
            .map(|(k, val)| (k.to_string(), val.to_string()))
            .collect()
    };
    let mut v = Values {
        export: crate::recipes::exports::as_values(&cp.exports),
        cp: strings(&[
            ("address", identity.host()),
            ("region", cp.region.as_str()),
            ("authUrl", &auth),
            ("publicAuthUrl", &auth),
            ("cafile", ca),
        ]),
        host: facts.host_values(hostname, &address.to_string()),
        roles: vec!["edge".into()],
        network: role.network.clone(),
        ..Values::default()
    };
    // Every site credential, as the recipes name them.
    for (name, c) in &creds.credentials {
        v.password.insert(name.clone(), c.password.expose().into());
        if let Some(user) = &c.username {
            v.user.insert(name.clone(), user.clone());
        }
    }
    let login = |name: &str| -> Result<Login> {
        let c = creds.get(name)?;
        let user = c.username.as_deref().with_context(|| {
            format!("the join service's site credential {name} has no username")
        })?;
        Ok(Login {
            user,
            password: c.password.expose(),
        })
    };
    ComputeLink::over_the_wan(&WanLink {
        messaging,
        southbound: export("ovnSouthbound")?,
        messaging_login: login(&link.messaging)?,
        service_login: login(&link.service)?,
        ca_file: ca,
        metadata_host: identity.host(),
        zone: manifest.site.as_str(),
        config_drive: manifest.config_drive,
    })
    .apply_to(&mut v);
    Ok(v)
}
