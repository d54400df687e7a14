//! The site plan: subnet, nodes, UUIDs, recorded state, up options and container binds.

use super::*;

#[test]
fn the_site_follows_the_container_sites_on_its_own_subnet() {
    // 2 edge sites and 1 spare use subnets 1-3: bm1 takes 4.
    let site = Site::plan(4, 2, false);
    assert_eq!(site.net.netns, "dcnlab-bm1");
    assert_eq!(site.net.router_link, "r-bm1");
    assert_eq!(site.net.address, Ipv4Addr::new(10, 240, 4, 5));
    assert_eq!(site.net.gateway, Ipv4Addr::new(10, 240, 4, 1));
    assert_eq!(site.bmc_url(), "https://10.240.4.5:8000");
    let names: Vec<_> = site.vms.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["bm1-n1", "bm1-n2"]);
    let n2 = &site.vms[1];
    assert_eq!(n2.mac, "52:54:00:f0:04:02");
    assert_eq!(n2.address, Ipv4Addr::new(10, 240, 4, 22));
    assert_eq!(n2.memory_mib, 3072);
    assert_eq!(site.memory_mib(), 6144);
}

#[test]
fn failure_nodes_take_fixed_slots_and_little_memory() {
    let site = Site::plan(12, MAX_NODES, true);
    let last: Vec<_> = site.vms.iter().rev().take(2).collect();
    assert_eq!(last[1].name, "bm1-nodisk");
    assert_eq!(last[1].kind, VmKind::NoDisk);
    assert_eq!(last[1].address, Ipv4Addr::new(10, 240, 12, 28));
    assert_eq!(last[1].disk(), None);
    assert_eq!(last[0].name, "bm1-badpw");
    assert_eq!(last[0].mac, "52:54:00:f0:0c:09");
    assert!(last[0].disk().is_some());
    assert_eq!(site.memory_mib(), 4 * 3072 + 2 * 1024);
    let mut macs: Vec<_> = site.vms.iter().map(|v| v.mac.clone()).collect();
    macs.sort();
    macs.dedup();
    assert_eq!(macs.len(), 6);
}

#[test]
fn uuids_are_stable_distinct_and_well_formed() {
    let a = Site::plan(3, 2, true);
    let b = Site::plan(9, 2, true);
    for (x, y) in a.vms.iter().zip(&b.vms) {
        assert_eq!(x.uuid, y.uuid, "the same node, the same system id");
        let parts: Vec<_> = x.uuid.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{}", x.uuid);
        assert_eq!(&x.uuid[14..15], "4");
        assert!("89ab".contains(&x.uuid[19..20]), "{}", x.uuid);
    }
    let mut uuids: Vec<_> = a.vms.iter().map(|v| v.uuid.clone()).collect();
    uuids.sort();
    uuids.dedup();
    assert_eq!(uuids.len(), 4);
}

#[test]
fn the_state_records_each_vm_and_its_serial_log() {
    let site = Site::plan(2, 1, true);
    let vms = site.vm_states(Path::new("/var/lib/dcn-lab"));
    assert_eq!(vms.len(), 3);
    assert_eq!(vms[0].name, "bm1-n1");
    assert_eq!(vms[0].bmc_host, BMC_HOST);
    assert_eq!(vms[0].address, "10.240.2.21");
    assert_eq!(
        vms[0].serial_log,
        Path::new("/var/lib/dcn-lab/logs/bm1/bm1-n1.serial.log")
    );
    assert_eq!(vms[1].kind, VmKind::NoDisk);
    // Inside the BMC, the same file through the bound logs directory.
    assert_eq!(
        site.vms[0].serial_log(),
        "/var/log/dcn-bm/bm1-n1.serial.log"
    );
}

fn options(bare_metal: u8, failures: bool, edge_iso: &Path) -> UpOptions {
    UpOptions {
        dir: "/var/lib/dcn-lab".into(),
        cache: "/var/cache/dcn-lab".into(),
        edges: 2,
        spare: 1,
        edge_layer: true,
        dcn_binary: "/usr/local/bin/dcn".into(),
        copy_dcn: false,
        config: None,
        cert_lifetime: None,
        bare_metal,
        bare_metal_failures: failures,
        edge_iso: edge_iso.into(),
    }
}

#[test]
fn options_are_checked_before_anything_is_made() {
    let iso = tempfile::NamedTempFile::new().unwrap();
    assert_eq!(plan(&options(0, false, iso.path())).unwrap(), None);
    let e = plan(&options(0, true, iso.path())).unwrap_err();
    assert!(format!("{e:#}").contains("give --bare-metal N"), "{e:#}");
    let e = plan(&options(5, false, iso.path())).unwrap_err();
    assert!(format!("{e:#}").contains("more than 4 nodes"), "{e:#}");
    let e = plan(&options(1, false, Path::new("/nonexistent/dcn-edge.iso"))).unwrap_err();
    let text = format!("{e:#}");
    assert!(
        text.contains("/nonexistent/dcn-edge.iso does not exist"),
        "{text}"
    );
    assert!(
        text.contains("dcn image build") && text.contains("--edge-iso"),
        "{text}"
    );
    let site = plan(&options(2, true, iso.path())).unwrap().unwrap();
    assert_eq!(site.index, 4, "after 2 edge sites and 1 spare");
    assert_eq!(site.vms.len(), 4);
}

#[test]
fn the_iso_goes_to_the_control_plane_and_the_wheels_and_logs_to_the_bmc() {
    let dir = Path::new("/var/lib/dcn-lab");
    let state = LabState {
        edge_iso: Some("/srv/dcn-edge.iso".into()),
        wheelhouse: Some("/var/cache/dcn-lab/wheelhouse-sushy-2.2.0".into()),
        ..LabState::default()
    };
    let (ro, rw) = binds(dir, &state, "controller");
    assert_eq!(
        ro,
        [(PathBuf::from("/srv/dcn-edge.iso"), CP_EDGE_ISO.to_string())]
    );
    assert!(rw.is_empty());
    let (ro, rw) = binds(dir, &state, BMC_ROLE);
    assert_eq!(
        ro,
        [(
            PathBuf::from("/var/cache/dcn-lab/wheelhouse-sushy-2.2.0"),
            "/srv/wheelhouse".to_string()
        )]
    );
    assert_eq!(
        rw,
        [(
            PathBuf::from("/var/lib/dcn-lab/logs/bm1"),
            "/var/log/dcn-bm".to_string()
        )]
    );
    assert_eq!(binds(dir, &state, "edge"), (Vec::new(), Vec::new()));
    // A lab without a bare-metal site binds nothing more.
    assert_eq!(
        binds(dir, &LabState::default(), "controller"),
        (Vec::new(), Vec::new())
    );
}
