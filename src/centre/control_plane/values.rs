//! The values recipes are rendered with on the control plane: its identity,
//! passwords, worker counts sized to the host, network settings, and how
//! the standalone host's own compute services reach the control plane
//! (over loopback: it *is* the control plane).

use super::identity::Identity;
use crate::config::StandaloneConfig;
use crate::host::facts::HostFacts;
use crate::openstack::compute_link::ComputeLink;
use crate::passwords::PasswordStore;
use crate::paths::PUBLIC_CA;
use crate::recipes::Values;
use crate::recipes::exports;
use anyhow::Result;
use std::collections::BTreeMap;

/// The control plane's `cp.*` values: what its own recipes and its
/// exports are rendered with. The bundle export builds them the same way.
pub fn control_plane_map(
    config: &StandaloneConfig,
    hostname: &str,
    address: &str,
) -> BTreeMap<String, String> {
    let zones = &config.zones;
    // The central zone exists in Neutron only where this host is a chassis.
    let central_chassis = config.roles.contains(&crate::config::Role::Compute);
    let join_port = config.control_plane.join_port.0.to_string();
    let cert_check = config.certificates.check_interval().as_secs().to_string();
    let public_auth = format!("https://{address}:5000");
    [
        ("hostname", hostname),
        ("address", address),
        ("region", config.control_plane.region.as_str()),
        ("joinPort", join_port.as_str()),
        ("certCheckSeconds", cert_check.as_str()),
        (
            "backupCalendar",
            config.backup.schedule.as_deref().unwrap_or("daily"),
        ),
        ("memcached", "127.0.0.1:11211"),
        // The control plane's services talk to keystone on loopback;
        // clients and edges use the TLS endpoints of dcn-api-proxy.
        ("authUrl", "http://127.0.0.1:5000"),
        ("publicAuthUrl", public_auth.as_str()),
        ("cafile", ""),
        ("centralZone", zones.central.as_str()),
        (
            "networkDefaultZone",
            if central_chassis {
                zones.central.as_str()
            } else {
                ""
            },
        ),
        (
            "defaultScheduleZone",
            zones.default_schedule.as_ref().map_or("", |z| z.as_str()),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The values for the control plane.
pub fn control_plane_values(
    recipes: &crate::recipes::Recipes,
    config: &StandaloneConfig,
    id: &Identity,
    facts: &HostFacts,
    passwords: &PasswordStore,
) -> Result<Values> {
    let mut v = Values::default();
    let address = id.address.to_string();
    let set = |m: &mut BTreeMap<String, String>, k: &str, val: &str| {
        m.insert(k.to_string(), val.to_string());
    };
    v.cp = control_plane_map(config, &id.hostname, &address);
    v.export = exports::as_values(&exports::render(recipes, &v.cp)?);
    v.frontends = recipes.tls_frontends();
    let zones = &config.zones;
    v.host = facts.host_values(&id.hostname, &address);

    v.roles = config
        .roles
        .iter()
        .map(|r| match r {
            crate::config::Role::Controller => "controller".to_string(),
            crate::config::Role::Compute => "compute".to_string(),
        })
        .collect();

    // `{{ workers.<key> }}` for every configurable service, by its key.
    for key in recipes.config_keys().keys() {
        let w = config.services.get(key).workers;
        v.workers.insert(key.to_string(), w.resolve(facts.cpus));
    }

    let net = &config.network;
    set(
        &mut v.network,
        "encapsulation",
        match net.encapsulation {
            crate::config::Encapsulation::Geneve => "geneve",
            crate::config::Encapsulation::Vxlan => "vxlan",
        },
    );
    let mappings: Vec<String> = net
        .provider_networks
        .iter()
        .map(|p| format!("{}:{}", p.name, p.bridge))
        .collect();
    set(&mut v.network, "bridgeMappings", &mappings.join(","));
    let bridges: Vec<&str> = net
        .provider_networks
        .iter()
        .map(|p| p.bridge.as_str())
        .collect();
    set(&mut v.network, "bridges", &bridges.join(" "));

    for name in passwords.names() {
        v.password
            .insert(name.to_string(), passwords.get(name)?.expose().to_string());
    }
    ComputeLink::on_the_control_plane(passwords, PUBLIC_CA, zones.central.as_str())?
        .apply_to(&mut v);
    Ok(v)
}
