//! What an upgrade will do to each service, in the order it does it,
//! predicted before anything is installed: the schema syncs that run again
//! and the units that restart, each with its reason (packages under it
//! that change, or its configuration). Pure: it reads the recipes, the
//! installed set and apt's plan it is given.

use crate::host::apt::{InstalledSet, PackageChange};
use crate::recipes::{Recipes, ServicePhase};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet};

/// One service's part of the upgrade.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceStep {
    pub service: String,
    /// Packages the service runs (its own or under them) that change.
    pub packages: Vec<String>,
    /// Its schema syncs that run again (the new code may migrate).
    pub schema_syncs: Vec<String>,
    /// Units restarted, each with why.
    pub restarts: Vec<(String, String)>,
}

/// The services of `roles` in the order init brings them up, each with
/// what the upgrade does to it; services it leaves alone are left out.
/// `restart_now` names the units a run would restart before any package
/// changes (from a dry run), each with why.
pub fn service_steps(
    recipes: &Recipes,
    roles: &[&str],
    installed: &InstalledSet,
    changes: &[PackageChange],
    restart_now: &BTreeMap<String, String>,
) -> Result<Vec<ServiceStep>> {
    let changed: BTreeSet<&str> = changes
        .iter()
        .filter(|c| c.from.is_some())
        .map(|c| c.package.as_str())
        .collect();
    let mut services = recipes.services_for_roles(roles)?;
    // Init's phases, in order; the sort is stable within a phase.
    services.sort_by_key(|s| match s.phase {
        ServicePhase::Infrastructure => 0,
        ServicePhase::Identity => 1,
        ServicePhase::Services => 2,
        ServicePhase::Compute => 3,
    });
    let mut out = Vec::new();
    for s in services {
        let closure = installed.closure(s.packages.iter().map(String::as_str));
        let packages: Vec<String> = closure
            .iter()
            .filter(|p| changed.contains(p.as_str()))
            .cloned()
            .collect();
        let schema_syncs: Vec<String> = match packages.is_empty() {
            true => Vec::new(),
            false => s
                .setup
                .iter()
                .filter(|c| !c.schema.is_empty())
                .filter(|c| {
                    c.when_role
                        .as_ref()
                        .is_none_or(|r| roles.contains(&r.as_str()))
                })
                .map(|c| c.name.clone())
                .collect(),
        };
        let restarts: Vec<(String, String)> = s
            .units
            .iter()
            .filter_map(|u| {
                let why = if let Some(why) = restart_now.get(u) {
                    why.clone()
                } else if !packages.is_empty() {
                    format!(
                        "{} change{} under it",
                        crate::host::apt::installed::few(&packages),
                        if packages.len() == 1 { "s" } else { "" }
                    )
                } else {
                    return None;
                };
                Some((u.clone(), why))
            })
            .collect();
        if !restarts.is_empty() || !schema_syncs.is_empty() {
            out.push(ServiceStep {
                service: s.service.clone(),
                packages,
                schema_syncs,
                restarts,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_under_a_service_restarts_its_units_and_runs_its_schema_syncs_again() {
        let recipes = Recipes::embedded().unwrap();
        let status = "\
Package: memcached
Status: install ok installed
Architecture: amd64
Version: 1.6.18-1
Depends: libevent-2.1-7

Package: libevent-2.1-7
Status: install ok installed
Architecture: amd64
Version: 2.1.12-stable-8

Package: keystone
Status: install ok installed
Architecture: all
Version: 2:22.0.0-2
Depends: python3-keystone

Package: python3-keystone
Status: install ok installed
Architecture: all
Version: 2:22.0.0-2
";
        let installed = InstalledSet::parse(status);
        let changes = vec![PackageChange {
            package: "libevent-2.1-7".into(),
            from: Some("2.1.12-stable-8".into()),
            to: Some("2.1.12-stable-8+dcn1".into()),
        }];
        let roles = ["controller", "compute"];
        let steps =
            service_steps(&recipes, &roles, &installed, &changes, &BTreeMap::new()).unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s.service.as_str()).collect();
        assert_eq!(names, vec!["memcached"], "{steps:#?}");
        assert_eq!(steps[0].restarts[0].0, "memcached.service");
        assert!(steps[0].restarts[0].1.contains("libevent-2.1-7 changes"));
        assert!(steps[0].schema_syncs.is_empty());

        // keystone's own package: its schema sync runs again, and it
        // comes after memcached (infrastructure before identity).
        let mut changes = changes;
        changes.push(PackageChange {
            package: "python3-keystone".into(),
            from: Some("2:22.0.0-2".into()),
            to: Some("2:22.0.0-2+dcn1".into()),
        });
        let config: BTreeMap<String, String> = [(
            "nova-compute.service".to_string(),
            "its configuration changes".to_string(),
        )]
        .into();
        let steps = service_steps(&recipes, &roles, &installed, &changes, &config).unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s.service.as_str()).collect();
        assert_eq!(
            names,
            vec!["memcached", "keystone", "nova-compute"],
            "{steps:#?}"
        );
        assert!(!steps[1].schema_syncs.is_empty(), "{steps:#?}");
        assert_eq!(steps[2].restarts[0].1, "its configuration changes");
        assert!(steps[2].schema_syncs.is_empty());
    }
}
