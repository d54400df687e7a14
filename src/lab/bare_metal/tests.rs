//! The bare-metal site without root: its plan, the BMC container's files
//! and commands (on a temporary root and a recording runner), and the
//! inventory read back by dcn's own parser.

use super::*;
use crate::host::{Cmd, CmdOutput, RecordingRunner};
use std::time::Duration;

fn material(site: &Site) -> Material {
    Material::generate(site).unwrap()
}

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

#[test]
fn the_emulator_serves_tls_with_auth_for_the_sites_domains_only() {
    let site = Site::plan(3, 2, true);
    let conf = emulator::emulator_conf(&site);
    for line in [
        "SUSHY_EMULATOR_LISTEN_IP = '10.240.3.5'",
        "SUSHY_EMULATOR_LISTEN_PORT = 8000",
        "SUSHY_EMULATOR_SSL_CERT = '/etc/sushy/server.crt'",
        "SUSHY_EMULATOR_SSL_KEY = '/etc/sushy/server.key'",
        "SUSHY_EMULATOR_AUTH_FILE = '/etc/sushy/htpasswd'",
        "SUSHY_EMULATOR_LIBVIRT_URI = 'qemu:///system'",
        "SUSHY_EMULATOR_FEATURE_SET = 'vmedia'",
        "SUSHY_EMULATOR_VMEDIA_DEVICES = {'Cd': {'Name': 'Virtual CD', 'MediaTypes': ['CD', 'DVD']}}",
    ] {
        assert!(conf.lines().any(|l| l == line), "{line} not in\n{conf}");
    }
    let allowed = conf
        .lines()
        .find_map(|l| l.strip_prefix("SUSHY_EMULATOR_ALLOWED_INSTANCES = "))
        .unwrap();
    let expected: Vec<_> = site.vms.iter().map(|v| format!("'{}'", v.uuid)).collect();
    assert_eq!(allowed, format!("[{}]", expected.join(", ")));
    let unit = emulator::unit();
    assert!(
        unit.contains("ExecStart=/opt/sushy/bin/sushy-emulator --config /etc/sushy/emulator.conf")
    );
    assert!(unit.contains("ConditionPathExists=/etc/sushy/htpasswd"));
    assert!(unit.contains("Environment=TMPDIR=/var/lib/sushy/tmp"));
}

#[test]
fn seeding_writes_the_bmc_files_and_enables_its_units() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let autostart = root.path().join("etc/libvirt/qemu/networks/autostart");
    std::fs::create_dir_all(&autostart).unwrap();
    std::fs::write(autostart.join("default.xml"), "<network/>").unwrap();
    let site = Site::plan(3, 2, true);
    let m = material(&site);
    let stale = dir.path().join("logs/bm1/bm1-n1.serial.log");
    std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
    std::fs::write(&stale, "an earlier lab's boot\n").unwrap();
    let r = RecordingRunner::new();
    seed_bmc(&r, root.path(), &site, &m, dir.path()).unwrap();
    assert!(!stale.exists());
    let read = |p: &str| std::fs::read_to_string(root.path().join(p)).unwrap();
    assert!(read("etc/libvirt/qemu.conf").contains("\ncgroup_controllers = [ ]\n"));
    assert!(!autostart.join("default.xml").exists());
    assert_eq!(read("etc/sushy/server.crt"), m.cert_pem);
    let key = root.path().join("etc/sushy/server.key");
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(read("etc/sushy/emulator.conf").contains("'10.240.3.5'"));
    assert!(read("etc/systemd/system/sushy-emulator.service").contains("[Install]"));
    for vm in &site.vms {
        assert!(read(&vm.xml_path()[1..]).contains(&vm.uuid));
    }
    assert!(dir.path().join("logs/bm1").is_dir());
    let root_arg = format!("--root={}", root.path().display());
    assert_eq!(
        r.command_lines(),
        [
            format!("systemctl {root_arg} enable --quiet libvirtd.service sushy-emulator.service"),
            format!("systemctl {root_arg} mask --quiet libvirt-guests.service"),
        ]
    );
}

/// A BMC container whose bcrypt prints a hash, and a control plane whose
/// `dcn bmc status` succeeds unless given the wrong password file.
fn answering_bmc() -> RecordingRunner {
    RecordingRunner::answering(|cmd: &Cmd| {
        if cmd.args.iter().any(|a| a.contains("bcrypt")) {
            assert!(cmd.stdin.is_some(), "the password goes on stdin");
            CmdOutput::ok("$2b$05$abcdefghijklmnopqrstuv\n")
        } else {
            CmdOutput::ok("")
        }
    })
}

fn answering_cp(wrong_password_accepted: bool) -> RecordingRunner {
    RecordingRunner::answering(move |cmd: &Cmd| {
        let wrong = cmd.args.iter().any(|a| a == inventory::WRONG_PASSWORD_FILE);
        if wrong && !wrong_password_accepted {
            CmdOutput::failed(1, "error: the BMC refused the credentials (401)")
        } else {
            CmdOutput::ok("")
        }
    })
}

#[test]
fn set_up_defines_the_nodes_installs_offline_and_checks_from_the_centre() {
    let root = tempfile::tempdir().unwrap();
    let site = Site::plan(3, 1, true);
    let m = material(&site);
    let (bmc, cp) = (answering_bmc(), answering_cp(false));
    set_up_bmc(&bmc, root.path(), &cp, &site, &m, Duration::from_secs(5)).unwrap();
    let lines = bmc.command_lines();
    let at = |part: &str| {
        lines
            .iter()
            .position(|l| l.contains(part))
            .unwrap_or_else(|| panic!("{part} not in {lines:#?}"))
    };
    let pool = at(
        "virsh -q -c qemu:///system pool-define-as default dir --target /var/lib/libvirt/images",
    );
    assert!(at("pool-start default") > pool && at("pool-autostart default") > pool);
    assert!(at("qemu-img create -q -f qcow2 /var/lib/libvirt/images/bm1-n1.qcow2 16G") > pool);
    assert!(!lines.iter().any(|l| l.contains("bm1-nodisk.qcow2")));
    for vm in &site.vms {
        at(&format!("define /etc/dcn-bm/{}.xml", vm.name));
    }
    let venv = at("python3 -m venv --without-pip --system-site-packages /opt/sushy");
    let pip = at(
        "/opt/sushy/bin/python -m pip install --quiet --no-index --disable-pip-version-check --find-links /srv/wheelhouse sushy-tools==2.2.0",
    );
    let start = at("systemctl start sushy-emulator.service");
    assert!(venv < pip && pip < at("bcrypt") && at("bcrypt") < start);
    assert!(
        lines.iter().all(|l| !l.contains(m.password.expose())),
        "no password in argv"
    );
    let htpasswd = std::fs::read_to_string(root.path().join("etc/sushy/htpasswd")).unwrap();
    assert_eq!(htpasswd, "admin:$2b$05$abcdefghijklmnopqrstuv\n");
    // The control plane reads a node with the pin and the right password,
    // then is refused with the wrong one.
    let cp_lines = cp.command_lines();
    assert_eq!(cp_lines.len(), 2, "{cp_lines:#?}");
    let pinned = format!(
        "dcn bmc status --bmc https://10.240.3.5:8000 --system {} --username admin --password-file /etc/dcn/bmc/bm1.password --bmc-pin {}",
        site.vms[0].uuid, m.pin
    );
    assert!(cp_lines[0].starts_with(&pinned), "{}", cp_lines[0]);
    assert!(cp_lines[1].contains("--password-file /etc/dcn/bmc/bm1-badpw.password"));
}

#[test]
fn an_emulator_that_takes_a_wrong_password_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let site = Site::plan(3, 1, true);
    let m = material(&site);
    let e = set_up_bmc(
        &answering_bmc(),
        root.path(),
        &answering_cp(true),
        &site,
        &m,
        Duration::from_secs(5),
    )
    .unwrap_err();
    assert!(
        format!("{e:#}").contains("accepted the wrong password"),
        "{e:#}"
    );
}

#[test]
fn an_emulator_that_never_answers_is_reported_with_its_journal() {
    let root = tempfile::tempdir().unwrap();
    let site = Site::plan(3, 1, false);
    let m = material(&site);
    let bmc = RecordingRunner::answering(|cmd: &Cmd| match cmd.program.as_str() {
        "journalctl" => CmdOutput::ok(
            "Traceback (most recent call last):\nOSError: [Errno 99] Cannot assign requested address\n",
        ),
        _ if cmd.args.iter().any(|a| a.contains("bcrypt")) => CmdOutput::ok("$2b$05$x\n"),
        _ => CmdOutput::ok(""),
    });
    let cp = RecordingRunner::answering(|_| CmdOutput::failed(1, "error: connection refused"));
    let e = set_up_bmc(&bmc, root.path(), &cp, &site, &m, Duration::ZERO).unwrap_err();
    let text = format!("{e:#}");
    assert!(
        text.contains("did not answer the control plane within 0s"),
        "{text}"
    );
    assert!(text.contains("connection refused"), "{text}");
    assert!(text.contains("Cannot assign requested address"), "{text}");
    assert!(
        text.contains("journalctl -u sushy-emulator.service"),
        "{text}"
    );
}

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
    remove_host_files(dir.path()).unwrap();
    assert!(!dir.path().join(HOST_INVENTORY).exists());
    remove_host_files(dir.path()).unwrap();
}

#[test]
fn the_bmc_certificate_names_its_address_and_matches_the_pin() {
    let site = Site::plan(5, 1, false);
    let m = material(&site);
    let info = crate::pki::CertInfo::from_pem(&m.cert_pem).unwrap();
    assert_eq!(
        info.ip_addresses,
        vec![IpAddr::V4(Ipv4Addr::new(10, 240, 5, 5))]
    );
    assert_eq!(Pin::of_spki_der(&info.spki_der), m.pin);
    assert_eq!(Pin::of_cert_pem(&m.cert_pem).unwrap(), m.pin);
}

fn options(bare_metal: u8, failures: bool, edge_iso: &Path) -> UpOptions {
    UpOptions {
        dir: "/var/lib/dcn-lab".into(),
        cache: "/var/cache/dcn-lab".into(),
        edges: 2,
        spare: 1,
        edge_layer: true,
        dcn_binary: "/usr/local/bin/dcn".into(),
        config: None,
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
