//! The control plane's files: the inventory dcn's parser reads back, and the passwords.

use super::*;

#[test]
fn the_inventory_is_what_site_deploy_accepts() {
    let site = Site::plan(3, 2, true);
    let m = material(&site);
    let text = inventory::text(&site, &m, Ipv4Addr::new(10, 240, 0, 10)).unwrap();
    let inv = crate::config::parse_inventory(&text, "bm1.yaml").unwrap();
    assert_eq!(inv.site.as_str(), "bm1");
    assert_eq!(inv.image.path(), Path::new(CP_EDGE_ISO));
    assert_eq!(inv.media.url().as_str(), "https://10.240.0.10:8443/");
    let hosts: Vec<_> = inv.nodes.iter().map(|n| n.hostname.as_str()).collect();
    assert_eq!(hosts, ["bm1-n1", "bm1-n2", "bm1-nodisk", "bm1-badpw"]);
    for (node, vm) in inv.nodes.iter().zip(&site.vms) {
        assert_eq!(node.bmc.endpoint.as_str(), "https://10.240.3.5:8000/");
        assert_eq!(node.bmc.system.as_ref().unwrap().as_str(), vm.uuid);
        assert_eq!(node.bmc.tls.pin.as_ref().unwrap().pin(), m.pin);
        assert_eq!(node.bmc.credentials.username.as_str(), "admin");
        let file = node.bmc.credentials.password_file.as_ref().unwrap();
        let want = if vm.kind == VmKind::BadPassword {
            inventory::WRONG_PASSWORD_FILE
        } else {
            inventory::PASSWORD_FILE
        };
        assert_eq!(file.path(), Path::new(want));
        let config = inv.node_config(&vm.name).unwrap();
        assert_eq!(config.hostname.as_str(), vm.name);
        assert!(config.disk.wipe);
        assert_eq!(config.disk.select, crate::config::node::DiskSelect::Only);
        assert!(config.dns_servers.is_empty());
        let iface = &config.interfaces[0];
        assert_eq!(iface.mac.as_ref().unwrap().as_str(), vm.mac);
        assert_eq!(
            iface.addresses[0].0.to_string(),
            format!("{}/24", vm.address)
        );
        assert_eq!(iface.gateway, Some(IpAddr::V4(site.net.gateway)));
        assert_eq!(config.my_ip(), Some(IpAddr::V4(vm.address)));
    }
    assert!(text.starts_with("# Written by `dcn lab up --bare-metal`"));
    assert!(text.contains("# bm1-nodisk cannot deploy, on purpose: its VM has no disk."));
}

#[test]
fn seeding_the_control_plane_writes_private_passwords_and_the_inventory() {
    use std::os::unix::fs::PermissionsExt;
    let cp = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let site = Site::plan(3, 1, true);
    let m = material(&site);
    seed_control_plane(
        cp.path(),
        dir.path(),
        &site,
        &m,
        Ipv4Addr::new(10, 240, 0, 10),
    )
    .unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let pw = cp.path().join(&inventory::PASSWORD_FILE[1..]);
    let wrong = cp.path().join(&inventory::WRONG_PASSWORD_FILE[1..]);
    assert_eq!(
        std::fs::read_to_string(&pw).unwrap(),
        format!("{}\n", m.password.expose())
    );
    assert_eq!(
        std::fs::read_to_string(&wrong).unwrap(),
        format!("{}\n", m.wrong_password.expose())
    );
    assert_ne!(m.password, m.wrong_password);
    assert_eq!((mode(&pw), mode(&wrong)), (0o600, 0o600));
    assert_eq!(mode(&cp.path().join("etc/dcn/bmc")), 0o700);
    let in_cp = std::fs::read_to_string(cp.path().join(&CP_INVENTORY[1..])).unwrap();
    let on_host = std::fs::read_to_string(dir.path().join(HOST_INVENTORY)).unwrap();
    assert_eq!(in_cp, on_host);
    assert!(!in_cp.contains(m.password.expose()) && !in_cp.contains(m.wrong_password.expose()));
    let ca = std::fs::read_to_string(dir.path().join(inventory::HOST_CA)).unwrap();
    crate::pki::verify_issued_by(&ca, &m.cert_pem).unwrap();
    let files = crate::host::Files::new("/", false);
    remove_host_files(&files, dir.path()).unwrap();
    assert!(!dir.path().join(HOST_INVENTORY).exists());
    remove_host_files(&files, dir.path()).unwrap();
}
