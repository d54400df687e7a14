use super::*;
use crate::recipes::tests::embedded_files;

fn with_service(yaml: &str) -> Result<Recipes> {
    let mut files = embedded_files();
    files.push((
        format!("{}/services/extra.yaml", crate::recipes::RELEASE),
        format!("service: extra\ndescription: x\nphase: compute\n{yaml}"),
    ));
    Recipes::from_files(files)
}

#[test]
fn a_node_gets_the_edge_services_credentials_by_kind() {
    let recipes = Recipes::embedded().unwrap();
    let creds = recipes.site_credentials().unwrap();
    assert_eq!(
        creds.keys().copied().collect::<Vec<_>>(),
        ["compute_service", "metadata_secret", "site_rabbit"]
    );
    let accounts = recipes.node_accounts("edge1-n1").unwrap();
    assert_eq!(
        accounts.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
        [
            "RabbitMQ user dcn-node-edge1-n1",
            "keystone user dcn-node-edge1-n1"
        ]
    );
    assert_eq!(creds["metadata_secret"].account("x").unwrap(), None);
}

#[test]
fn credentials_that_are_not_a_nodes_own_are_recipe_errors() {
    let err = |yaml: &str| format!("{:#}", with_service(yaml).unwrap_err());
    let e = err(
        "siteCredentials: {site_rabbit: {kind: keystoneUser, username: 'x-{{ host.hostname }}'}}\n",
    );
    assert!(
        e.contains("both declare site credential \"site_rabbit\""),
        "{e}"
    );
    let e = err("siteCredentials: {x: {kind: keystoneUser, username: shared}}\n");
    assert!(e.contains("the same on every node"), "{e}");
    let e = err(
        "siteCredentials: {x: {kind: keystoneUser, username: 'dcn-node-{{ host.hostname }}'}}\n",
    );
    assert!(
        e.contains("keystone user dcn-node-node1 is also site credential"),
        "{e}"
    );
    let e = err("siteCredentials: {x: {kind: controlPlaneSecret}}\n");
    assert!(e.contains("must be a password a service declares"), "{e}");
    let e = err("siteCredentials: {x: {kind: keystoneUser, username: '{{ cp.address }}'}}\n");
    assert!(e.contains("recipe extra: site credential x"), "{e}");
    let e = err("siteCredentials: {x: {kind: rabbitmqUser, username: 'a-{{ host.hostname }}'}}\n");
    assert!(e.contains("permissions"), "{e}");
    let e = err(
        "siteCredentials: {x: {kind: rabbitmqUser, username: 'a-{{ host.hostname }}', \
         permissions: {configure: 'q', write: '^q$', read: '^q$'}}}\n",
    );
    assert!(
        e.contains("configure pattern \"q\" does not match whole names"),
        "{e}"
    );
    let e = err(
        "siteCredentials: {x: {kind: databaseUser, username: 'a-{{ host.hostname }}', databases: [nope]}}\n",
    );
    assert!(
        e.contains("database \"nope\" is not one a service declares"),
        "{e}"
    );
    let e = err(
        "siteCredentials: {x: {kind: databaseUser, username: \"a'-{{ host.hostname }}\", databases: [nova]}}\n",
    );
    assert!(e.contains("spaces or quotes"), "{e}");
    let e = err("siteCredentials: {x: {kind: ftpUser}}\n");
    assert!(e.contains("ftpUser"), "{e}");
    // Declared outside the edge role: valid, and no node gets it.
    let r = with_service(
        "siteCredentials: {x: {kind: keystoneUser, username: 'x-{{ host.hostname }}'}}\n",
    )
    .unwrap();
    assert!(!r.site_credentials().unwrap().contains_key("x"));
}

fn matches(re: &str, name: &str) -> bool {
    regex_lite::Regex::new(re).unwrap().is_match(name)
}

/// The permissions nova-compute's recipe gives a node, as RabbitMQ
/// applies them: its own names only.
#[test]
fn a_compute_node_reaches_its_own_names_only() {
    let recipes = Recipes::embedded().unwrap();
    let creds = recipes.site_credentials().unwrap();
    let Some(NodeAccount::Rabbitmq { permissions: p, .. }) =
        creds["site_rabbit"].account("edge1-n1.lab").unwrap()
    else {
        panic!("site_rabbit is a RabbitMQ user");
    };
    for own in [
        "nova",
        "compute",
        "compute.edge1-n1.lab",
        "compute_fanout_0a1b",
        "reply_ff09",
    ] {
        assert!(matches(&p.configure, own), "configure {own}");
        assert!(matches(&p.read, own), "read {own}");
    }
    for own in [
        "nova",
        "amq.default",
        "compute.edge1-n1.lab",
        "scheduler_fanout",
        "reply_ff09",
    ] {
        assert!(matches(&p.write, own), "write {own}");
    }
    for other in [
        "compute.edge2-n1",
        "compute.edge1-n1xlab",
        "compute.edge1-n1.lab.evil",
        "conductor",
        "scheduler",
        "scheduler_fanout",
        "q-plugin",
        "reply_xyz",
        "notifications.info",
        "",
    ] {
        assert!(!matches(&p.read, other), "read {other}");
        assert!(
            !matches(&p.configure, other) || other == "scheduler_fanout",
            "configure {other}"
        );
    }
    let (exchange, _, bind) = p.topic.clone().unwrap();
    assert_eq!(exchange, "nova");
    assert!(matches(&bind, "compute.edge1-n1.lab") && matches(&bind, "compute"));
    assert!(
        !matches(&bind, "compute.edge2-n1") && !matches(&bind, "#") && !matches(&bind, "conductor")
    );
}
