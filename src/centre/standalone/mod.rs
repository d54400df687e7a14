//! `dcn standalone init`: turn this host into the control plane (and, with
//! the compute role, a single-node cloud), as phases of steps run by the
//! [`crate::engine`]. Re-running converges: finished steps are skipped, no
//! secret is regenerated, and a service restarts only when its
//! configuration changed.

pub mod controlplane;
pub mod finalize;
pub mod secrets;

use crate::centre::control_plane::{identity, values};
use crate::config::StandaloneConfig;
use crate::deploy::Plan;
use crate::engine::{self, Outcome, Phase, RunReport};
use crate::host::Host;
use crate::openstack::bootstrap;
use crate::passwords::PasswordStore;
use crate::pki::Pin;
use crate::recipes::{Recipes, ServicePhase};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The phases of `init`, in order (`--phase` names one to stop after;
/// [`PhaseName::ALL`] says what each does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PhaseName {
    Preflight,
    Secrets,
    Packages,
    Configure,
    Infrastructure,
    Identity,
    Services,
    Compute,
    Verify,
    Finalize,
}

impl PhaseName {
    /// Every phase in order, with its command-line name and what it does.
    pub const ALL: [(PhaseName, &'static str, &'static str); 10] = [
        (PhaseName::Preflight, "preflight", "Check the host"),
        (
            PhaseName::Secrets,
            "secrets",
            "State directories, passwords, the CA and certificates",
        ),
        (
            PhaseName::Packages,
            "packages",
            "Install the packages (nothing starts)",
        ),
        (
            PhaseName::Configure,
            "configure",
            "Write every configuration file",
        ),
        (
            PhaseName::Infrastructure,
            "infrastructure",
            "MariaDB, RabbitMQ, memcached, the API proxy, OVN databases",
        ),
        (PhaseName::Identity, "identity", "Keystone and the catalog"),
        (
            PhaseName::Services,
            "services",
            "Placement, Glance, Nova, Neutron, the join service",
        ),
        (
            PhaseName::Compute,
            "compute",
            "nova-compute, OVN controller, metadata agent on this host",
        ),
        (
            PhaseName::Verify,
            "verify",
            "Check the control plane through its APIs",
        ),
        (
            PhaseName::Finalize,
            "finalize",
            "clouds.yaml and admin-openrc",
        ),
    ];
}

/// Options of `init`.
pub struct InitOptions {
    /// Run the phases up to and including this one.
    pub until: PhaseName,
    /// Preflight checks whose errors become warnings.
    pub ignore_preflight: Vec<String>,
    /// `dcn upgrade`: every installed package is also brought to the
    /// source's version (and what runs it restarted).
    pub upgrade: bool,
}

/// What `init` did.
pub struct InitReport {
    pub run: RunReport,
    /// The CA pin, once the CA exists.
    pub ca_pin: Option<Pin>,
    pub hostname: String,
    pub address: String,
    /// Packages of the roles (what was installed).
    pub packages: usize,
    pub roles: Vec<String>,
}

/// Run `init` on `host`.
pub fn init(
    recipes: &Recipes,
    config: &StandaloneConfig,
    host: &Host,
    opts: &InitOptions,
) -> Result<InitReport> {
    let root = host.files.root().to_path_buf();
    crate::release::refuse_if_newer(&host.files, "set it up")?;
    let id = identity::Identity::resolve(config, &root)?;
    if opts.until > PhaseName::Secrets && root != std::path::Path::new("/") {
        bail!(
            "--root only works for the secrets phase; the later phases configure the running system"
        );
    }
    tracing::info!("control plane {} at {}", id.hostname, id.address);
    let roles = roles_of(config)?;
    let packages = recipes.packages_for_roles(&roles)?.len();
    let mut phases = first_phases(recipes, config, &id, opts, &root)?;
    if opts.until <= PhaseName::Secrets {
        phases.retain(|(n, _)| *n <= opts.until);
        let phases: Vec<Phase> = phases.into_iter().map(|(_, p)| p).collect();
        let run = engine::run(&phases, host)?;
        return finish(run, host, &id, packages, &roles);
    }
    // Later phases need the passwords: generate them first (a no-op when
    // the secrets phase ran before).
    let head: Vec<Phase> = phases.into_iter().map(|(_, p)| p).collect();
    let mut run = engine::run(&head, host)?;
    let rest = later_phases(config, host, &id, recipes, &roles, opts)?;
    let mut later = engine::run(&rest, host)?;
    run.steps.append(&mut later.steps);
    run.phases.append(&mut later.phases);
    // The host's files collected every run's planned changes.
    run.planned = later.planned;
    finish(run, host, &id, packages, &roles)
}

/// The roles the config names, which must include the controller.
fn roles_of(config: &StandaloneConfig) -> Result<Vec<&'static str>> {
    let roles: Vec<&str> = config
        .roles
        .iter()
        .map(|r| match r {
            crate::config::Role::Controller => "controller",
            crate::config::Role::Compute => "compute",
        })
        .collect();
    if !roles.contains(&"controller") {
        bail!(
            "roles must include controller: `standalone init` sets up the control plane (edges join with `dcn join`)"
        );
    }
    Ok(roles)
}

/// Preflight (on a live host only) and the secrets phase: what runs before
/// anything needs the passwords.
fn first_phases(
    recipes: &Recipes,
    config: &StandaloneConfig,
    id: &identity::Identity,
    opts: &InitOptions,
    root: &std::path::Path,
) -> Result<Vec<(PhaseName, Phase<'static>)>> {
    Ok(vec![
        (
            PhaseName::Preflight,
            Phase {
                name: "preflight",
                steps: if root == std::path::Path::new("/") {
                    vec![Box::new(controlplane::Preflight {
                        recipes: recipes.clone(),
                        params: crate::preflight::Params::from_config(config),
                        ignore: opts.ignore_preflight.clone(),
                    })]
                } else {
                    Vec::new()
                },
            },
        ),
        (
            PhaseName::Secrets,
            secrets::phase(
                recipes,
                id,
                crate::certs::policy::Policy::from(&config.certificates),
            )?,
        ),
    ])
}

/// The phases after secrets, up to `until`, rendered with the passwords:
/// the deployment record and the config first (so status and reset know a
/// half-done setup), certificates due renewed as configure starts.
fn later_phases(
    config: &StandaloneConfig,
    host: &Host,
    id: &identity::Identity,
    recipes: &Recipes,
    roles: &[&str],
    opts: &InitOptions,
) -> Result<Vec<Phase<'static>>> {
    let mut passwords = PasswordStore::load(&host.files)?;
    if host.dry_run {
        // A dry run on a fresh host renders with passwords that exist
        // only in memory; files holding them are not shown anyway.
        passwords.ensure(
            secrets::control_plane_passwords(recipes)?
                .iter()
                .map(String::as_str),
        );
    }
    let facts = crate::host::facts::HostFacts::detect(host.files.root());
    let values = Arc::new(values::control_plane_values(
        recipes, config, id, &facts, &passwords,
    )?);
    let services: Vec<String> = recipes
        .services_for_roles(roles)?
        .iter()
        .map(|s| s.service.clone())
        .collect();
    let plan = Plan {
        services: services.clone(),
        values: values.clone(),
        custom_config: custom_config(config),
        source: config.packages.source.clone(),
        certs: Arc::new(crate::centre::control_plane::pki_certs::PkiCerts),
        recipes: recipes.clone(),
    };
    let record = crate::deployment::Deployment {
        roles: roles.iter().map(|r| r.to_string()).collect(),
        services: services.clone(),
        hostname: id.hostname.clone(),
        address: id.address.to_string(),
        site: None,
    };
    let mut rest = control_plane_phases(&plan, recipes, &services, &values, roles, &id.hostname)?;
    if opts.upgrade
        && let Some((_, packages)) = rest.iter_mut().find(|(n, _)| *n == PhaseName::Packages)
    {
        *packages = plan.packages_phase_for(true);
    }
    if let Some((_, configure)) = rest.iter_mut().find(|(n, _)| *n == PhaseName::Configure) {
        configure.steps.insert(
            0,
            Box::new(secrets::RenewDue::new(
                id,
                crate::certs::policy::Policy::from(&config.certificates),
            )),
        );
    }
    if let Some((_, packages)) = rest.iter_mut().find(|(n, _)| *n == PhaseName::Packages) {
        packages
            .steps
            .insert(0, Box::new(crate::deployment::Record(record)));
        let saved = serde_yaml::to_string(config).context("serialising the config")?;
        packages
            .steps
            .insert(1, Box::new(crate::deployment::SaveConfig(saved)));
    }
    rest.retain(|(n, _)| *n <= opts.until);
    Ok(rest.into_iter().map(|(_, p)| p).collect())
}

fn finish(
    run: RunReport,
    host: &Host,
    id: &identity::Identity,
    packages: usize,
    roles: &[&str],
) -> Result<InitReport> {
    let ca_pin = match host.files.read_string(crate::paths::CA_CERT)? {
        Some(pem) if !pem.is_empty() => Some(Pin::of_cert_pem(&pem)?),
        _ => None,
    };
    Ok(InitReport {
        run,
        ca_pin,
        hostname: id.hostname.clone(),
        address: id.address.to_string(),
        packages,
        roles: roles.iter().map(|r| r.to_string()).collect(),
    })
}

/// `customServiceConfig` of every service that has one, by config key.
fn custom_config(config: &StandaloneConfig) -> BTreeMap<String, String> {
    (config.services.custom_configs().into_iter())
        .map(|(k, v)| (k, v.as_str().to_string()))
        .collect()
}

/// The phases after secrets.
fn control_plane_phases(
    plan: &Plan,
    recipes: &Recipes,
    services: &[String],
    values: &Arc<crate::recipes::Values>,
    roles: &[&str],
    hostname: &str,
) -> Result<Vec<(PhaseName, Phase<'static>)>> {
    let infrastructure = plan.service_phase(
        ServicePhase::Infrastructure,
        "infrastructure",
        bootstrap::after_messaging(values),
    )?;
    let identity = plan.service_phase(
        ServicePhase::Identity,
        "identity",
        bootstrap::after_identity(recipes, services, values.clone())?,
    )?;
    let mut services_phase =
        plan.service_phase(ServicePhase::Services, "services", BTreeMap::new())?;
    services_phase
        .steps
        .insert(0, Box::new(controlplane::InstallBinary));

    let compute_host = roles.contains(&"compute").then_some(hostname);
    let mut compute_phase =
        plan.service_phase(ServicePhase::Compute, "compute", BTreeMap::new())?;
    if let Some(hostname) = compute_host {
        compute_phase.steps.push(Box::new(bootstrap::DiscoverHost {
            hostname: hostname.to_string(),
        }));
    }
    Ok(vec![
        (PhaseName::Packages, plan.packages_phase()),
        (PhaseName::Configure, plan.configure_phase()?),
        (PhaseName::Infrastructure, infrastructure),
        (PhaseName::Identity, identity),
        (PhaseName::Services, services_phase),
        (PhaseName::Compute, compute_phase),
        (
            PhaseName::Verify,
            verify_phase(recipes, services, values, compute_host),
        ),
        (
            PhaseName::Finalize,
            Phase {
                name: "finalize",
                steps: vec![
                    Box::new(finalize::ClientFiles {
                        values: values.clone(),
                    }),
                    Box::new(crate::release::RecordRelease),
                ],
            },
        ),
    ])
}

/// The last check: the catalog lists every deployed service's type and,
/// on a control plane that is also a compute host, its nova-compute is up.
fn verify_phase(
    recipes: &Recipes,
    services: &[String],
    values: &Arc<crate::recipes::Values>,
    compute_host: Option<&str>,
) -> Phase<'static> {
    let mut catalog: Vec<String> = services
        .iter()
        .filter_map(|s| {
            recipes
                .services
                .get(s)
                .and_then(|r| r.identity.as_ref())
                .map(|i| i.kind.clone())
        })
        .collect();
    catalog.insert(0, "identity".into());
    Phase {
        name: "verify",
        steps: vec![Box::new(bootstrap::Verify {
            trusted_cas: |files| crate::certs::authority::Authorities::new(files).trusted_pem(),
            values: values.clone(),
            catalog,
            compute_hosts: compute_host.map(str::to_string).into_iter().collect(),
        })],
    }
}

impl InitReport {
    /// Steps applied (or, in a dry run, that would be).
    pub fn changed_steps(&self) -> Vec<&str> {
        self.run
            .steps
            .iter()
            .filter(|(_, o)| {
                !matches!(
                    o,
                    Outcome::AlreadyDone | Outcome::Checked | Outcome::Ensured
                )
            })
            .map(|(n, _)| n.as_str())
            .collect()
    }
}
