//! What a SiteConfig costs by its size (issue 21, failure 5), measured:
//! `dcn config validate`, `dcn site config SITE --file F --dry-run` and a
//! node's `GET /v1/nodes/HOST/config` in the real join service on
//! loopback, for a site layer of 10,000, 20,000 and 40,000 one-key sections
//! and of one section with as many keys (refused now: they are over the
//! bounds of `customServiceConfig`), for the largest texts accepted, and
//! for the worst case the bounds and the 1 MiB limit on a file allow.
//! Then resolution and diff alone, past the bounds, to show how they grow.
//! Run with `cargo bench --bench site_config_scale`; seconds per step.
//! Performance targets live here, not in unit tests.

#[path = "../tests/support/join_server.rs"]
mod join_server;

use dcn::centre::sites::site_config::{Layer, Revision, resolve_layers, set};
use dcn::centre::sites::{NodeRecord, NodeState, Registry};
use dcn::config::{SiteConfig, parse_site_config, validate_text};
use dcn::edge::join::client::JoinClient;
use join_server::ControlPlane;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::Instant;

const SECRET: &str = "bench-node-secret";
const SAVED: &str = "/var/lib/dcn/site-config/edge1.json";
const SIZES: [usize; 3] = [10_000, 20_000, 40_000];

/// INI text of `n` one-key sections, or of one section with `n` keys;
/// `value` is every key's value, and `reversed` lists them last to first.
fn ini(n: usize, one_section: bool, value: &str, reversed: bool) -> String {
    let mut text = String::from(if one_section { "[DEFAULT]\n" } else { "" });
    let order: Vec<usize> = match reversed {
        true => (0..n).rev().collect(),
        false => (0..n).collect(),
    };
    for i in order {
        text.push_str(&match one_section {
            true => format!("k{i}={value}\n"),
            false => format!("[s{i}]\nk={value}\n"),
        });
    }
    text
}

/// A SiteConfig for edge1 with `site` as its novaCompute text and `nodes`
/// as node overrides; as compact as YAML allows (quoted scalars with `\n`
/// escapes), as a hostile file would be.
fn site_yaml(site: &str, nodes: &[(String, String)]) -> String {
    let q = |t: &str| t.replace('\n', "\\n");
    let mut y = format!(
        "apiVersion: dcn/v1alpha1\nkind: SiteConfig\nsite: edge1\nservices:\n  novaCompute:\n    customServiceConfig: \"{}\"\n",
        q(site)
    );
    if !nodes.is_empty() {
        y.push_str("nodes:\n");
    }
    for (host, text) in nodes {
        y.push_str(&format!(
            "  {host}:\n    services:\n      novaCompute:\n        customServiceConfig: \"{}\"\n",
            q(text)
        ));
    }
    y
}

fn node(hostname: &str) -> NodeRecord {
    NodeRecord {
        hostname: hostname.into(),
        site: "edge1".into(),
        address: "10.240.1.20".into(),
        joined_at: String::new(),
        secret_hash: format!("sha256:{}", hex::encode(Sha256::digest(SECRET))),
        state: NodeState::Placed,
        placed_at: None,
        key_pin: None,
        southbound_ca: None,
        previous_southbound_cas: vec![],
        certificate: None,
        trusted_cas: vec![],
        config: None,
    }
}

/// Print `what` and the seconds `f` took, at once.
fn step<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    print!(" {what} {:.3};", start.elapsed().as_secs_f64());
    std::io::stdout().flush().unwrap();
    out
}

struct Centre {
    cp: ControlPlane,
    client: JoinClient,
}

impl Centre {
    /// Validate `text`, dry-run it from nothing, save it, dry-run `changed`
    /// texts from it, and fetch edge1-n1's config.
    fn case(&self, label: &str, text: &str, changed: &[(&str, String)]) {
        print!("{label}:");
        let checked = step("validate", || {
            validate_text(
                &dcn::recipes::Recipes::embedded().unwrap(),
                text,
                "site.yaml",
            )
        });
        if let Err(e) = checked {
            let e = e.to_string();
            println!(" (refused: {})", e.chars().take(150).collect::<String>());
            return;
        }
        let config: SiteConfig = parse_site_config(
            &dcn::recipes::Recipes::embedded().unwrap(),
            text,
            "site.yaml",
        )
        .unwrap();
        self.cp.files.remove(SAVED).unwrap();
        step("dry run", || {
            set(
                &dcn::recipes::Recipes::embedded().unwrap(),
                &self.cp.files,
                config.clone(),
                true,
            )
            .unwrap()
            .to_string()
        });
        Registry::new(&self.cp.files)
            .save_site_config(&Revision {
                revision: 1,
                updated_at: String::new(),
                config,
            })
            .unwrap();
        for (what, other) in changed {
            let other =
                parse_site_config(&dcn::recipes::Recipes::embedded().unwrap(), other, "b.yaml")
                    .unwrap();
            step(&format!("dry run changing {what}"), || {
                set(
                    &dcn::recipes::Recipes::embedded().unwrap(),
                    &self.cp.files,
                    other,
                    true,
                )
                .unwrap()
                .to_string()
            });
        }
        match step("node config request", || {
            self.client.node_config("edge1-n1", SECRET)
        }) {
            Ok(reply) => assert_eq!(reply.revision, 1),
            Err(e) => print!(" (failed: {e:#})"),
        }
        println!();
    }
}

fn main() {
    let cp = ControlPlane::start(join_server::serve);
    for h in ["edge1-n1", "edge1-n2"] {
        Registry::new(&cp.files).save_node(&node(h)).unwrap();
    }
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let centre = Centre { cp, client };
    println!("site edge1 with two joined nodes; seconds per step");
    for one_section in [false, true] {
        let (shape, bound) = match one_section {
            false => ("one-key sections", 256),
            true => ("keys in one section", 4096),
        };
        for n in [bound].into_iter().chain(SIZES) {
            let text = |value, reversed| site_yaml(&ini(n, one_section, value, reversed), &[]);
            centre.case(
                &format!("{n:>6} {shape}"),
                &text("a", false),
                &[
                    ("every value", text("b", false)),
                    ("the order", text("a", true)),
                ],
            );
        }
    }
    worst_case(&centre);
    core();
}

/// The most the bounds allow: the control plane, the site and as many
/// joined nodes as the 1 MiB file holds each set 4,096 options (the most
/// one text may), so each node's drop-in merges three full texts.
fn worst_case(centre: &Centre) {
    let full = |value: &str| ini(4096, true, value, false);
    let cp_config = format!(
        "apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\ncontrolPlane:\n  hostname: cp\n  address: 127.0.0.1\nservices:\n  novaCompute:\n    customServiceConfig: \"{}\"\n",
        full("cp").replace('\n', "\\n")
    );
    let files = &centre.cp.files;
    files
        .write(
            "/var/lib/dcn/config.yaml",
            cp_config.as_bytes(),
            &dcn::host::FileSpec::secret(),
        )
        .unwrap();
    let mut nodes: Vec<(String, String)> = Vec::new();
    let with = |value: &str, nodes: &[(String, String)]| {
        let nodes: Vec<(String, String)> = (nodes.iter())
            .map(|(h, _)| (h.clone(), full(value)))
            .collect();
        site_yaml(&full(value), &nodes)
    };
    while with("a", &nodes).len() < dcn::yaml::MAX_BYTES {
        nodes.push((format!("edge1-n{}", nodes.len() + 1), String::new()));
    }
    nodes.pop();
    for (h, _) in &nodes {
        Registry::new(files).save_node(&node(h)).unwrap();
    }
    let text = with("a", &nodes);
    let label = format!(
        "worst case ({} joined nodes, each overriding; {} bytes)",
        nodes.len(),
        text.len()
    );
    centre.case(&label, &text, &[("every value", with("b", &nodes))]);
}

/// Resolution and diff alone for texts past the bounds: one node's part of
/// a dry run that changes every value.
fn core() {
    let recipes = &dcn::recipes::Recipes::embedded().unwrap();
    for one_section in [false, true] {
        for n in SIZES {
            let (a, b) = (
                ini(n, one_section, "a", false),
                ini(n, one_section, "b", false),
            );
            let layers = |text| {
                [Layer {
                    from: "site edge1".into(),
                    texts: BTreeMap::from([("novaCompute", text)]),
                }]
            };
            print!(
                "{n:>6} {} alone",
                if one_section { "keys" } else { "sections" }
            );
            let before = step("resolve", || resolve_layers(recipes, &layers(a.as_str())));
            let after = resolve_layers(recipes, &layers(b.as_str()));
            let (old, new) = (&before["novaCompute"].text, &after["novaCompute"].text);
            step("diff", || dcn::ini::diff::unified(old, new, "now", "new"));
            println!();
        }
    }
}
