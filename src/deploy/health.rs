//! Health checks: wait (bounded) until each of a service's checks passes,
//! polling the real thing — a TCP port, an HTTP answer, a command, a unit.
//! When one does not pass, the error names it and quotes the journal of the
//! service's units.

use crate::engine::{Context, Step};
use crate::host::Cmd;
use crate::host::systemd::Systemd;
use crate::recipes::{HealthCheck, ServiceRecipe, Values, render_str};
use anyhow::{Context as _, Result, bail};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// How long a service may take to become healthy.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(180);

pub struct Health {
    service: String,
    units: Vec<String>,
    checks: Vec<HealthCheck>,
}

impl Health {
    pub fn new(s: &ServiceRecipe, values: &Values) -> Result<Health> {
        let checks = (s.health.iter())
            .map(|c| rendered(c, values))
            .collect::<Result<Vec<_>>>()
            .with_context(|| format!("rendering the health checks of {}", s.service))?;
        Ok(Health {
            service: s.service.clone(),
            units: s.units.clone(),
            checks,
        })
    }
}

/// A check with its templates rendered.
pub fn rendered(c: &HealthCheck, values: &Values) -> Result<HealthCheck> {
    Ok(match c {
        HealthCheck::Tcp { host, port } => HealthCheck::Tcp {
            host: render_str(host, values)?,
            port: *port,
        },
        HealthCheck::Http { url } => HealthCheck::Http {
            url: render_str(url, values)?,
        },
        HealthCheck::Command { run } => HealthCheck::Command {
            run: run
                .iter()
                .map(|a| render_str(a, values))
                .collect::<Result<_>>()?,
        },
        HealthCheck::Unit { name } => HealthCheck::Unit { name: name.clone() },
    })
}

/// What a check looks at, for messages.
pub fn describe(c: &HealthCheck) -> String {
    match c {
        HealthCheck::Tcp { host, port } => format!("TCP {host}:{port}"),
        HealthCheck::Http { url } => format!("GET {url}"),
        HealthCheck::Command { run } => format!("`{}`", run.join(" ")),
        HealthCheck::Unit { name } => format!("unit {name} active"),
    }
}

/// One attempt at a check that looks over the network (a TCP port, an
/// HTTP answer); `None` for the others.
pub fn probe(c: &HealthCheck, http: &reqwest::blocking::Client) -> Option<bool> {
    match c {
        HealthCheck::Tcp { host, port } => Some(
            (host.as_str(), *port)
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.next())
                .is_some_and(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)).is_ok()),
        ),
        // Any answer below 500 means the service is up (most APIs answer
        // their root with a version document or 401).
        HealthCheck::Http { url } => Some(
            http.get(url)
                .send()
                .is_ok_and(|r| r.status().as_u16() < 500),
        ),
        _ => None,
    }
}

/// One attempt at a check.
fn passes(c: &HealthCheck, ctx: &Context, http: &reqwest::blocking::Client) -> bool {
    match c {
        HealthCheck::Tcp { .. } | HealthCheck::Http { .. } => probe(c, http).unwrap_or(false),
        HealthCheck::Command { run } => ctx
            .host
            .runner
            .run(
                &Cmd::new("running a health check", &run[0])
                    .args(run[1..].iter().cloned())
                    .read_only()
                    .unchecked()
                    .timeout(Duration::from_secs(90)),
            )
            .is_ok_and(|o| o.success()),
        HealthCheck::Unit { name } => Systemd::new(ctx.host.runner.as_ref())
            .is_active(name)
            .unwrap_or(false),
    }
}

impl Step for Health {
    fn name(&self) -> String {
        format!("{}.health", self.service)
    }

    fn describe(&self) -> String {
        format!("wait until {} is healthy", self.service)
    }

    fn is_check(&self) -> bool {
        true
    }

    fn apply(&self, ctx: &Context) -> Result<()> {
        let http = crate::tls::http_client(None, Duration::from_secs(5))?;
        for check in &self.checks {
            let started = Instant::now();
            let mut pause = Duration::from_millis(200);
            while !passes(check, ctx, &http) {
                if started.elapsed() > HEALTH_TIMEOUT {
                    let systemd = Systemd::new(ctx.host.runner.as_ref());
                    let journals: String = self
                        .units
                        .iter()
                        .map(|u| format!("--- journal of {u}:\n{}", systemd.journal_tail(u, 20)))
                        .collect();
                    bail!(
                        "{} is not healthy: {} did not pass within {}s\n{journals}",
                        self.service,
                        describe(check),
                        HEALTH_TIMEOUT.as_secs()
                    );
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            tracing::debug!(
                "    {}: {} ok after {:.1}s",
                self.service,
                describe(check),
                started.elapsed().as_secs_f64()
            );
        }
        Ok(())
    }
}
