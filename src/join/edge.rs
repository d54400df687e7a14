//! The edge host's side of a join: who it is, what it checks, the state it
//! keeps (`/var/lib/dcn/node/`: its key, certificate and the site
//! credentials from the join reply, all 0600), and the values its compute
//! services are configured with.

use super::client::JoinClient;
use super::protocol::JoinRequest;
use crate::bundle::VerifiedBundle;
use crate::config::types::PackageSource;
use crate::deploy::{CertSource, Plan};
use crate::deployment::{Deployment, Record};
use crate::engine::{self, Phase};
use crate::host::{FileSpec, Files, Host};
use crate::recipes::compute_link::{ComputeLink, Interface};
use crate::recipes::{Recipes, ServicePhase, Values};
use crate::secrets::Secret;
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::net::{IpAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NODE_DIR: &str = "/var/lib/dcn/node";
const NODE_KEY: &str = "/var/lib/dcn/node/node.key";
const NODE_CERT: &str = "/var/lib/dcn/node/node.crt";
const CREDENTIALS: &str = "/var/lib/dcn/node/credentials.yaml";
const HOSTS: &str = "/etc/hosts";

/// What the join reply gave this node, kept for re-runs.
pub(crate) struct Credentials {
    pub site: String,
    pub rabbit_user: String,
    pub rabbit_password: Secret,
    pub service_user: String,
    pub service_password: Secret,
    pub metadata_secret: Secret,
    pub node_secret: Secret,
}

impl Credentials {
    fn to_yaml(&self) -> String {
        format!(
            "# dcn: this node's credentials from the join reply. Secret.\nsite: {}\nrabbitUser: {}\nrabbitPassword: {}\nserviceUser: {}\nservicePassword: {}\nmetadataSecret: {}\nnodeSecret: {}\n",
            self.site,
            self.rabbit_user,
            self.rabbit_password.expose(),
            self.service_user,
            self.service_password.expose(),
            self.metadata_secret.expose(),
            self.node_secret.expose()
        )
    }

    pub(super) fn load(files: &Files) -> Result<Option<Credentials>> {
        let Some(text) = files.read_string(CREDENTIALS)? else {
            return Ok(None);
        };
        let m: BTreeMap<String, String> =
            serde_yaml::from_str(&text).with_context(|| format!("{CREDENTIALS} is damaged"))?;
        let get = |k: &str| {
            m.get(k)
                .cloned()
                .with_context(|| format!("{CREDENTIALS} lacks {k}"))
        };
        Ok(Some(Credentials {
            site: get("site")?,
            rabbit_user: get("rabbitUser")?,
            rabbit_password: Secret::new(get("rabbitPassword")?),
            service_user: get("serviceUser")?,
            service_password: Secret::new(get("servicePassword")?),
            metadata_secret: Secret::new(get("metadataSecret")?),
            node_secret: Secret::new(get("nodeSecret")?),
        }))
    }
}

/// The reporter of this join's progress: to the bundle's join service,
/// with the node secret of an earlier join of this host, else the bundle's
/// token. Off (with a warning) when no client can be made.
pub fn reporter(host: &Host, bundle: &VerifiedBundle, hostname: &str) -> super::Reporter {
    let credential = match Credentials::load(&host.files) {
        Ok(Some(c)) if c.site == bundle.manifest.site.as_str() => c.node_secret,
        _ => Secret::new(bundle.token.expose_full()),
    };
    match JoinClient::new(
        bundle.manifest.control_plane.join_endpoint.as_str(),
        &bundle.ca_cert_pem,
    ) {
        Ok(client) => {
            super::Reporter::new(client, hostname, credential, super::reporter::HEARTBEAT)
        }
        Err(e) => {
            tracing::warn!("progress is not reported to the control plane: {e:#}");
            super::Reporter::off()
        }
    }
}

/// This host's name: the option, an earlier join's, or the host's own.
pub fn hostname(
    host: &Host,
    option: Option<&str>,
    previous: Option<&Deployment>,
) -> Result<String> {
    let name = match (option, previous) {
        (Some(h), _) => h.to_string(),
        (None, Some(d)) => d.hostname.clone(),
        (None, None) => match host.files.read_string("/etc/hostname")? {
            Some(h) if !h.trim().is_empty() => h.trim().to_string(),
            _ => nix::unistd::gethostname()?.to_string_lossy().into_owned(),
        },
    };
    name.parse::<crate::config::types::Hostname>()
        .map_err(|e| anyhow::anyhow!("{e}; pass --hostname"))?;
    if let Some(d) = previous
        && d.hostname != name
    {
        bail!(
            "this host joined as {}; a node cannot be renamed (nova and OVN key on the name)",
            d.hostname
        );
    }
    Ok(name)
}

/// The address this host's services use.
pub fn address(option: Option<IpAddr>, previous: Option<&Deployment>) -> Result<IpAddr> {
    if let Some(a) = option {
        return Ok(a);
    }
    if let Some(d) = previous {
        return d.address.parse().context("the address of the earlier join");
    }
    crate::standalone::identity::detect_address().context("pass --my-ip")
}

/// The edge preflight; errors stop the join (ports once joined are ours).
pub fn preflight(host: &Host, ignore: &[String], rejoined: bool) -> Result<()> {
    let mut ignore = ignore.to_vec();
    if rejoined {
        ignore.push("ports".into());
    }
    let report = crate::preflight::run(
        crate::preflight::Role::Edge,
        host.files.root(),
        &Default::default(),
        &ignore,
    )?;
    if report.has_errors() {
        bail!("preflight found problems; nothing was changed:\n{report}");
    }
    if report.virt_type() == "qemu" {
        tracing::warn!(
            "no hardware virtualization: instances on this host run under qemu software emulation"
        );
    }
    Ok(())
}

/// Every control-plane endpoint an edge uses, as (name, host:port).
pub fn endpoints(bundle: &VerifiedBundle) -> Vec<(String, String)> {
    let cp = &bundle.manifest.control_plane;
    let hostport = |url: &str| {
        let rest = url.split_once("://").map(|x| x.1).unwrap_or(url);
        rest.split('/').next().unwrap_or(rest).to_string()
    };
    let e = &cp.endpoints;
    let mut v = vec![
        ("keystone".to_string(), hostport(e.identity.as_str())),
        ("placement".into(), hostport(e.placement.as_str())),
        ("nova".into(), hostport(e.compute.as_str())),
        ("glance".into(), hostport(e.image.as_str())),
        ("neutron".into(), hostport(e.network.as_str())),
        (
            "RabbitMQ (AMQPS)".into(),
            format!("{}:{}", cp.messaging.host, cp.messaging.port.0),
        ),
    ];
    if let Some(sb) = cp.ovn_southbound.as_str().strip_prefix("ssl:") {
        v.push(("OVN southbound".into(), sb.to_string()));
    }
    v
}

/// Whether a TCP connection to `target` succeeds.
pub fn tcp_reachable(target: &str) -> Result<()> {
    let addr = target
        .to_socket_addrs()
        .with_context(|| format!("resolving {target}"))?
        .next()
        .with_context(|| format!("{target} resolves to nothing"))?;
    TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("connecting to {target}"))?;
    Ok(())
}

/// Join the site (or, when this host joined it before, reuse the stored
/// credentials), and keep what the reply carries.
pub fn request(
    host: &Host,
    client: &JoinClient,
    bundle: &VerifiedBundle,
    hostname: &str,
    address: IpAddr,
    rejoined: bool,
    deadline: Instant,
) -> Result<Credentials> {
    let files = &host.files;
    if rejoined
        && let Some(c) = Credentials::load(files)?
        && files.exists(NODE_CERT)?
    {
        tracing::info!(
            "    this host joined site {} before; keeping its credentials",
            c.site
        );
        return Ok(c);
    }
    // The node's key is made here and never leaves the host. It is kept
    // before the request: a join interrupted after the control plane
    // recorded this host can only be repeated with the same key.
    let fresh_host = !files.exists(crate::paths::STATE_DIR)?;
    let kept = files.read_string(NODE_KEY)?;
    let made_key = kept.is_none();
    let key = match kept {
        Some(pem) => rcgen::KeyPair::from_pem(&pem)
            .context("reading the node key kept by an earlier join (remove it to start over)")?,
        None => {
            let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
                .context("generating the node key")?;
            files.ensure_dir(crate::paths::STATE_DIR, &FileSpec::private_dir())?;
            files.ensure_dir(NODE_DIR, &FileSpec::private_dir())?;
            files.write(
                NODE_KEY,
                key.serialize_pem().as_bytes(),
                &FileSpec::secret(),
            )?;
            key
        }
    };
    let mut params =
        rcgen::CertificateParams::new(vec![hostname.to_string()]).context("the node's name")?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, hostname);
    let csr = params
        .serialize_request(&key)
        .context("making the CSR")?
        .pem()
        .context("encoding the CSR")?;
    let req = JoinRequest {
        token: bundle.token.expose_full(),
        hostname: hostname.to_string(),
        address: address.to_string(),
        csr,
        dcn_version: env!("CARGO_PKG_VERSION").into(),
    };
    let reply = match super::retry(deadline, "the join service", || client.join(&req)) {
        Ok(r) => r,
        // Refused: the control plane recorded nothing, so neither does
        // this host. (Anything else may have reached it: keep the key.)
        Err(e) if made_key && e.downcast_ref::<super::client::Refused>().is_some() => {
            if fresh_host {
                files.remove_all(crate::paths::STATE_DIR)?;
            } else {
                files.remove(NODE_KEY)?;
            }
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    // Signed by a CA of this node's own (the OVN SB trusts it while the
    // node is a member), so what matters here is that it is for our key.
    let info = crate::pki::CertInfo::from_pem(&reply.node_certificate)
        .context("the join service returned an unreadable certificate")?;
    if info.spki_public_key != key.public_key_raw() {
        bail!(
            "the join service returned a certificate for another key; is the join endpoint really this control plane?"
        );
    }
    let creds = Credentials {
        site: reply.site.clone(),
        rabbit_user: reply.messaging.username.clone(),
        rabbit_password: Secret::new(reply.messaging.password.clone()),
        service_user: reply.service_user.username.clone(),
        service_password: Secret::new(reply.service_user.password.clone()),
        metadata_secret: Secret::new(reply.metadata_secret.clone()),
        node_secret: Secret::new(reply.node_secret.clone()),
    };
    files.write(
        NODE_CERT,
        reply.node_certificate.as_bytes(),
        &FileSpec::secret(),
    )?;
    files.write(CREDENTIALS, creds.to_yaml().as_bytes(), &FileSpec::secret())?;
    Ok(creds)
}

/// The node's certificate for the OVN southbound database.
struct NodeCerts;

impl CertSource for NodeCerts {
    fn leaf(&self, files: &Files, name: &str) -> Result<(String, Secret)> {
        if name != "node" {
            bail!("recipe bug: an edge host has only its node certificate, not {name:?}");
        }
        let cert = files
            .read_string(NODE_CERT)?
            .context("the node certificate is missing; join again")?;
        let key = files
            .read_string(NODE_KEY)?
            .context("the node key is missing; join again")?;
        Ok((cert, Secret::new(key)))
    }

    fn ca(&self, files: &Files) -> Result<String> {
        files
            .read_string(crate::standalone::values::PUBLIC_CA)?
            .context("the CA certificate is missing; join again")
    }
}

/// Write the host's view of the control plane (hosts entries, the CA),
/// then install, configure and start the compute services.
pub fn deploy(
    host: &Host,
    bundle: &VerifiedBundle,
    creds: &Credentials,
    hostname: &str,
    address: IpAddr,
    source: &PackageSource,
) -> Result<()> {
    let files = &host.files;
    files.ensure_dir(crate::paths::ETC_DIR, &FileSpec::public_dir())?;
    files.write(
        crate::standalone::values::PUBLIC_CA,
        bundle.ca_cert_pem.as_bytes(),
        &FileSpec::public(),
    )?;
    write_hosts(files, bundle)?;

    let recipes = Recipes::embedded()?;
    let services: Vec<String> = recipes
        .services_for_roles(&["edge"])?
        .iter()
        .map(|s| s.service.clone())
        .collect();
    let facts = crate::standalone::values::HostFacts::detect(files.root());
    let values = Arc::new(values(&bundle.manifest, creds, hostname, address, &facts));
    // The site config this node applied since it joined wins over the
    // bundle's (the control plane's at export): one writer per drop-in.
    let custom: BTreeMap<String, String> = match super::config_sync::Applied::load(host)? {
        Some(applied) => applied.services,
        None => (bundle.manifest.custom_service_config.iter())
            .map(|(key, text)| (key.clone(), text.as_str().to_string()))
            .collect(),
    };
    files.write(
        super::config_sync::JOIN_ENDPOINT,
        format!("{}\n", bundle.manifest.control_plane.join_endpoint).as_bytes(),
        &FileSpec::public(),
    )?;
    let plan = Plan {
        recipes,
        services: services.clone(),
        values,
        custom_config: custom,
        source: source.clone(),
        certs: Arc::new(NodeCerts),
    };
    let mut packages = plan.packages_phase();
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
    let phases: Vec<Phase> = vec![
        packages,
        plan.configure_phase()?,
        plan.service_phase(ServicePhase::Compute, "compute", BTreeMap::new())?,
    ];
    let report = engine::run(&phases, host)?;
    tracing::info!("    {} step(s) applied", report.applied());
    Ok(())
}

/// The control plane's names in /etc/hosts, in a block dcn owns.
fn write_hosts(files: &Files, bundle: &VerifiedBundle) -> Result<()> {
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
    for h in &bundle.manifest.hosts {
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

/// The values an edge's compute services are rendered with: TLS
/// everywhere, the site's own users.
pub(crate) fn values(
    manifest: &crate::bundle::Manifest,
    creds: &Credentials,
    hostname: &str,
    address: IpAddr,
    facts: &crate::standalone::values::HostFacts,
) -> Values {
    let cp = &manifest.control_plane;
    let cp_host = cp.messaging.host.to_string();
    let ca = crate::standalone::values::PUBLIC_CA;
    let identity = cp.endpoints.identity.as_str();
    let auth = identity
        .trim_end_matches('/')
        .trim_end_matches("/v3")
        .to_string();
    let mut v = Values::default();
    let set = |m: &mut BTreeMap<String, String>, k: &str, val: &str| {
        m.insert(k.to_string(), val.to_string());
    };
    set(&mut v.cp, "address", &cp_host);
    set(&mut v.cp, "region", cp.region.as_str());
    set(&mut v.cp, "authUrl", &auth);
    set(&mut v.cp, "publicAuthUrl", &auth);
    set(&mut v.cp, "cafile", ca);
    v.host = facts.host_values(hostname, &address.to_string());
    v.roles = vec!["edge".into()];
    set(&mut v.network, "encapsulation", "geneve");
    set(&mut v.network, "bridgeMappings", "physnet1:br-ex");
    set(&mut v.network, "bridges", "br-ex");
    v.password.insert(
        "metadata_secret".into(),
        creds.metadata_secret.expose().into(),
    );
    v.password
        .insert("site_rabbit".into(), creds.rabbit_password.expose().into());
    ComputeLink {
        transport_url: format!(
            "rabbit://{}:{}@{}:{}/",
            creds.rabbit_user,
            creds.rabbit_password.expose(),
            cp.messaging.host,
            cp.messaging.port.0
        ),
        rabbit_tls: cp.messaging.tls,
        ca_file: ca.into(),
        sb_connection: cp.ovn_southbound.to_string(),
        sb_tls: true,
        service_user: creds.service_user.clone(),
        service_password: creds.service_password.expose().into(),
        novncproxy_url: cp.endpoints.novncproxy.to_string(),
        interface: Interface::Public,
        metadata_host: cp_host,
        metadata_tls: true,
        zone: manifest.site.to_string(),
        config_drive: manifest.config_drive,
    }
    .apply_to(&mut v);
    v
}
