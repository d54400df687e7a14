//! Control-plane steps that are code rather than recipe data: the
//! preflight gate, RabbitMQ's users, keystone's projects, users and catalog,
//! and mapping the standalone host's own compute service to the cell.

use crate::deploy::{CertSource, digest};
use crate::engine::{Context, Step};
use crate::host::{Cmd, Files};
use crate::openstack::{Cloud, Credentials, identity};
use crate::paths;
use crate::recipes::{Recipes, Values, render_str};
use crate::secrets::Secret;
use anyhow::{Context as _, Result, bail};
use std::time::{Duration, Instant};

/// Certificates of the control plane: leaves and CA from /var/lib/dcn/pki.
pub struct PkiCerts;

impl CertSource for PkiCerts {
    fn leaf(&self, files: &Files, name: &str) -> Result<(String, Secret)> {
        if files.is_dry_run() && !files.exists(&paths::leaf_cert(name))? {
            return Ok(("(issued by the secrets phase)".into(), Secret::new("")));
        }
        let cert = files
            .read_string(&paths::leaf_cert(name))?
            .with_context(|| {
                format!(
                    "{} is missing; run `dcn standalone init --phase secrets`",
                    paths::leaf_cert(name)
                )
            })?;
        let key = files
            .read_secret(&paths::leaf_key(name))?
            .with_context(|| {
                format!(
                    "{} is missing; run `dcn standalone init --phase secrets`",
                    paths::leaf_key(name)
                )
            })?;
        Ok((cert, Secret::new(key)))
    }

    fn ca(&self, files: &Files) -> Result<String> {
        if files.is_dry_run() && !files.exists(paths::CA_CERT)? {
            return Ok("(created by the secrets phase)".into());
        }
        files.read_string(paths::CA_CERT)?.with_context(|| {
            format!(
                "{} is missing; run `dcn standalone init --phase secrets`",
                paths::CA_CERT
            )
        })
    }
}

/// Preflight as a gate: errors stop init unless ignored.
pub struct Preflight {
    pub params: crate::preflight::Params,
    pub ignore: Vec<String>,
}

impl Step for Preflight {
    fn name(&self) -> String {
        "preflight.checks".into()
    }
    fn describe(&self) -> String {
        "check that this host can run the control plane".into()
    }
    fn is_check(&self) -> bool {
        true
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        let mut ignore = self.ignore.clone();
        // Once dcn has installed the services here (a re-run, or a resumed
        // run), they hold the ports.
        if ctx.journal.has_run("packages.install") {
            ignore.push("ports".into());
        }
        let report = crate::preflight::run(
            crate::preflight::Role::Standalone,
            ctx.host.files.root(),
            &self.params,
            &ignore,
        )?;
        for line in report.to_string().lines() {
            tracing::debug!("    {line}");
        }
        if report.has_errors() {
            bail!("preflight found problems; nothing was changed:\n{report}");
        }
        Ok(())
    }
}

/// RabbitMQ: no guest, a user for the control plane (password on stdin).
pub struct RabbitUsers {
    pub password: Secret,
}

impl Step for RabbitUsers {
    fn name(&self) -> String {
        "rabbitmq.users".into()
    }
    fn describe(&self) -> String {
        "remove RabbitMQ's guest user and create the control plane's".into()
    }
    fn fingerprint(&self) -> String {
        digest([self.password.expose().as_bytes()])
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        ctx.host.runner.run(
            &Cmd::new("removing RabbitMQ's guest user", "rabbitmqctl")
                .args(["delete_user", "guest"])
                .unchecked(),
        )?;
        crate::sites::provision::ensure_rabbit_account(
            ctx.host,
            "openstack",
            &self.password,
            &crate::sites::provision::RabbitPermissions::all(),
        )
    }
}

/// The admin's credentials on this control plane, through keystone's
/// loopback endpoint (`public`: through the TLS endpoint clients use).
pub fn admin_credentials(values: &Values, public: bool) -> Result<Credentials> {
    Ok(Credentials {
        auth_url: if public {
            format!("https://{}:5000/v3", values.cp["address"])
        } else {
            "http://127.0.0.1:5000/v3".to_string()
        },
        username: "admin".into(),
        password: Secret::new(
            values
                .password
                .get("keystone_admin")
                .context("no keystone_admin password")?
                .clone(),
        ),
        project: "admin".into(),
        region: values.cp["region"].clone(),
        interface: if public { "public" } else { "internal" }.into(),
    })
}

/// Keystone's `service` project, one user per service, and the catalog.
pub struct Catalog {
    pub entries: Vec<CatalogEntry>,
    pub values: std::sync::Arc<Values>,
}

pub struct CatalogEntry {
    pub service: String,
    pub user: Option<(String, Secret)>,
    pub name: String,
    pub kind: String,
    pub url: String,
    pub internal_url: String,
}

impl Catalog {
    pub fn new(
        recipes: &Recipes,
        services: &[String],
        values: std::sync::Arc<Values>,
    ) -> Result<Catalog> {
        let mut entries = Vec::new();
        for s in services {
            let Some(id) = recipes.services.get(s).and_then(|r| r.identity.as_ref()) else {
                continue;
            };
            let user = match (&id.user, &id.password) {
                (Some(u), Some(p)) => Some((
                    u.clone(),
                    Secret::new(
                        values
                            .password
                            .get(p)
                            .with_context(|| format!("no password {p}"))?
                            .clone(),
                    ),
                )),
                _ => None,
            };
            entries.push(CatalogEntry {
                service: s.clone(),
                user,
                name: id.name.clone(),
                kind: id.kind.clone(),
                url: render_str(&id.url, &values)?,
                internal_url: render_str(id.internal_url.as_ref().unwrap_or(&id.url), &values)?,
            });
        }
        Ok(Catalog { entries, values })
    }
}

impl Step for Catalog {
    fn name(&self) -> String {
        "keystone.catalog".into()
    }
    fn describe(&self) -> String {
        "create the service project, service users and the catalog".into()
    }
    fn fingerprint(&self) -> String {
        let parts: Vec<String> = self
            .entries
            .iter()
            .map(|e| {
                format!(
                    "{} {} {} {} {} {}",
                    e.name,
                    e.kind,
                    e.url,
                    e.internal_url,
                    e.user.as_ref().map(|u| u.0.as_str()).unwrap_or(""),
                    e.user
                        .as_ref()
                        .map(|u| digest([u.1.expose().as_bytes()]))
                        .unwrap_or_default()
                )
            })
            .collect();
        digest(parts.iter().map(|p| p.as_bytes()))
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        if ctx.host.dry_run {
            for e in &self.entries {
                tracing::info!("    would register {} ({}) at {}", e.name, e.kind, e.url);
            }
            return Ok(());
        }
        let creds = admin_credentials(&self.values, false)?;
        let cloud = Cloud::login(&creds, None)?;
        let project = identity::ensure_project(&cloud, "service", "OpenStack services")?;
        let admin = identity::ensure_role(&cloud, "admin")?;
        let service_role = identity::ensure_role(&cloud, "service")?;
        for e in &self.entries {
            if let Some((user, password)) = &e.user {
                let uid = identity::ensure_user(&cloud, user, password, &project)?;
                identity::grant(&cloud, &project, &uid, &admin)?;
                identity::grant(&cloud, &project, &uid, &service_role)?;
            }
            let sid = identity::ensure_service(&cloud, &e.name, &e.kind)?;
            identity::ensure_endpoints(&cloud, &sid, &e.url, &e.internal_url, &creds.region)
                .with_context(|| format!("registering the {} endpoints", e.name))?;
            tracing::debug!("    {} ({}) at {}", e.name, e.kind, e.url);
        }
        Ok(())
    }
}

/// Map the standalone host's nova-compute to cell1 (the scheduler would do
/// it within discover_hosts_in_cells_interval; init does not wait for that).
pub struct DiscoverHost {
    pub hostname: String,
}

impl Step for DiscoverHost {
    fn name(&self) -> String {
        "compute.discover".into()
    }
    fn describe(&self) -> String {
        format!("map compute host {} to cell1", self.hostname)
    }
    fn fingerprint(&self) -> String {
        self.hostname.clone()
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        let nova_manage = |args: &[&str]| {
            Cmd::new("mapping compute hosts to cells", "runuser")
                .args(["-u", "nova", "--", "nova-manage", "cell_v2"])
                .args(args.iter().copied())
                .timeout(Duration::from_secs(120))
        };
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            ctx.host.runner.run(&nova_manage(&["discover_hosts"]))?;
            let hosts = ctx
                .host
                .runner
                .run(&nova_manage(&["list_hosts"]).read_only())?;
            if hosts.stdout.split_whitespace().any(|w| w == self.hostname) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "nova-compute on {} did not register within 300s; see `journalctl -u nova-compute` and /var/log/nova/nova-compute.log",
                    self.hostname
                );
            }
            std::thread::sleep(Duration::from_secs(5));
        }
    }
}

/// Where the dcn binary lives for the units that run it (`dcn serve`).
pub const INSTALLED_BINARY: &str = "/usr/local/bin/dcn";

/// Install the running dcn binary as /usr/local/bin/dcn.
pub struct InstallBinary;

impl InstallBinary {
    fn contents() -> Result<Vec<u8>> {
        let exe = std::env::current_exe().context("finding the running dcn binary")?;
        std::fs::read(&exe).with_context(|| format!("reading {}", exe.display()))
    }

    fn spec() -> crate::host::FileSpec {
        crate::host::FileSpec::public().mode(0o755)
    }
}

impl Step for InstallBinary {
    fn name(&self) -> String {
        "install.dcn".into()
    }
    fn describe(&self) -> String {
        format!("install this dcn as {INSTALLED_BINARY}")
    }
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        (ctx.host.files).matches(INSTALLED_BINARY, &Self::contents()?, &Self::spec())
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        if ctx
            .host
            .files
            .write(INSTALLED_BINARY, &Self::contents()?, &Self::spec())?
            .changed()
            && !ctx.host.dry_run
        {
            // A running join service keeps the old binary until restarted.
            let systemd = crate::host::systemd::Systemd::new(ctx.host.runner.as_ref());
            if systemd.is_active("dcn-join.service")? {
                systemd.restart("dcn-join.service")?;
            }
        }
        Ok(())
    }
}
