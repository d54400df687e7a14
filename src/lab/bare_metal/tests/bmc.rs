//! The BMC container: emulator config, seeded files, set-up and its failures, certificate.

use super::*;
use crate::host::{Cmd, CmdOutput, RecordingRunner};
use std::time::Duration;

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
    let files = crate::host::Files::new("/", false);
    seed_bmc(&r, &files, root.path(), &site, &m, dir.path()).unwrap();
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
