//! The checks that span fields and nodes, once the inventory has been read:
//! where the ISOs are served, each node's BMC, host names, BMC systems,
//! addresses and MACs unique across nodes, and each node's merged
//! `NodeConfig` as `NodeConfig::validate` checks it. An error names the
//! field where it can be fixed: `nodes[1].interfaces[0].gateway`, or
//! `nodeDefaults.…` (with the node it broke) for a field a node inherits.

use super::{InventoryNode, SiteInventory};
use crate::config::ConfigError;
use std::collections::HashMap;

pub(super) fn check(inv: &SiteInventory, file: &str) -> Result<(), ConfigError> {
    let err = |path: String, message: String| ConfigError::at(file, path, message);
    media(inv).map_err(|(p, m)| err(p.into(), m))?;
    if inv.nodes.is_empty() {
        return Err(err(
            "nodes".into(),
            "no nodes: list the site's nodes, each with its hostname and bmc".into(),
        ));
    }
    let mut hostnames = HashMap::new();
    let mut systems = HashMap::new();
    for (i, node) in inv.nodes.iter().enumerate() {
        if let Some(first) = hostnames.insert(node.hostname.as_str(), i) {
            return Err(err(
                format!("nodes[{i}].hostname"),
                format!(
                    "{} is also the host name of nodes[{first}]; each node needs its own",
                    node.hostname
                ),
            ));
        }
        node.bmc
            .check()
            .map_err(|(p, m)| err(format!("nodes[{i}].bmc.{p}"), m))?;
        let system = (node.bmc.endpoint.as_str(), node.bmc.system.as_ref());
        if let Some(first) = systems.insert(system, i) {
            return Err(err(
                format!("nodes[{i}].bmc"),
                format!(
                    "the same BMC and system as nodes[{first}] ({}): two nodes would drive one server; set `system` to tell a BMC's systems apart",
                    inv.nodes[first].hostname
                ),
            ));
        }
        inv.merged(node).validate(file).map_err(|mut e| {
            let (path, note) = place(inv, i, node, &e.path);
            e.path = path;
            e.message.push_str(&note);
            e
        })?;
    }
    unique_addresses(inv).map_err(|(p, m)| err(p, m))
}

/// `media`: the scheme and the URL agree, and BMCs can be told where to go.
fn media(inv: &SiteInventory) -> Result<(), (&'static str, String)> {
    let m = &inv.media;
    if m.listen.port() == 0 {
        return Err((
            "media.listen",
            "port 0: give the port the BMCs fetch from, e.g. 10.240.0.2:8443".into(),
        ));
    }
    match &m.url {
        None if m.listen.ip().is_unspecified() => Err((
            "media.url",
            format!(
                "media.listen is {}, which no BMC can fetch from: set url to the address the BMCs reach, e.g. https://10.240.0.2:{}/",
                m.listen,
                m.listen.port()
            ),
        )),
        Some(url) if url.as_str().starts_with("http:") && !m.insecure_http => Err((
            "media.url",
            "an http:// URL, but the ISOs (which hold a join token) are served over HTTPS unless insecureHttp: true; write https://".into(),
        )),
        Some(url) if url.as_str().starts_with("https:") && m.insecure_http => Err((
            "media.url",
            "an https:// URL, but insecureHttp: true serves plain HTTP; write http://, or drop insecureHttp".into(),
        )),
        _ => Ok(()),
    }
}

/// Where an error at `path` (of node `i`'s merged `NodeConfig`) is fixed:
/// the node's own field, or the default it inherits (then named in a note).
fn place(inv: &SiteInventory, i: usize, node: &InventoryNode, path: &str) -> (String, String) {
    let key = path.split(['.', '[']).next().unwrap_or_default();
    if node.settings.has(key) || !inv.node_defaults.has(key) {
        (format!("nodes[{i}].{path}"), String::new())
    } else {
        (
            format!("nodeDefaults.{path}"),
            format!(" (for nodes[{i}], {})", node.hostname),
        )
    }
}

/// No address or MAC given to two nodes (a default with addresses would).
fn unique_addresses(inv: &SiteInventory) -> Result<(), (String, String)> {
    let mut addresses = HashMap::new();
    let mut macs = HashMap::new();
    for (i, node) in inv.nodes.iter().enumerate() {
        let config = inv.merged(node);
        for (j, iface) in config.interfaces.iter().enumerate() {
            let at = |rest: String| place(inv, i, node, &format!("interfaces[{j}].{rest}"));
            if let Some(mac) = &iface.mac
                && let Some(first) = macs.insert(mac.as_str().to_string(), i)
                && first != i
            {
                let (path, _) = at("mac".into());
                return Err((path, clash(inv, "MAC", mac.as_str(), first, i)));
            }
            for (k, a) in iface.addresses.iter().enumerate() {
                let ip = a.0.addr();
                if let Some(first) = addresses.insert(ip, i)
                    && first != i
                {
                    let (path, _) = at(format!("addresses[{k}]"));
                    return Err((path, clash(inv, "address", &ip.to_string(), first, i)));
                }
            }
        }
    }
    Ok(())
}

fn clash(inv: &SiteInventory, what: &str, value: &str, a: usize, b: usize) -> String {
    format!(
        "the {what} {value} would belong to nodes[{a}] ({}) and nodes[{b}] ({}); give each node its own `interfaces`",
        inv.nodes[a].hostname, inv.nodes[b].hostname
    )
}
