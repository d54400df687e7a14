//! `dcn upgrade`: bring the control plane to this dcn's release (its
//! recipes, its binary) and to the versions its package source now has
//! (Debian's updates, or packages the operator published in a local
//! repository). Run with the new dcn binary.
//!
//! The plan comes first and changes nothing but apt's package lists: dcn's
//! release before and after, each package with its installed and new
//! version (apt's own resolution), each rendered file's diff (a dry run of
//! init with the new recipes), and per service, in init's order, the
//! schema syncs that run again and the units that restart, with why.
//!
//! Applying is `standalone init` with the saved config and one difference:
//! its packages step also upgrades what is installed. Everything after it
//! is what init already does, in its order — files, then per service its
//! schema syncs, its units, its health checks — and each step decides from
//! the host whether it is done: a unit is restarted when its configuration
//! changed or dpkg unpacked a package it runs after it started; a schema
//! sync runs again once its service's packages were unpacked after it last
//! ran. So a run that stopped (a power cut, a failed health check) resumes
//! where it was, and a second run finds nothing to do. A dcn older than
//! the one that last set the host up refuses to touch it.

pub mod order;

use crate::centre::standalone::{InitOptions, PhaseName};
use crate::deployment::{Deployment, saved_config};
use crate::engine::{Outcome, RunReport};
use crate::host::apt::{Apt, InstalledSet, PackageChange};
use crate::host::{Host, PlannedChange};
use crate::recipes::Recipes;
use crate::release::{Release, THIS};
use anyhow::{Result, bail};
use std::collections::BTreeMap;

pub use order::ServiceStep;

/// What an upgrade would do.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The release that last set this host up (none: before releases were
    /// recorded).
    pub release_from: Option<String>,
    pub release_to: String,
    pub packages: Vec<PackageChange>,
    /// File changes, with their diffs (files holding secrets say so, and
    /// show no content).
    #[serde(skip)]
    pub files: Vec<PlannedChange>,
    /// Per service, in order: schema syncs and restarts.
    pub services: Vec<ServiceStep>,
    /// Steps of init that would apply besides files and units.
    pub other_steps: Vec<String>,
}

impl Plan {
    /// Whether applying would change nothing.
    pub fn is_empty(&self) -> bool {
        self.release_from.as_deref() == Some(THIS)
            && self.packages.is_empty()
            && self.files.is_empty()
            && self.services.is_empty()
            && self.other_steps.is_empty()
    }
}

/// What an applied upgrade did.
pub struct Applied {
    pub run: RunReport,
    pub packages: Vec<PackageChange>,
    /// Guests (libvirt names) whose qemu process still runs the binary
    /// the upgrade replaced: they take the new one at their next restart.
    pub guests_on_old_qemu: Vec<String>,
}

impl Applied {
    /// The units the run restarted or started (`.service` left off).
    pub fn restarted_units(&self) -> Vec<&str> {
        self.run.restarted_units()
    }
}

/// The control plane's roles, or an error for a host that is not one.
fn roles(host: &Host) -> Result<Vec<String>> {
    let Some(d) = Deployment::load(&host.files)? else {
        bail!(
            "dcn set up nothing on this host: `dcn upgrade` upgrades a control plane that `dcn standalone init` set up"
        );
    };
    if !d.roles.iter().any(|r| r == "controller") {
        bail!(
            "this host is an edge node ({}), not the control plane: `dcn upgrade` runs on the control plane",
            d.roles.join(", ")
        );
    }
    Ok(d.roles)
}

/// The plan. Refreshes apt's package lists from the configured source;
/// changes nothing else.
pub fn plan(recipes: &Recipes, host: &Host) -> Result<Plan> {
    crate::release::refuse_if_newer(&host.files, "upgrade it")?;
    let roles = roles(host)?;
    let roles: Vec<&str> = roles.iter().map(String::as_str).collect();
    let config = saved_config(&host.files)?;
    let apt = Apt::new(
        host.runner.as_ref(),
        &host.files,
        config.packages.source.clone(),
    );
    apt.update()?;
    let missing = apt.missing(&recipes.packages_for_roles(&roles)?)?;
    let packages = apt.planned_changes(&missing)?;
    // Only read-only commands run in a dry run, and files are diffed.
    let dry = Host::system(host.files.root(), true);
    let run = crate::centre::standalone::init(recipes, &config, &dry, &options(vec![]))?.run;
    let mut restart_now = BTreeMap::new();
    let mut other_steps = Vec::new();
    for (name, outcome) in &run.steps {
        let Outcome::WouldApply(files) = outcome else {
            continue;
        };
        if let Some((service, unit)) = name.split_once(".unit.") {
            // Step names drop `.service`, and keep other suffixes.
            let unit = match unit.contains('.') {
                true => unit.to_string(),
                false => format!("{unit}.service"),
            };
            let packages = (recipes.services.get(service))
                .map(|s| s.packages.clone())
                .unwrap_or_default();
            let newer = crate::deploy::service::installed_since_start(host, &unit, &packages)?;
            let why = match newer.is_empty() {
                true => "its configuration changes".to_string(),
                false => format!(
                    "{} installed after it started",
                    crate::host::apt::installed::few(&newer)
                ),
            };
            restart_now.insert(unit, why);
        } else if files.is_empty() && !is_predicted(name) {
            other_steps.push(name.clone());
        }
    }
    let installed = InstalledSet::read(&host.files)?;
    let services = order::service_steps(recipes, &roles, &installed, &packages, &restart_now)?;
    Ok(Plan {
        release_from: Release::load(&host.files)?.map(|r| r.dcn_version),
        release_to: THIS.into(),
        packages,
        // The packages step's guard against maintainer scripts starting
        // services is no configuration.
        files: (run.planned.into_iter())
            .filter(|f| f.path != crate::host::apt::POLICY_RC_D)
            .collect(),
        services,
        other_steps,
    })
}

/// Steps the plan shows in their own sections.
fn is_predicted(step: &str) -> bool {
    matches!(step, "packages.upgrade" | "record.release")
}

/// Init's options for an upgrade (preflight knows the ports are the
/// control plane's own).
fn options(ignore_preflight: Vec<String>) -> InitOptions {
    InitOptions {
        until: PhaseName::Finalize,
        ignore_preflight,
        upgrade: true,
    }
}

/// Apply the upgrade (the plan is the caller's to show first), with these
/// preflight checks' errors as warnings.
pub fn apply(
    recipes: &Recipes,
    host: &Host,
    packages: Vec<PackageChange>,
    ignore_preflight: Vec<String>,
) -> Result<Applied> {
    crate::release::refuse_if_newer(&host.files, "upgrade it")?;
    roles(host)?;
    let config = saved_config(&host.files)?;
    let run =
        crate::centre::standalone::init(recipes, &config, host, &options(ignore_preflight))?.run;
    Ok(Applied {
        run,
        packages,
        guests_on_old_qemu: crate::host::processes::guests_on_replaced_qemu(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edge_node_or_a_bare_host_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::system(dir.path(), false);
        let err = roles(&host).unwrap_err().to_string();
        assert!(err.contains("dcn set up nothing"), "{err}");
        let edge = Deployment {
            roles: vec!["edge".into()],
            services: vec![],
            hostname: "e1".into(),
            address: "10.0.0.2".into(),
            site: Some("edge1".into()),
        };
        host.files
            .write(
                crate::deployment::DEPLOYMENT_FILE,
                serde_json::to_string(&edge).unwrap().as_bytes(),
                &crate::host::FileSpec::secret(),
            )
            .unwrap();
        let err = roles(&host).unwrap_err().to_string();
        assert!(err.contains("not the control plane"), "{err}");
    }
}
