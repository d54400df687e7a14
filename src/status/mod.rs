//! `dcn status`: what dcn set up on this host and whether it works — each
//! service's units (state, enabled) and health checks, one attempt each.

pub mod certificates;

use crate::deploy::health;
use crate::deployment::Deployment;
use crate::host::Host;
use crate::host::systemd::Systemd;
use crate::recipes::Recipes;
use anyhow::Result;
use serde::Serialize;
use std::time::Duration;

#[derive(Debug, Serialize)]
pub struct Status {
    /// On hosts installed from the edge ISO: the first-boot join's state.
    pub first_boot: Option<FirstBoot>,
    pub hostname: String,
    pub roles: Vec<String>,
    pub site: Option<String>,
    pub services: Vec<ServiceStatus>,
    /// Certificates that expired, or are close to it and not renewed
    /// (`crate::certs::inventory::CertRow::warning`).
    pub certificate_warnings: Vec<String>,
    /// Every unit active and every check passing.
    pub ok: bool,
}

#[derive(Debug, Serialize)]
pub struct ServiceStatus {
    pub service: String,
    pub units: Vec<UnitStatus>,
    pub checks: Vec<CheckStatus>,
}

#[derive(Debug, Serialize)]
pub struct UnitStatus {
    pub unit: String,
    pub active: String,
    pub enabled: bool,
}

#[derive(Debug, Serialize)]
pub struct CheckStatus {
    pub check: String,
    pub ok: bool,
}

/// The first-boot join of a host installed from the edge ISO.
#[derive(Debug, Serialize)]
pub struct FirstBoot {
    /// `joined`, `joining` or `failed`.
    pub state: String,
    pub detail: String,
}

fn first_boot(host: &Host, systemd: &Systemd) -> Result<Option<FirstBoot>> {
    if !host.files.exists(crate::edge::install::firstboot::UNIT)? {
        return Ok(None);
    }
    if host.files.exists("/var/lib/dcn/firstboot.done")? {
        return Ok(Some(FirstBoot {
            state: "joined".into(),
            detail: "the first-boot join finished".into(),
        }));
    }
    let unit = crate::edge::install::firstboot::UNIT_NAME;
    let (active, sub) = systemd.state(unit)?;
    let (state, detail) = match active.as_str() {
        "failed" => (
            "failed",
            format!("{unit} failed; see `journalctl -u {unit}`"),
        ),
        _ => (
            "joining",
            format!(
                "{unit} is {active} ({sub}): `dcn join` is running or retrying; see `journalctl -u {unit}`"
            ),
        ),
    };
    Ok(Some(FirstBoot {
        state: state.into(),
        detail,
    }))
}

/// The status of this host.
pub fn status(host: &Host, recipes: &Recipes) -> Result<Status> {
    let systemd = Systemd::new(host.runner.as_ref());
    let first_boot = first_boot(host, &systemd)?;
    let Some(deployment) = Deployment::load(&host.files)? else {
        if let Some(fb) = first_boot {
            // Installed from the ISO; the join has not deployed anything yet.
            return Ok(Status {
                first_boot: Some(fb),
                hostname: nix::unistd::gethostname()?.to_string_lossy().into_owned(),
                roles: vec!["edge".into()],
                site: None,
                services: Vec::new(),
                certificate_warnings: Vec::new(),
                ok: false,
            });
        }
        anyhow::bail!(
            "dcn has set up nothing on this host (no /var/lib/dcn/deployment.json); run `dcn standalone init` or `dcn join`"
        );
    };
    let mut values = crate::recipes::Values::default();
    values
        .cp
        .insert("address".into(), deployment.address.clone());
    let http = crate::tls::http_client(None, Duration::from_secs(5))?;
    let mut services = Vec::new();
    let mut ok = true;
    for name in &deployment.services {
        let Some(recipe) = recipes.services.get(name) else {
            continue;
        };
        let mut units = Vec::new();
        for u in &recipe.units {
            let (active, sub) = systemd.state(u)?;
            let enabled = systemd.is_enabled(u)?;
            ok &= active == "active" && enabled;
            units.push(UnitStatus {
                unit: u.clone(),
                active: format!("{active} ({sub})"),
                enabled,
            });
        }
        let mut checks = Vec::new();
        for c in &recipe.health {
            // Commands and unit checks are covered by the unit states.
            let c = health::rendered(c, &values).unwrap_or_else(|_| c.clone());
            let Some(passed) = health::probe(&c, &http) else {
                continue;
            };
            ok &= passed;
            checks.push(CheckStatus {
                check: health::describe(&c),
                ok: passed,
            });
        }
        services.push(ServiceStatus {
            service: name.clone(),
            units,
            checks,
        });
    }
    let ok = ok && first_boot.as_ref().is_none_or(|f| f.state == "joined");
    let certificate_warnings = match certificates::list(&host.files, std::time::SystemTime::now()) {
        Ok(rows) => rows.iter().filter_map(|r| r.warning()).collect(),
        Err(e) => vec![format!("the certificates could not be read: {e:#}")],
    };
    Ok(Status {
        first_boot,
        hostname: deployment.hostname,
        roles: deployment.roles,
        site: deployment.site,
        services,
        certificate_warnings,
        ok,
    })
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "host {} (roles: {}{})",
            self.hostname,
            self.roles.join(", "),
            self.site
                .as_ref()
                .map(|s| format!("; site {s}"))
                .unwrap_or_default()
        )?;
        if let Some(fb) = &self.first_boot {
            writeln!(f, "  first-boot join: {} ({})", fb.state, fb.detail)?;
        }
        for s in &self.services {
            for u in &s.units {
                let mark = if u.active.starts_with("active") && u.enabled {
                    "ok  "
                } else {
                    "FAIL"
                };
                writeln!(
                    f,
                    "  [{mark}] {:<20} {:<40} {}{}",
                    s.service,
                    u.unit,
                    u.active,
                    if u.enabled { "" } else { ", not enabled" }
                )?;
            }
            for c in &s.checks {
                writeln!(
                    f,
                    "  [{}] {:<20} {}",
                    if c.ok { "ok  " } else { "FAIL" },
                    s.service,
                    c.check
                )?;
            }
        }
        for w in &self.certificate_warnings {
            writeln!(f, "  [WARN] {w}: see `dcn cert list`, `dcn cert renew`")?;
        }
        write!(
            f,
            "{}",
            if self.ok {
                "all services are up"
            } else {
                "some services are down: see `journalctl -u <unit>`"
            }
        )
    }
}
