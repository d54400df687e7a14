//! `tempest.conf` for the lab's cloud, written from what the cloud itself
//! reports ([`CloudFacts`]): its public TLS endpoints with the dcn CA, the
//! lab's guest image and flavors, the network extensions neutron lists,
//! and the services dcn runs (no block or object storage, no dashboard).
//! Features a one-host-per-zone cloud under software emulation cannot
//! offer (migrations, resize to another host, SSH into guests) are off, so
//! Tempest skips their tests instead of failing them.

use std::fmt::Write;

/// What the cloud reports, gathered in the control plane.
#[derive(Debug, Clone, PartialEq)]
pub struct CloudFacts {
    /// The control plane's address (its public endpoints are https there).
    pub address: String,
    pub region: String,
    /// The admin's password (the conf is written 0600; never printed).
    pub admin_password: String,
    pub image: String,
    pub flavor: String,
    /// A second flavor (Tempest's resize and rebuild tests need another).
    pub flavor_alt: String,
    /// The aliases neutron lists (`openstack extension list --network`).
    pub network_extensions: Vec<String>,
    /// The filters nova's scheduler runs.
    pub scheduler_filters: Vec<String>,
}

/// Where Tempest's workspace lives in the control plane.
pub const WORKSPACE: &str = "/var/lib/dcn-lab-tempest";
/// The dcn CA, as the control plane's clients use it.
const CA: &str = "/etc/dcn/ca.crt";

/// A section of the file: its name and its `key = value` entries.
type Section = (&'static str, Vec<(&'static str, String)>);

/// The file's text.
pub fn render(f: &CloudFacts) -> String {
    let mut out = String::from("# Written by dcn lab tempest from what the lab's cloud reports.\n");
    let sections = [
        workspace(),
        identity(f),
        compute(f),
        image(f),
        network(f),
        services(),
    ];
    for (name, entries) in sections.into_iter().flatten() {
        let _ = writeln!(out, "\n[{name}]");
        for (k, v) in entries {
            let _ = writeln!(out, "{k} = {v}");
        }
    }
    out
}

fn s(v: &str) -> String {
    v.to_string()
}

fn https(f: &CloudFacts, port: u16, path: &str) -> String {
    format!("https://{}:{port}{path}", f.address)
}

/// Tempest's own locks. No log settings: `tempest run` writes tempest.log
/// in its workspace.
fn workspace() -> Vec<Section> {
    vec![(
        "oslo_concurrency",
        vec![("lock_path", format!("{WORKSPACE}/lock"))],
    )]
}

/// The admin Tempest makes its test accounts with, and keystone.
fn identity(f: &CloudFacts) -> Vec<Section> {
    vec![
        (
            "auth",
            vec![
                ("admin_username", s("admin")),
                ("admin_password", f.admin_password.clone()),
                ("admin_project_name", s("admin")),
                ("admin_domain_name", s("Default")),
                ("use_dynamic_credentials", s("true")),
                ("create_isolated_networks", s("true")),
            ],
        ),
        (
            "identity",
            vec![
                ("uri_v3", https(f, 5000, "/v3")),
                ("auth_version", s("v3")),
                ("region", f.region.clone()),
                ("v3_endpoint_type", s("public")),
                ("ca_certificates_file", s(CA)),
            ],
        ),
        (
            "identity-feature-enabled",
            vec![
                ("api_v2", s("false")),
                ("api_v3", s("true")),
                ("application_credentials", s("true")),
                ("access_rules", s("true")),
            ],
        ),
    ]
}

/// Nova: the guest and its flavors, and what a one-host-per-zone cloud
/// can do with a server.
fn compute(f: &CloudFacts) -> Vec<Section> {
    vec![
        (
            "compute",
            vec![
                ("image_ref", f.image.clone()),
                ("image_ref_alt", f.image.clone()),
                ("flavor_ref", f.flavor.clone()),
                ("flavor_ref_alt", f.flavor_alt.clone()),
                ("region", f.region.clone()),
                ("endpoint_type", s("publicURL")),
                ("min_compute_nodes", s("1")),
                ("build_timeout", s("600")),
            ],
        ),
        (
            "compute-feature-enabled",
            vec![
                ("scheduler_enabled_filters", f.scheduler_filters.join(",")),
                // One compute host per zone: nothing to migrate or resize to.
                ("resize", s("false")),
                ("cold_migration", s("false")),
                ("live_migration", s("false")),
                ("block_migration_for_live_migration", s("false")),
                ("console_output", s("true")),
                ("vnc_console", s("true")),
                ("spice_console", s("false")),
                ("serial_console", s("false")),
                ("config_drive", s("true")),
                ("change_password", s("false")),
                ("personality", s("false")),
                ("attach_encrypted_volume", s("false")),
                ("volume_multiattach", s("false")),
                ("interface_attach", s("true")),
                ("snapshot", s("true")),
                ("pause", s("true")),
                ("suspend", s("true")),
                ("shelve", s("false")),
                ("rescue", s("false")),
            ],
        ),
    ]
}

/// Glance.
fn image(f: &CloudFacts) -> Vec<Section> {
    vec![
        (
            "image",
            vec![
                ("region", f.region.clone()),
                ("endpoint_type", s("publicURL")),
                ("container_formats", s("bare,ami,ari,aki")),
                ("disk_formats", s("raw,qcow2,ami,ari,aki")),
            ],
        ),
        (
            "image-feature-enabled",
            vec![
                ("api_v1", s("false")),
                ("api_v2", s("true")),
                // web-download needs the internet, which the lab has not.
                ("import_image", s("false")),
            ],
        ),
    ]
}

/// Neutron: the project networks Tempest makes and the extensions it may
/// test.
fn network(f: &CloudFacts) -> Vec<Section> {
    vec![
        (
            "network",
            vec![
                ("region", f.region.clone()),
                ("endpoint_type", s("publicURL")),
                ("project_network_cidr", s("10.100.0.0/16")),
                ("project_network_mask_bits", s("28")),
                ("shared_physical_network", s("false")),
            ],
        ),
        (
            "network-feature-enabled",
            vec![
                ("api_extensions", f.network_extensions.join(",")),
                ("ipv6", s("true")),
                ("port_security", s("true")),
            ],
        ),
    ]
}

/// The services dcn runs, and no validation inside guests.
fn services() -> Vec<Section> {
    vec![
        (
            "service_available",
            vec![
                ("nova", s("true")),
                ("neutron", s("true")),
                ("glance", s("true")),
                ("cinder", s("false")),
                ("swift", s("false")),
                ("horizon", s("false")),
            ],
        ),
        // Guests are a kernel and a busybox initramfs under software
        // emulation: no SSH into them (the lab's own tests check their
        // network from inside).
        ("validation", vec![("run_validation", s("false"))]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conf_names_the_clouds_endpoints_guest_and_extensions() {
        let text = render(&CloudFacts {
            address: "10.240.0.10".into(),
            region: "RegionOne".into(),
            admin_password: "s3cret".into(),
            image: "img-1".into(),
            flavor: "f1".into(),
            flavor_alt: "f2".into(),
            network_extensions: vec!["router".into(), "security-group".into()],
            scheduler_filters: vec!["AvailabilityZoneFilter".into(), "ComputeFilter".into()],
        });
        for line in [
            "uri_v3 = https://10.240.0.10:5000/v3",
            "ca_certificates_file = /etc/dcn/ca.crt",
            "image_ref = img-1",
            "flavor_ref = f1",
            "flavor_ref_alt = f2",
            "api_extensions = router,security-group",
            "scheduler_enabled_filters = AvailabilityZoneFilter,ComputeFilter",
            "cinder = false",
            "run_validation = false",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
        let ini = crate::ini::Ini::parse(&text).expect("valid INI");
        assert!(!ini.is_empty());
    }
}
