//! The checks of what the host is: who runs dcn, which OS and init it
//! boots, and whether instances can use kvm.

use super::{CheckResult, Params, Severity};
use crate::preflight::Role;
use crate::preflight::facts::{Fact, Facts, KvmDevice};

pub(super) fn check_root(facts: &Facts) -> CheckResult {
    if facts.euid == 0 {
        return CheckResult::pass("root", Severity::Error, "running as root".into());
    }
    CheckResult::fail(
        "root",
        Severity::Error,
        format!(
            "running as uid {}: installing packages, writing /etc and managing services need root",
            facts.euid
        ),
        "run dcn as root, for example with sudo".into(),
    )
}

pub(super) fn check_os(facts: &Facts) -> CheckResult {
    let fix = "install Debian 12 (bookworm) on this host; dcn supports no other release";
    match &facts.os {
        Fact::Known(os) if os.id == "debian" && os.version_id == "12" => {
            CheckResult::pass("os", Severity::Error, os.pretty_name.clone())
        }
        Fact::Known(os) => {
            let name = if os.pretty_name.is_empty() {
                format!("ID={:?} VERSION_ID={:?}", os.id, os.version_id)
            } else {
                os.pretty_name.clone()
            };
            let message = format!(
                "{name} is not supported: dcn installs the OpenStack Zed packages of Debian 12"
            );
            CheckResult::fail("os", Severity::Error, message, fix.into())
        }
        Fact::Unknown { unknown } => CheckResult::fail(
            "os",
            Severity::Error,
            format!("cannot tell which OS this is ({unknown}); dcn needs Debian 12"),
            fix.into(),
        ),
    }
}

pub(super) fn check_systemd(facts: &Facts) -> CheckResult {
    let why = "dcn installs and runs the OpenStack services as systemd units";
    let fix = "run dcn on a host booted with systemd, or try it in the local lab: `dcn lab up`";
    let fail = |message: String| CheckResult::fail("systemd", Severity::Error, message, fix.into());
    match (&facts.pid1, facts.systemd_booted) {
        (Fact::Known(p), _) if p == "systemd" => {
            CheckResult::pass("systemd", Severity::Error, "PID 1 is systemd".into())
        }
        (Fact::Known(p), _) => fail(format!("PID 1 is {p}, not systemd: {why}")),
        (Fact::Unknown { .. }, true) => CheckResult::pass(
            "systemd",
            Severity::Error,
            "booted with systemd (/run/systemd/system exists)".into(),
        ),
        (Fact::Unknown { unknown }, false) => fail(format!(
            "not booted with systemd (no /run/systemd/system; PID 1 unreadable: {unknown}): {why}"
        )),
    }
}

pub(super) fn check_virtualization(role: Role, facts: &Facts, params: &Params) -> CheckResult {
    const NAME: &str = "virtualization";
    if role == Role::Standalone && !params.compute {
        let message = "not needed: this host runs no instances (no compute role)".to_string();
        return CheckResult::pass(NAME, Severity::Warning, message);
    }
    let flag = facts.cpu_virt_flag.get();
    if let (Ok(Some(flag)), KvmDevice::Usable) = (flag, &facts.kvm_device) {
        let message = format!("kvm: the CPU has {flag} and /dev/kvm is usable");
        return CheckResult::pass(NAME, Severity::Warning, message);
    }
    let cpu = match flag {
        Ok(Some(_)) => None,
        Ok(None) => Some(
            "the CPU does not expose VT-x/AMD-V (no vmx or svm flag in /proc/cpuinfo)".to_string(),
        ),
        Err(why) => Some(format!("the CPU flags are unknown ({why})")),
    };
    let dev = match &facts.kvm_device {
        KvmDevice::Usable => None,
        KvmDevice::Missing => Some("/dev/kvm does not exist".to_string()),
        KvmDevice::Unusable(why) => Some(format!("/dev/kvm cannot be opened ({why})")),
    };
    let what = match (&cpu, &dev) {
        (Some(c), None) => format!("/dev/kvm exists but {c}"),
        (Some(c), Some(d)) => format!("{c} and {d}"),
        (None, Some(d)) => d.clone(),
        (None, None) => unreachable!("kvm is usable when neither part is missing"),
    };
    let fix = match (flag, &facts.kvm_device) {
        (Ok(Some(flag)), KvmDevice::Missing) => {
            let module = if *flag == "svm" { "kvm_amd" } else { "kvm_intel" };
            format!("load the kvm module (`modprobe {module}`) to use kvm; until then dcn uses qemu")
        }
        (Ok(Some(_)), _) => {
            "let root open /dev/kvm (check its permissions and the kvm module) to use kvm; until then dcn uses qemu".to_string()
        }
        _ => "enable VT-x/AMD-V in the firmware setup (or nested virtualization, if this host is a VM) to use kvm; until then dcn uses qemu".to_string(),
    };
    let message = format!(
        "qemu: {what}, so instances run in software emulation, many times slower than with kvm"
    );
    CheckResult::fail(NAME, Severity::Warning, message, fix)
}
