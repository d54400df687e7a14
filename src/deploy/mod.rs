//! Deployment steps built from recipes and values, shared by `standalone
//! init` and `join`: install packages, write config files, create
//! databases and keystone entries, run setup commands, start units and wait
//! until services are healthy.

pub mod files;
pub mod health;
mod packages;
pub mod service;

pub use files::{CertSource, ConfigFiles, certificate_files};
pub use health::Health;
pub use packages::Packages;
pub use service::{Database, DisableUnits, ReloadUnits, Setup, Unit};

use crate::engine::{Phase, Step};
use crate::recipes::{Recipes, ServicePhase, ServiceRecipe, Values};
use crate::types::PackageSource;
use anyhow::Result;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a deployment needs to build its steps.
pub struct Plan {
    pub recipes: Recipes,
    /// The services of this host's roles, in order.
    pub services: Vec<String>,
    pub values: Arc<Values>,
    /// `customServiceConfig` by config key (`nova`, `novaCompute`, …).
    pub custom_config: BTreeMap<String, String>,
    pub source: PackageSource,
    pub certs: Arc<dyn CertSource>,
}

impl Plan {
    fn service_recipes(&self) -> Vec<&ServiceRecipe> {
        self.services
            .iter()
            .filter_map(|s| self.recipes.services.get(s))
            .collect()
    }

    /// Install every package of the services (nothing starts).
    pub fn packages_phase(&self) -> Phase<'static> {
        self.packages_phase_for(false)
    }

    /// [`Self::packages_phase`], or with `upgrade` also every installed
    /// package brought to the source's version (`dcn upgrade`).
    pub fn packages_phase_for(&self, upgrade: bool) -> Phase<'static> {
        let services = self.service_recipes();
        let mut packages: Vec<String> = services.iter().flat_map(|s| s.packages.clone()).collect();
        packages.sort();
        packages.dedup();
        let debconf = services.iter().flat_map(|s| s.debconf.clone()).collect();
        Phase {
            name: "packages",
            steps: vec![Box::new(Packages {
                packages,
                debconf,
                source: self.source.clone(),
                upgrade,
            })],
        }
    }

    /// Write every service's directories, config files, drop-ins and
    /// certificates.
    pub fn configure_phase(&self) -> Result<Phase<'static>> {
        let mut steps = Vec::new();
        for s in self.service_recipes() {
            steps.push(ConfigFiles::new(
                s,
                &self.values,
                &self.custom_config,
                self.certs.clone(),
            )?);
        }
        files::check_no_conflicts(&steps)?;
        let reload = ReloadUnits::new(
            steps
                .iter()
                .flat_map(|s| s.rendered())
                .map(|f| (f.path.as_str(), f.contents.as_str())),
        );
        let mut boxed: Vec<Box<dyn Step>> = steps
            .into_iter()
            .map(|s| Box::new(s) as Box<dyn Step>)
            .collect();
        boxed.push(Box::new(reload));
        Ok(Phase {
            name: "configure",
            steps: boxed,
        })
    }

    /// Bring up the services of `phase`: databases, setup commands, units,
    /// health checks. `extra` steps run after a service's units start
    /// (keystone's catalog, rabbitmq's users), keyed by service name.
    pub fn service_phase(
        &self,
        phase: ServicePhase,
        name: &'static str,
        mut extra: BTreeMap<String, Vec<Box<dyn Step>>>,
    ) -> Result<Phase<'static>> {
        let mut steps: Vec<Box<dyn Step>> = Vec::new();
        for s in self
            .service_recipes()
            .into_iter()
            .filter(|s| s.phase == phase)
        {
            if let Some(db) = &s.database {
                steps.push(Box::new(Database::new(&s.service, db, &self.values)));
            }
            for cmd in s.setup.iter().filter(|c| !c.after_start) {
                if let Some(step) = Setup::new(&s.service, cmd, &self.values)? {
                    steps.push(Box::new(step.of_packages(&s.packages)));
                }
            }
            if let Some(d) = DisableUnits::new(s) {
                steps.push(Box::new(d));
            }
            for u in Unit::for_service(s, &self.values, &self.custom_config)? {
                steps.push(Box::new(u));
            }
            for cmd in s.setup.iter().filter(|c| c.after_start) {
                if let Some(step) = Setup::new(&s.service, cmd, &self.values)? {
                    steps.push(Box::new(step.of_packages(&s.packages)));
                }
            }
            if !s.health.is_empty() {
                steps.push(Box::new(Health::new(s, &self.values)?));
            }
            steps.extend(extra.remove(&s.service).unwrap_or_default());
        }
        Ok(Phase { name, steps })
    }
}
