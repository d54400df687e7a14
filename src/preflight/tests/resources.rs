//! The cpus, memory, disk-var and virtualization checks, and facts that could not be read.

use super::*;

#[test]
fn cpu_boundaries() {
    let mut f = good();
    let cases = [
        (Role::Standalone, 1, ERROR),
        (Role::Standalone, 2, PASS),
        (Role::Edge, 1, WARNING),
        (Role::Edge, 2, PASS),
    ];
    for (role, n, want) in cases {
        f.cpus = Fact::Known(n);
        assert_eq!(outcome(role, &f, "cpus"), want, "{role} with {n} CPUs");
    }
    f.cpus = Fact::Known(2);
    assert_eq!(
        check(Role::Standalone, &f, "cpus").message,
        "2 CPUs (minimum 2)"
    );
    assert_eq!(
        check(Role::Edge, &f, "cpus").message,
        "2 CPUs (minimum 1, recommended 2)"
    );
    f.cpus = Fact::Known(1);
    let c = check(Role::Edge, &f, "cpus");
    assert_eq!(
        c.message,
        "1 CPU, below the recommended 2 for an edge compute host"
    );
    assert_eq!(c.fix.unwrap(), "give the host at least 2 CPUs");
}

/// The smallest MemTotal that counts as `gib` GiB of memory.
fn mem_floor(gib: u64) -> u64 {
    gib * GIB - gib * GIB / 100 * 10
}

#[test]
fn memory_boundaries_allow_for_what_the_kernel_reserves() {
    let mut f = good();
    let cases = [
        (Role::Standalone, mem_floor(4) - 1, ERROR),
        (Role::Standalone, mem_floor(4), WARNING),
        (Role::Standalone, mem_floor(8) - 1, WARNING),
        (Role::Standalone, mem_floor(8), PASS),
        (Role::Edge, mem_floor(2) - 1, ERROR),
        (Role::Edge, mem_floor(2), WARNING),
        (Role::Edge, mem_floor(4) - 1, WARNING),
        (Role::Edge, mem_floor(4), PASS),
    ];
    for (role, bytes, want) in cases {
        f.memory_bytes = Fact::Known(bytes);
        assert_eq!(
            outcome(role, &f, "memory"),
            want,
            "{role} with {bytes} bytes"
        );
    }
    // What a VM with 4 GiB of RAM reports is enough for the minimum.
    f.memory_bytes = Fact::Known(4_020_000 * 1024);
    let c = check(Role::Standalone, &f, "memory");
    assert_eq!((c.status, c.severity), WARNING);
    assert_eq!(
        c.message,
        "3.8 GiB, below the recommended 8 GiB for a standalone control plane"
    );
    f.memory_bytes = Fact::Known(23_400 * GIB / 1000);
    assert_eq!(
        check(Role::Standalone, &f, "memory").message,
        "23.4 GiB (minimum 4 GiB, recommended 8 GiB)"
    );
}

#[test]
fn disk_boundaries() {
    let mut f = good();
    let cases = [
        (Role::Standalone, 10 * GIB - 1, ERROR),
        (Role::Standalone, 10 * GIB, WARNING),
        (Role::Standalone, 20 * GIB - 1, WARNING),
        (Role::Standalone, 20 * GIB, PASS),
        (Role::Edge, 5 * GIB - 1, ERROR),
        (Role::Edge, 5 * GIB, WARNING),
        (Role::Edge, 20 * GIB, PASS),
    ];
    for (role, bytes, want) in cases {
        f.var_free_bytes = Fact::Known(bytes);
        assert_eq!(
            outcome(role, &f, "disk-var"),
            want,
            "{role} with {bytes} bytes"
        );
    }
    f.var_free_bytes = Fact::Known(4 * GIB);
    let c = check(Role::Edge, &f, "disk-var");
    assert_eq!(
        c.message,
        "4.0 GiB free under /var, below the minimum of 5 GiB for an edge compute host"
    );
    assert!(c.fix.unwrap().ends_with("to 5 GiB free"));
}

#[test]
fn unknown_sizes_are_warnings_that_say_why() {
    let mut f = good();
    f.memory_bytes = Fact::unknown("reading /proc/meminfo: No such file or directory");
    let c = check(Role::Standalone, &f, "memory");
    assert_eq!((c.status, c.severity), WARNING);
    assert!(
        c.message
            .starts_with("not checked: could not read /proc/meminfo"),
        "{}",
        c.message
    );
    f.listeners = Fact::unknown("reading /proc/net/tcp: denied");
    assert_eq!(outcome(Role::Edge, &f, "ports"), WARNING);
}

#[test]
fn virtualization_kvm_or_qemu() {
    let mut f = good();
    let report = |f: &Facts| {
        Report::new(
            crate::recipes::for_tests(),
            Role::Edge,
            f.clone(),
            &Params::default(),
            vec![],
        )
    };
    assert_eq!(report(&f).virt_type(), "kvm");
    let c = check(Role::Edge, &f, "virtualization");
    assert_eq!((c.status, c.severity), (Status::Pass, Severity::Warning));
    assert_eq!(c.message, "kvm: the CPU has vmx and /dev/kvm is usable");

    // This lab's machine: /dev/kvm is there, VT-x is not.
    f.cpu_virt_flag = Fact::Known(None);
    let c = check(Role::Edge, &f, "virtualization");
    assert_eq!((c.status, c.severity), WARNING);
    assert!(
        c.message
            .starts_with("qemu: /dev/kvm exists but the CPU does not expose VT-x/AMD-V")
    );
    assert!(c.message.contains("software emulation"));
    assert!(c.fix.unwrap().contains("enable VT-x/AMD-V"));
    let r = report(&f);
    assert_eq!(r.virt_type(), "qemu");
    assert!(!r.has_errors(), "qemu works; it is only slow");

    f.cpu_virt_flag = Fact::Known(Some("svm".into()));
    f.kvm_device = KvmDevice::Missing;
    let c = check(Role::Standalone, &f, "virtualization");
    assert_eq!(
        c.message.split(',').next().unwrap(),
        "qemu: /dev/kvm does not exist"
    );
    assert!(c.fix.unwrap().contains("modprobe kvm_amd"));
    assert_eq!(report(&f).virt_type(), "qemu");

    // A control plane without the compute role runs no instances.
    let params = Params {
        compute: false,
        ..Params::default()
    };
    let c = check_with(Role::Standalone, &f, &params, "virtualization");
    assert_eq!(c.status, Status::Pass);
}
