use super::*;
use crate::config::parse_site_config;

fn ini(text: &str) -> IniText {
    IniText::try_from(text.to_string()).unwrap()
}

const SITE: &str = "apiVersion: dcn/v1alpha1\nkind: SiteConfig\nsite: edge1\nservices:\n  novaCompute:\n    customServiceConfig: |\n      [DEFAULT]\n      debug = true\n      cpu_allocation_ratio = 2.0\nnodes:\n  edge1-n1:\n    services:\n      novaCompute:\n        customServiceConfig: |\n          [DEFAULT]\n          cpu_allocation_ratio = 4.0\n";

#[test]
fn node_beats_site_beats_control_plane_key_by_key_with_origins() {
    let recipes = crate::recipes::catalogue::embedded();
    let cp = BTreeMap::from([(
        "novaCompute".to_string(),
        ini("[DEFAULT]\ndebug = false\nreserved_host_memory_mb = 256\n"),
    )]);
    let site = parse_site_config(SITE, "s.yaml").unwrap();
    let n1 = &resolve(recipes, &cp, &site, "edge1-n1")["novaCompute"];
    assert_eq!(n1.path, "/etc/nova/nova-compute.conf.d/90-custom.conf");
    let parsed = Ini::parse(&n1.text).unwrap();
    assert_eq!(parsed.get("DEFAULT", "debug"), Some("true"));
    assert_eq!(parsed.get("DEFAULT", "cpu_allocation_ratio"), Some("4.0"));
    assert_eq!(
        parsed.get("DEFAULT", "reserved_host_memory_mb"),
        Some("256")
    );
    let from = |key: &str| {
        n1.origins
            .iter()
            .find(|o| o.key == key)
            .unwrap()
            .from
            .clone()
    };
    assert_eq!(from("debug"), "site edge1");
    assert_eq!(from("cpu_allocation_ratio"), "node edge1-n1");
    assert_eq!(from("reserved_host_memory_mb"), "control plane");
    // Another node of the site gets the site's value, and a service
    // nobody configured has no drop-in.
    let n2 = resolve(recipes, &cp, &site, "edge1-n2");
    let text = &n2["novaCompute"].text;
    assert!(text.contains("cpu_allocation_ratio = 2.0"), "{text}");
    assert!(!n2.contains_key("ovnMetadataAgent"));
}

#[test]
fn the_plan_shows_only_the_nodes_whose_drop_in_changes() {
    let recipes = crate::recipes::catalogue::embedded();
    let node = |h: &str| NodeRecord {
        hostname: h.into(),
        site: "edge1".into(),
        address: "10.240.1.20".into(),
        joined_at: String::new(),
        secret_hash: String::new(),
        state: super::super::NodeState::Placed,
        placed_at: None,
        key_pin: None,
        ovn_ca: None,
        config: None,
    };
    let site: SiteName = "edge1".parse().unwrap();
    let before = parse_site_config(SITE, "s.yaml").unwrap();
    let mut after = before.clone();
    // Only edge1-n1's override changes.
    let n1 = after.nodes.values_mut().next().unwrap();
    n1.services
        .0
        .get_mut("novaCompute")
        .unwrap()
        .custom_service_config = ini("[DEFAULT]\ncpu_allocation_ratio = 8.0\n");
    let nodes = [node("edge1-n1"), node("edge1-n2")];
    let changes = plan(recipes, &BTreeMap::new(), &before, &after, &nodes);
    assert_eq!(changes[0].diffs.len(), 1);
    let diff = &changes[0].diffs[0].diff;
    assert!(diff.contains("-cpu_allocation_ratio = 4.0"), "{diff}");
    assert!(diff.contains("+cpu_allocation_ratio = 8.0"), "{diff}");
    assert!(changes[1].diffs.is_empty());
    // From nothing set, every node gets the site's drop-in.
    let empty = plan(
        recipes,
        &BTreeMap::new(),
        &SiteConfig::empty(site),
        &before,
        &nodes,
    );
    assert!(empty.iter().all(|n| n.diffs.len() == 1));
}
