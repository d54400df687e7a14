//! The site's BMC container: libvirtd and the sushy-tools Redfish emulator
//! (libvirt driver). [`seed`] writes its files before it boots; [`set_up`]
//! makes the storage pool, the nodes' disks and domains and the emulator's
//! virtualenv once it runs, starts the emulator and waits until the control
//! plane reaches it with the inventory's pin and password.
//!
//! Facts behind the settings (measured): libvirt in a container needs
//! `cgroup_controllers = [ ]` (the v1 controllers are read-only); the default
//! NAT network needs dnsmasq (absent); libvirt-guests would hold a stopping
//! container for minutes on a guest that ignores ACPI, so it is masked and
//! stopping the container is a power cut; the driver uploads media into the
//! pool named `default`, which must exist and be active.

use super::{BMC_USER, Material, Site, WHEELHOUSE_MOUNT, domain, inventory};
use crate::host::systemd::Systemd;
use crate::host::{Cmd, FileSpec, Files, Runner};
use crate::lab::ContainerRunner;
use anyhow::{Result, bail};
use std::path::Path;
use std::time::{Duration, Instant};

const UNIT: &str = "sushy-emulator.service";
const VENV: &str = "/opt/sushy";
const LIBVIRT: &str = "qemu:///system";

/// Write the BMC container's files into its root filesystem (before boot):
/// libvirt's settings, the emulator's config, certificate and unit, and the
/// nodes' domain XML; enable libvirtd and the emulator, mask libvirt-guests.
/// Creates DIR/logs/bm1, bound as the serial logs' directory, without the
/// serial logs of an earlier lab.
pub fn seed(
    runner: &dyn Runner,
    files: &Files,
    rootfs: &Path,
    site: &Site,
    m: &Material,
    dir: &Path,
) -> Result<()> {
    let inside = Files::new(rootfs, false);
    inside.write(
        "/etc/libvirt/qemu.conf",
        b"# dcn lab BMC: the cgroup v1 controllers are read-only in a container.\ncgroup_controllers = [ ]\n",
        &FileSpec::public().mode(0o600),
    )?;
    inside.remove("/etc/libvirt/qemu/networks/autostart/default.xml")?;
    inside.write(
        "/etc/sushy/emulator.conf",
        emulator_conf(site).as_bytes(),
        &FileSpec::public(),
    )?;
    inside.write(
        "/etc/sushy/server.crt",
        m.cert_pem.as_bytes(),
        &FileSpec::public(),
    )?;
    inside.write(
        "/etc/sushy/server.key",
        m.key_pem.expose().as_bytes(),
        &FileSpec::secret(),
    )?;
    for d in ["/var/lib/sushy/state", "/var/lib/sushy/tmp"] {
        inside.ensure_dir(d, &FileSpec::private_dir())?;
    }
    inside.write(
        format!("/etc/systemd/system/{UNIT}"),
        unit().as_bytes(),
        &FileSpec::public(),
    )?;
    for vm in &site.vms {
        inside.write(
            vm.xml_path(),
            domain::xml(vm).as_bytes(),
            &FileSpec::public(),
        )?;
    }
    files.create_dir_all(Site::log_dir(dir))?;
    // Serial logs are appended to; a new lab starts them afresh.
    for vm in site.vm_states(dir) {
        files.remove(&vm.serial_log)?;
    }
    let systemd = Systemd::for_tree(runner, rootfs);
    systemd.enable(&["libvirtd.service", UNIT])?;
    // Stopping the BMC is a power cut: libvirt-guests must not shut the
    // guests down first.
    systemd.mask(&["libvirt-guests.service"])?;
    Ok(())
}

/// sushy-tools' config: TLS and basic auth on the BMC's address, the
/// libvirt driver limited to the site's domains, one virtual CD.
pub(super) fn emulator_conf(site: &Site) -> String {
    let allowed = site
        .vms
        .iter()
        .map(|v| format!("'{}'", v.uuid))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "# Written by `dcn lab up`: the Redfish BMC of the lab's bare-metal site.
SUSHY_EMULATOR_LISTEN_IP = '{ip}'
SUSHY_EMULATOR_LISTEN_PORT = {port}
SUSHY_EMULATOR_SSL_CERT = '/etc/sushy/server.crt'
SUSHY_EMULATOR_SSL_KEY = '/etc/sushy/server.key'
SUSHY_EMULATOR_AUTH_FILE = '/etc/sushy/htpasswd'
SUSHY_EMULATOR_LIBVIRT_URI = '{LIBVIRT}'
# Virtual media state survives a restart of the emulator.
SUSHY_EMULATOR_STATE_DIR = '/var/lib/sushy/state'
SUSHY_EMULATOR_FEATURE_SET = 'vmedia'
# Only the site's nodes.
SUSHY_EMULATOR_ALLOWED_INSTANCES = [{allowed}]
# Media URLs are not verified unless a client sets VerifyCertificate.
SUSHY_EMULATOR_VMEDIA_VERIFY_SSL = False
# One CD, as a real BMC has (the 'vmedia' set also lists a floppy).
SUSHY_EMULATOR_VMEDIA_DEVICES = {{'Cd': {{'Name': 'Virtual CD', 'MediaTypes': ['CD', 'DVD']}}}}
",
        ip = site.net.address,
        port = super::BMC_PORT,
    )
}

/// The emulator's unit. Enabled before the container first boots, when
/// neither the virtualenv nor the password hash exist yet: the conditions
/// skip it then, and [`set_up`] starts it; after a `lab restart` it starts
/// by itself.
pub(super) fn unit() -> String {
    format!(
        "[Unit]
Description=Redfish BMC emulator (sushy-tools, libvirt driver) of the dcn lab
After=libvirtd.service
Wants=libvirtd.service
ConditionPathExists={VENV}/bin/sushy-emulator
ConditionPathExists=/etc/sushy/htpasswd

[Service]
# InsertMedia downloads the image here, then uploads it into the pool.
Environment=TMPDIR=/var/lib/sushy/tmp
ExecStart={VENV}/bin/sushy-emulator --config /etc/sushy/emulator.conf
Restart=on-failure

[Install]
WantedBy=multi-user.target
"
    )
}

/// In the running BMC container (`bmc`, its root filesystem `rootfs`): the
/// pool, each node's disk and domain, the emulator's virtualenv from the
/// wheelhouse and its password hash; then start the emulator and wait, up
/// to `limit`, until the control plane (`cp`) reads the first node's system
/// with the inventory's pin and password.
pub fn set_up(
    bmc: &dyn Runner,
    rootfs: &Path,
    cp: &dyn Runner,
    site: &Site,
    m: &Material,
    limit: Duration,
) -> Result<()> {
    wait_for_libvirt(bmc, limit)?;
    define_nodes(bmc, site)?;
    install_emulator(bmc, rootfs, m)?;
    Systemd::new(bmc).start(UNIT)?;
    wait_until_answering(cp, bmc, site, m, limit)
}

/// The storage pool the emulator uploads media into, and each node's disk
/// and domain.
fn define_nodes(bmc: &dyn Runner, site: &Site) -> Result<()> {
    let virsh = |what: &str, args: &[&str]| -> Result<()> {
        bmc.run(
            &Cmd::new(what, "virsh")
                .args(["-q", "-c", LIBVIRT])
                .args(args.iter().copied()),
        )?;
        Ok(())
    };
    virsh(
        "defining the storage pool the emulator uploads media into",
        &[
            "pool-define-as",
            "default",
            "dir",
            "--target",
            "/var/lib/libvirt/images",
        ],
    )?;
    virsh("starting the storage pool", &["pool-start", "default"])?;
    virsh(
        "autostarting the storage pool",
        &["pool-autostart", "default"],
    )?;
    for vm in &site.vms {
        if let Some(disk) = vm.disk() {
            bmc.run(
                &Cmd::new(format!("creating the disk of {}", vm.name), "qemu-img")
                    .args(["create", "-q", "-f", "qcow2", &disk, "16G"]),
            )?;
        }
        virsh(
            &format!("defining the domain {}", vm.name),
            &["define", &vm.xml_path()],
        )?;
    }
    Ok(())
}

/// The emulator's virtualenv, installed from the wheelhouse, and its
/// password file (a bcrypt hash of the BMC's password) in `rootfs`.
fn install_emulator(bmc: &dyn Runner, rootfs: &Path, m: &Material) -> Result<()> {
    // No ensurepip in the layer, but Debian's pip: a venv without pip that
    // sees the system site (python3-libvirt), installed into by that pip.
    bmc.run(
        &Cmd::new("creating the emulator's virtualenv", "python3").args([
            "-m",
            "venv",
            "--without-pip",
            "--system-site-packages",
            VENV,
        ]),
    )?;
    let requirement = format!("sushy-tools=={}", super::SUSHY_TOOLS_VERSION);
    bmc.run(
        &Cmd::new(
            "installing sushy-tools from the wheelhouse",
            format!("{VENV}/bin/python"),
        )
        .args(["-m", "pip", "install", "--quiet", "--no-index"])
        .args([
            "--disable-pip-version-check",
            "--find-links",
            WHEELHOUSE_MOUNT,
        ])
        .arg(requirement)
        .timeout(Duration::from_secs(300)),
    )?;
    let out = bmc.run(
        &Cmd::new("hashing the BMC password (bcrypt)", format!("{VENV}/bin/python"))
            .args([
                "-c",
                "import bcrypt,sys; print(bcrypt.hashpw(sys.stdin.read().encode(), bcrypt.gensalt(rounds=5)).decode())",
            ])
            .stdin(m.password.clone()),
    )?;
    let hash = out.stdout.trim();
    if !hash.starts_with("$2") {
        bail!("bcrypt in the BMC container printed no password hash");
    }
    Files::new(rootfs, false).write(
        "/etc/sushy/htpasswd",
        format!("{BMC_USER}:{hash}\n").as_bytes(),
        &FileSpec::secret(),
    )?;
    Ok(())
}

/// libvirtd is socket-activated; wait until it answers.
fn wait_for_libvirt(bmc: &dyn Runner, limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        let out = bmc.run(
            &Cmd::new("asking libvirtd for its version", "virsh")
                .args(["-c", LIBVIRT, "version"])
                .read_only()
                .unchecked()
                .timeout(Duration::from_secs(20)),
        )?;
        if out.success() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "libvirtd in {} does not answer after {}s: {}",
                super::BMC_HOST,
                limit.as_secs(),
                out.stderr.trim()
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `dcn bmc status` in the control plane, as `site deploy` will reach the
/// BMC: through the router, pinned, with the inventory's password file.
fn bmc_status(site: &Site, m: &Material, password_file: &str) -> Cmd {
    Cmd::new("reading a bare-metal node through its BMC", "dcn")
        .args(["bmc", "status", "--bmc", &site.bmc_url(), "--system"])
        .arg(site.vms[0].uuid.clone())
        .args(["--username", BMC_USER, "--password-file", password_file])
        .args(["--bmc-pin", &m.pin.to_string(), "--timeout", "10"])
        .read_only()
        .unchecked()
        .timeout(Duration::from_secs(90))
}

/// Poll until the emulator answers the control plane; with a failure node,
/// check that the wrong password is refused. A timeout quotes the
/// emulator's journal.
fn wait_until_answering(
    cp: &dyn Runner,
    bmc: &dyn Runner,
    site: &Site,
    m: &Material,
    limit: Duration,
) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        let out = cp.run(&bmc_status(site, m, inventory::PASSWORD_FILE))?;
        if out.success() {
            break;
        }
        if Instant::now() >= deadline {
            let journal = bmc
                .run(
                    &Cmd::new("reading the emulator's journal", "journalctl")
                        .args(["-u", UNIT, "-n", "30", "--no-pager", "-o", "cat"])
                        .read_only()
                        .unchecked(),
                )
                .map(|o| o.stdout)
                .unwrap_or_default();
            bail!(
                "the BMC emulator at {} did not answer the control plane within {}s; the last try said:\n{}\nits journal (`dcn lab exec {} -- journalctl -u {UNIT}`):\n{}",
                site.bmc_url(),
                limit.as_secs(),
                crate::host::command::tail_lines(&format!("{}{}", out.stdout, out.stderr), 10),
                super::BMC_HOST,
                crate::host::command::tail_lines(&journal, 30)
            );
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    if site
        .vms
        .iter()
        .any(|v| v.kind == crate::lab::state::VmKind::BadPassword)
    {
        let out = cp.run(&bmc_status(site, m, inventory::WRONG_PASSWORD_FILE))?;
        if out.success() {
            bail!(
                "the BMC emulator at {} accepted the wrong password of {}: its authentication is off",
                site.bmc_url(),
                inventory::WRONG_PASSWORD_FILE
            );
        }
    }
    Ok(())
}

/// A VM's power as libvirt in its BMC container says (`running`, `shut
/// off`, …), or `unknown` when it cannot be asked.
pub fn vm_power(bmc_init: Option<u32>, name: &str) -> String {
    let Some(init) = bmc_init.filter(|p| crate::lab::container::alive(*p)) else {
        return "unknown".into();
    };
    ContainerRunner::new(init)
        .run(
            &Cmd::new("reading a bare-metal node's power", "virsh")
                .args(["-c", LIBVIRT, "domstate", name])
                .read_only()
                .unchecked()
                .timeout(Duration::from_secs(15)),
        )
        .ok()
        .filter(|o| o.success())
        .map(|o| o.stdout.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}
