//! Rendering recipe templates with the values code computes. Undefined
//! variables are errors (a typo in a recipe must not become an empty
//! setting), and rendered files that contain a password are marked secret so
//! they never show in dry-run diffs.

use super::schema::{FileRecipe, ServiceRecipe};
use crate::host::FileSpec;
use crate::ini::Ini;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::collections::BTreeMap;

/// Everything recipes may refer to.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Values {
    /// The control plane: hostname, address, region, joinPort, …
    pub cp: BTreeMap<String, String>,
    /// This host: hostname, address, virtType, …
    pub host: BTreeMap<String, String>,
    /// The roles of this host.
    pub roles: Vec<String>,
    /// Worker processes per service.
    pub workers: BTreeMap<String, u32>,
    /// Network settings: encapsulation, bridgeMappings, …
    pub network: BTreeMap<String, String>,
    /// How this host's compute services reach the control plane:
    /// transportUrl, sbConnection, serviceUser, …
    pub compute: BTreeMap<String, String>,
    /// What the control plane exports to edges, by export name: the same
    /// on the control plane and on every edge (see [`super::exports`]).
    pub export: BTreeMap<String, String>,
    /// Usernames of the node's site credentials, by credential name
    /// (edges only; see [`super::site_credentials`]).
    pub user: BTreeMap<String, String>,
    /// The control plane's TLS frontends (every recipe's `tlsFrontends`):
    /// port by frontend name, on the control plane only.
    pub frontends: BTreeMap<String, u16>,
    /// Passwords by name. Secret: see [`Values::is_secret`].
    pub password: BTreeMap<String, String>,
}

impl Values {
    /// Whether `text` contains a password.
    pub fn contains_secret(&self, text: &str) -> bool {
        self.password
            .values()
            .any(|p| !p.is_empty() && text.contains(p.as_str()))
    }
}

/// A config file ready to write.
#[derive(Debug, Clone)]
pub struct RenderedFile {
    pub path: String,
    pub contents: String,
    pub spec: FileSpec,
    /// Units to restart when it changes.
    pub restarts: Vec<String>,
}

fn env() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .build()
            .expect("the default delimiters are valid"),
    );
    env
}

/// Render one template string.
pub fn render_str(template: &str, values: &Values) -> Result<String> {
    env()
        .render_str(template, minijinja::value::Serde(values))
        .map_err(|e| anyhow::anyhow!("{e:#}"))
}

/// The files of `service` for a host with `values.roles`.
pub fn render_files(service: &ServiceRecipe, values: &Values) -> Result<Vec<RenderedFile>> {
    let mut out = Vec::new();
    for f in &service.files {
        if let Some(role) = &f.when_role
            && !values.roles.contains(role)
        {
            continue;
        }
        let contents = render_file(f, values)
            .with_context(|| format!("rendering {} of service {}", f.path, service.service))?;
        let mode = u32::from_str_radix(f.mode.trim_start_matches("0o"), 8)
            .with_context(|| format!("mode {:?} of {} is not octal", f.mode, f.path))?;
        let mut spec = FileSpec::public().mode(mode).owner(&f.owner, &f.group);
        if values.contains_secret(&contents) {
            if mode & 0o007 != 0 {
                bail!(
                    "recipe bug: {} holds a password but mode {:?} lets anyone read it",
                    f.path,
                    f.mode
                );
            }
            spec = spec.hidden();
        }
        out.push(RenderedFile {
            path: f.path.clone(),
            contents,
            spec,
            restarts: f.restarts.clone().unwrap_or_else(|| service.units.clone()),
        });
    }
    Ok(out)
}

/// The standard keys of a keystone credential section, as templates.
fn keystone_auth_section(section: &str, auth: &super::KeystoneAuth) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let mut set = |k: &str, v: String| {
        m.insert(k.to_string(), v);
    };
    set("auth_url", "{{ cp.authUrl }}".into());
    set("cafile", "{{ cp.cafile }}".into());
    set("auth_type", "password".into());
    set("project_domain_name", "Default".into());
    set("user_domain_name", "Default".into());
    set("project_name", "service".into());
    set("username", auth.username.clone());
    set("password", format!("{{{{ password.{} }}}}", auth.password));
    set("region_name", "{{ cp.region }}".into());
    if section == "keystone_authtoken" {
        set("www_authenticate_uri", "{{ cp.publicAuthUrl }}".into());
        set("memcached_servers", "{{ cp.memcached }}".into());
    }
    m
}

fn render_file(f: &FileRecipe, values: &Values) -> Result<String> {
    match (&f.ini, &f.template) {
        (Some(sections), None) => {
            let mut sections = sections.clone();
            // Credential keys join the section's own keys (service_user's
            // send_service_user_token, say).
            for (section, auth) in &f.keystone_auth {
                sections
                    .entry(section.clone())
                    .or_default()
                    .extend(keystone_auth_section(section, auth));
            }
            let mut ini = Ini::default();
            // DEFAULT first, as oslo.config files are written.
            let order = sections
                .keys()
                .filter(|k| *k == "DEFAULT")
                .chain(sections.keys().filter(|k| *k != "DEFAULT"));
            for section in order {
                for (key, value) in &sections[section] {
                    let v =
                        render_str(value, values).with_context(|| format!("[{section}] {key}"))?;
                    // A value that renders empty is left out (an option that
                    // applies to some hosts only, such as an edge's cafile).
                    if !v.is_empty() {
                        ini.set(section, key, v);
                    }
                }
            }
            Ok(format!(
                "# Written by dcn. Local changes are overwritten; use customServiceConfig.\n{ini}"
            ))
        }
        (None, Some(t)) if f.keystone_auth.is_empty() => render_str(t, values),
        _ => bail!(
            "a file recipe has exactly one of `ini` and `template` (keystoneAuth needs `ini`)"
        ),
    }
}
