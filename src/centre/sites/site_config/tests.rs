use super::*;
use crate::config::parse_site_config;
use crate::ini::Ini;
use crate::types::IniText;
use std::collections::BTreeMap;

fn ini(text: &str) -> IniText {
    IniText::try_from(text.to_string()).unwrap()
}

const SITE: &str = "apiVersion: dcn/v1alpha1\nkind: SiteConfig\nsite: edge1\nservices:\n  novaCompute:\n    customServiceConfig: |\n      [DEFAULT]\n      debug = true\n      cpu_allocation_ratio = 2.0\nnodes:\n  edge1-n1:\n    services:\n      novaCompute:\n        customServiceConfig: |\n          [DEFAULT]\n          cpu_allocation_ratio = 4.0\n";

#[test]
fn node_beats_site_beats_control_plane_key_by_key_with_origins() {
    let recipes = crate::recipes::for_tests();
    let cp = BTreeMap::from([(
        "novaCompute".to_string(),
        ini("[DEFAULT]\ndebug = false\nreserved_host_memory_mb = 256\n"),
    )]);
    let site = parse_site_config(crate::recipes::for_tests(), SITE, "s.yaml").unwrap();
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
    let recipes = crate::recipes::for_tests();
    let node = |h: &str| NodeRecord {
        joined_at: String::new(),
        ..NodeRecord::for_test(h, "edge1", super::super::NodeState::Placed)
    };
    let site: SiteName = "edge1".parse().unwrap();
    let before = parse_site_config(crate::recipes::for_tests(), SITE, "s.yaml").unwrap();
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

#[test]
fn a_value_keeps_its_first_place_in_the_file_and_origins_read_in_that_order() {
    let recipes = crate::recipes::for_tests();
    let layer = |from: &str, text| Layer {
        from: from.to_string(),
        texts: BTreeMap::from([("novaCompute", text)]),
    };
    let layers = [
        layer("control plane", "[DEFAULT]\na = 1\n[x]\nb = 1\n"),
        layer("site edge1", "[y]\nc = 2\n[DEFAULT]\nd = 2\na = 2\n"),
        layer("node edge1-n1", "[x]\nb = 3\n[DEFAULT]\na = 3\n"),
    ];
    let r = &resolve_layers(recipes, &layers)["novaCompute"];
    assert_eq!(
        r.text,
        "[DEFAULT]\na = 3\nd = 2\n\n[x]\nb = 3\n\n[y]\nc = 2\n"
    );
    let origins: Vec<(&str, &str, &str)> = (r.origins.iter())
        .map(|o| (o.section.as_str(), o.key.as_str(), o.from.as_str()))
        .collect();
    assert_eq!(
        origins,
        [
            ("DEFAULT", "a", "node edge1-n1"),
            ("DEFAULT", "d", "site edge1"),
            ("x", "b", "node edge1-n1"),
            ("y", "c", "site edge1"),
        ]
    );
}

/// This thread's CPU time: what the work costs, whatever else the machine
/// runs meanwhile.
fn cpu_time() -> std::time::Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_THREAD).unwrap();
    let d = |t: nix::sys::time::TimeVal| {
        std::time::Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000)
    };
    d(u.user_time()) + d(u.system_time())
}

/// A node's part of a dry run, for an INI text of `n` one-key sections or
/// of one section with `n` keys, every value changing: both revisions
/// resolved (with a control-plane and a node layer around the site's), and
/// the drop-in's diff. Returns the CPU time of the fastest of three runs.
fn node_dry_run(n: usize, one_section: bool) -> std::time::Duration {
    let text = |value: &str| -> String {
        let mut t = String::from(if one_section { "[DEFAULT]\n" } else { "" });
        for i in 0..n {
            match one_section {
                true => t.push_str(&format!("k{i} = {value}\n")),
                false => t.push_str(&format!("[s{i}]\nk = {value}\n")),
            }
        }
        t
    };
    let (a, b) = (text("a"), text("b"));
    fn layers(site: &str) -> [Layer<'_>; 3] {
        let layer = |from: &str, text| Layer {
            from: from.to_string(),
            texts: BTreeMap::from([("novaCompute", text)]),
        };
        [
            layer("control plane", "[DEFAULT]\ndebug = true\n"),
            layer("site edge1", site),
            layer("node edge1-n1", "[node]\nk = x\n"),
        ]
    }
    let recipes = crate::recipes::for_tests();
    (0..3)
        .map(|_| {
            let start = cpu_time();
            let before = resolve_layers(recipes, &layers(&a));
            let after = resolve_layers(recipes, &layers(&b));
            let (old, new) = (&before["novaCompute"], &after["novaCompute"]);
            let diff = crate::ini::diff::unified(&old.text, &new.text, "now", "new");
            let spent = cpu_time() - start;
            // The work was done: every entry is there, with its origin, and
            // every value changed.
            assert_eq!(new.origins.len(), n + 2);
            assert_eq!(diff.matches("\n+k").count(), n);
            spent
        })
        .min()
        .unwrap()
}

#[test]
fn a_nodes_dry_run_costs_time_in_proportion_to_the_config() {
    // 40,000 sections or keys cost 16 times what 2,500 do, give or take
    // what a larger working set costs in caches; the quadratic resolution
    // this replaces cost hundreds of times more. Thread CPU time, best of
    // three, with a wide margin on both sides: it cannot pass quadratic
    // work, nor fail linear work because the machine is busy.
    for one_section in [false, true] {
        let small = node_dry_run(2_500, one_section);
        let large = node_dry_run(40_000, one_section);
        let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
        assert!(
            ratio < 64.0,
            "16 times the config cost {ratio:.0} times the CPU ({small:?} for 2,500, {large:?} for 40,000; one section: {one_section})"
        );
    }
}
