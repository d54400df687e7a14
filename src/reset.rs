//! `dcn reset`: undo what `standalone init` (or `join`) did on this host —
//! guests, databases and messaging users, units, config files, state and
//! secrets; with `purge`, the packages too. It reads what to undo from the
//! deployment record and the recipes, so it removes exactly what dcn made.

use crate::deployment::{DEPLOYMENT_FILE, Deployment};
use crate::host::Host;
use crate::host::command::Cmd;
use crate::host::systemd::Systemd;
use crate::openstack::mariadb;
use crate::recipes::{Recipes, ServiceRecipe};
use anyhow::Result;
use std::time::Duration;

/// The unit of the hypervisor whose guests `reset` removes.
const HYPERVISOR_UNIT: &str = "libvirtd.service";

/// What reset removed.
#[derive(Debug, Default)]
pub struct ResetReport {
    pub units: Vec<String>,
    pub databases: Vec<String>,
    pub paths: Vec<String>,
    pub packages: usize,
}

/// Reset this host. `purge` also removes the packages.
pub fn reset(host: &Host, recipes: &Recipes, purge: bool) -> Result<ResetReport> {
    let mut report = ResetReport::default();
    let Some(deployment) = Deployment::load(&host.files)? else {
        // Perhaps only the secrets phase ran.
        if host.files.remove_all(crate::paths::STATE_DIR)?.changed() {
            report.paths.push(crate::paths::STATE_DIR.into());
        }
        return Ok(report);
    };
    let services: Vec<&ServiceRecipe> = deployment
        .services
        .iter()
        .filter_map(|s| recipes.services.get(s))
        .collect();
    // Guests first, while libvirt runs; databases while MariaDB runs.
    // Guests are dcn's to remove where dcn deployed the hypervisor.
    if services
        .iter()
        .any(|s| s.units.iter().any(|u| u == HYPERVISOR_UNIT))
    {
        remove_guests(host)?;
    }
    report.databases = drop_databases(host, &services);
    // Units, in reverse start order.
    let stopping = Systemd::new(host.runner.as_ref()).timeout(Duration::from_secs(120));
    for s in services.iter().rev() {
        for u in s.units.iter().rev() {
            if let Err(e) = stopping.stop_for_good(u) {
                tracing::warn!("{e:#}");
            }
            report.units.push(u.clone());
        }
    }
    report.paths = remove_service_files(host, &services)?;
    if purge {
        let mut packages: Vec<String> = services.iter().flat_map(|s| s.packages.clone()).collect();
        packages.sort();
        packages.dedup();
        report.packages = packages.len();
        crate::host::apt::Apt::new(
            host.runner.as_ref(),
            &host.files,
            crate::types::PackageSource::Mirror,
        )
        .purge(&packages)?;
    }
    // Files dcn wrote for operators (not theirs, such as a site.yaml next to
    // them), then dcn's own state (secrets, CA, journal) last.
    for p in [
        crate::centre::standalone::finalize::CLOUDS_YAML,
        crate::centre::standalone::finalize::OPENRC,
        crate::paths::PUBLIC_CA,
        crate::centre::standalone::finalize::ROOT_CLOUDS_YAML,
        crate::host::apt::LOCAL_SOURCE_LIST,
        crate::paths::STATE_DIR,
    ] {
        if host.files.remove_all(p)?.changed() {
            report.paths.push(p.into());
        }
    }
    // /etc/dcn itself only when nothing of the operator's is left in it.
    if (host.files.remove_dir(crate::paths::ETC_DIR)).is_ok_and(|c| c.changed()) {
        report.paths.push(crate::paths::ETC_DIR.into());
    }
    tracing::debug!("removed {DEPLOYMENT_FILE} with the state directory");
    Ok(report)
}

/// A command run for its effect, best effort: a half-installed host must
/// still reset.
fn best_effort(host: &Host, cmd: Cmd) {
    if let Err(e) = host.runner.run(&cmd.unchecked()) {
        tracing::warn!("{e:#}");
    }
}

/// Stop and undefine nova's guests, while libvirt runs.
fn remove_guests(host: &Host) -> Result<()> {
    let runner = host.runner.as_ref();
    if !Systemd::new(runner)
        .is_active(HYPERVISOR_UNIT)
        .unwrap_or(false)
    {
        return Ok(());
    }
    let out = runner.run(
        &Cmd::new("listing guests", "virsh")
            .args(["list", "--all", "--name"])
            .read_only()
            .unchecked(),
    )?;
    for name in out
        .stdout
        .lines()
        .map(str::trim)
        .filter(|n| n.starts_with("instance-"))
    {
        best_effort(
            host,
            Cmd::new(format!("stopping guest {name}"), "virsh").args(["destroy", name]),
        );
        best_effort(
            host,
            Cmd::new(format!("removing guest {name}"), "virsh").args(["undefine", "--nvram", name]),
        );
    }
    Ok(())
}

/// Drop the services' databases and their users, while MariaDB runs; the
/// databases dropped.
fn drop_databases(host: &Host, services: &[&ServiceRecipe]) -> Vec<String> {
    if !Systemd::new(host.runner.as_ref())
        .is_active(mariadb::UNIT)
        .unwrap_or(false)
    {
        return Vec::new();
    }
    let databases: Vec<_> = services
        .iter()
        .filter_map(|s| s.database.as_ref())
        .collect();
    let Some((sql, dropped)) = mariadb::drop_sql(&databases) else {
        return Vec::new();
    };
    best_effort(host, mariadb::script("dropping the databases".into(), sql));
    dropped
}

/// Remove the files dcn wrote for the services: their files, drop-ins,
/// certificates and state; the paths removed.
fn remove_service_files(host: &Host, services: &[&ServiceRecipe]) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for s in services {
        let mut paths: Vec<String> = s.files.iter().map(|f| f.path.clone()).collect();
        paths.extend(s.custom_config.iter().map(|c| c.path.clone()));
        for c in &s.certificates {
            paths.extend([c.cert.clone(), c.key.clone(), c.ca.clone()]);
        }
        paths.extend(s.reset_paths.iter().cloned());
        for p in paths {
            if host.files.remove_all(&p)?.changed() {
                removed.push(p);
            }
        }
    }
    Ok(removed)
}
