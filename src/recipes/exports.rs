//! What the control plane exports to edges: the endpoints an edge's
//! services reach (keystone's catalog, the VNC console, RabbitMQ's TLS
//! listener, the OVN southbound database). Recipes declare them: a catalog
//! entry's public URL is exported under its service type, anything else
//! under `exports:`. The control plane renders them with its `cp.*` values
//! into the bundle; an edge takes the bundle's, so `{{ export.<name> }}`
//! renders to the same text on both, and a new edge service that needs a
//! new endpoint is a recipe change only.

use super::{Recipes, Values, render_str};
use crate::types::endpoints::TlsEndpoint;
use anyhow::{Result, bail};
use std::collections::BTreeMap;

/// One export of one service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export<'a> {
    pub name: &'a str,
    pub service: &'a str,
    /// Templated with `cp.*`.
    pub template: &'a str,
}

/// Every export every service declares, in service order, duplicates
/// included: its catalog entry's public URL under its service type, then
/// its `exports:` lines.
fn declared(recipes: &Recipes) -> impl Iterator<Item = Export<'_>> {
    recipes.services.values().flat_map(|s| {
        let catalog = s.identity.iter().map(|i| (i.kind.as_str(), i.url.as_str()));
        let lines = s.exports.iter().map(|(n, t)| (n.as_str(), t.as_str()));
        catalog.chain(lines).map(|(name, template)| Export {
            name,
            service: s.service.as_str(),
            template,
        })
    })
}

impl Recipes {
    /// Every export of every service, by name.
    pub fn exports(&self) -> BTreeMap<&str, Export<'_>> {
        declared(self).map(|e| (e.name, e)).collect()
    }

    /// The export names, sorted, for messages.
    pub fn export_names(&self) -> Vec<&str> {
        self.exports().into_keys().collect()
    }
}

/// No export name is declared twice (by two services, or by a catalog
/// entry and an `exports:` line).
pub(super) fn check_unique(recipes: &Recipes) -> Result<()> {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for e in declared(recipes) {
        if let Some(other) = seen.insert(e.name, e.service) {
            bail!(
                "services {other} and {} both export {:?} (a catalog entry exports its service type)",
                e.service,
                e.name
            );
        }
    }
    Ok(())
}

/// Every export rendered with the control plane's `cp.*` values and
/// checked (TLS only). Only `cp` is given, so an export template that
/// names anything else fails here, not on an edge.
pub fn render(
    recipes: &Recipes,
    cp: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, TlsEndpoint>> {
    let values = Values {
        cp: cp.clone(),
        ..Values::default()
    };
    let mut out = BTreeMap::new();
    for (name, e) in recipes.exports() {
        let text = render_str(e.template, &values)
            .map_err(|err| anyhow::anyhow!("recipe {}: export {name}: {err}", e.service))?;
        let value: TlsEndpoint = text
            .parse()
            .map_err(|err| anyhow::anyhow!("recipe {}: export {name}: {err}", e.service))?;
        out.insert(name.to_string(), value);
    }
    Ok(out)
}

/// Exports as the `export.*` values of recipes.
pub fn as_values(exports: &BTreeMap<String, TlsEndpoint>) -> BTreeMap<String, String> {
    (exports.iter())
        .map(|(name, e)| (name.clone(), e.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp() -> BTreeMap<String, String> {
        [("address", "10.240.0.10"), ("region", "RegionOne")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_embedded_services_export_what_an_edge_reaches() {
        let recipes = Recipes::embedded().unwrap();
        let exports = render(&recipes, &cp()).unwrap();
        let text: Vec<String> = (exports.iter()).map(|(n, e)| format!("{n} {e}")).collect();
        assert_eq!(
            text,
            [
                "compute https://10.240.0.10:8774/v2.1",
                "identity https://10.240.0.10:5000/v3",
                "image https://10.240.0.10:9292",
                "messaging amqps://10.240.0.10:5671",
                "network https://10.240.0.10:9696",
                "novncproxy https://10.240.0.10:6080/vnc_auto.html",
                "ovnSouthbound ssl:10.240.0.10:6642",
                "placement https://10.240.0.10:8778",
            ]
        );
    }

    fn with_service(yaml: &str) -> Result<Recipes> {
        let mut files = crate::recipes::tests::embedded_files();
        files.push((
            format!("{}/services/extra.yaml", crate::recipes::RELEASE),
            yaml.into(),
        ));
        Recipes::from_files(files)
    }

    #[test]
    fn an_export_declared_twice_is_a_recipe_error() {
        let e = with_service(
            "service: extra\ndescription: x\nphase: services\nexports: {messaging: 'amqps://{{ cp.address }}:5672'}\n",
        )
        .expect_err("refused");
        assert!(e.to_string().contains("both export \"messaging\""), "{e}");
    }

    #[test]
    fn an_export_without_tls_or_with_host_values_fails_to_render() {
        let plain = with_service(
            "service: extra\ndescription: x\nphase: services\nexports: {extra: 'http://{{ cp.address }}:8776'}\n",
        )
        .unwrap();
        let e = format!("{:#}", render(&plain, &cp()).unwrap_err());
        assert!(
            e.contains("recipe extra: export extra") && e.contains("only TLS"),
            "{e}"
        );
        let host = with_service(
            "service: extra\ndescription: x\nphase: services\nexports: {extra: 'https://{{ host.address }}:8776'}\n",
        )
        .unwrap();
        let e = format!("{:#}", render(&host, &cp()).unwrap_err());
        assert!(e.contains("recipe extra: export extra"), "{e}");
    }
}
