//! The TCP ports a role listens on, read from the recipes of its roles, and
//! the check that nothing else holds them.

use super::{CheckResult, Params, Severity};
use crate::preflight::Role;
use crate::preflight::facts::Facts;
use crate::recipes::Recipes;

/// The TCP ports a role listens on, and which service: read from the
/// recipes of its roles, plus the join service's configurable port.
pub fn required_ports(recipes: &Recipes, role: Role, params: &Params) -> Vec<(u16, String)> {
    required_ports_in(recipes, role, params)
}

/// [`required_ports`] from the given recipes.
pub fn required_ports_in(recipes: &Recipes, role: Role, params: &Params) -> Vec<(u16, String)> {
    let roles: &[&str] = match (role, params.compute) {
        (Role::Standalone, true) => &["controller", "compute"],
        (Role::Standalone, false) => &["controller"],
        (Role::Edge, _) => &["edge"],
    };
    let mut ports = recipes
        .ports_for_roles(roles)
        .expect("the roles of the embedded recipes exist (cargo test)");
    if role == Role::Standalone {
        ports.push((params.join_port, "join-service".into()));
    }
    ports
}

pub(super) fn check_ports(
    recipes: &Recipes,
    role: Role,
    facts: &Facts,
    params: &Params,
) -> CheckResult {
    const NAME: &str = "ports";
    let listeners = match facts.listeners.get() {
        Ok(l) => l,
        Err(why) => {
            let fix = "check that /proc is mounted";
            return CheckResult::unknown(NAME, "the listening sockets", why, fix);
        }
    };
    let required = required_ports(recipes, role, params);
    let mut taken = Vec::new();
    let mut busy = Vec::new();
    for (port, what) in &required {
        let on: Vec<_> = listeners.iter().filter(|l| l.port == *port).collect();
        let Some(first) = on.first() else { continue };
        let by = first
            .process
            .as_ref()
            .map(|p| format!(" by {p}"))
            .unwrap_or_default();
        let addrs: Vec<String> = on.iter().map(|l| l.address.to_string()).collect();
        taken.push(format!(
            "{port} ({what}) is taken{by} on {}",
            addrs.join(", ")
        ));
        busy.push(port.to_string());
    }
    if taken.is_empty() {
        let ports: Vec<String> = required.iter().map(|(p, _)| p.to_string()).collect();
        let message = match ports.as_slice() {
            [one] => format!("port {one}, which dcn listens on, is free"),
            all => format!(
                "all {} ports dcn listens on are free: {}",
                all.len(),
                all.join(", ")
            ),
        };
        return CheckResult::pass(NAME, Severity::Error, message);
    }
    CheckResult::fail(
        NAME,
        Severity::Error,
        taken.join("; "),
        format!(
            "stop what listens on {} {} (`ss -ltnp` shows it), or move it to another port",
            if busy.len() == 1 { "port" } else { "ports" },
            busy.join(", ")
        ),
    )
}
