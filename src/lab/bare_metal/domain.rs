//! The libvirt domain of a bare-metal node, as measured to work under the
//! Redfish emulator's libvirt driver on a machine without KVM:
//!
//! - `type='qemu'` (TCG): `kvm` is refused at define without /dev/kvm;
//! - CPU model Opteron_G3 without svm, never `-cpu max`: under TCG that
//!   exposes svm, so the installed node would pick nested `virt_type=kvm`.
//!   An AMD model, because Linux turns on page-table isolation for an Intel
//!   one without the microcode that says it is immune (Nehalem did): every
//!   system call then switches page tables, and TCG flushes its whole
//!   software TLB at each switch (figures: docs/power-cuts.md);
//! - q35 and SeaBIOS on the serial console ("Booting from DVD/CD…" lands in
//!   the log);
//! - no `<boot dev>` in `<os>`: the driver's boot override rewrites per-device
//!   `<boot order>`; the disk has order 1 so "Hdd" has a device to point at;
//! - no cdrom: InsertMedia adds one (SATA on q35), EjectMedia removes it;
//! - every second node boots with UEFI (OVMF, chosen by libvirt's firmware
//!   autoselection, secure boot off), the others with SeaBIOS;
//! - `on_reboot=destroy`: the driver's boot override is always Continuous,
//!   so the installer's reboot must power the node off; `site deploy` then
//!   ejects, sets Hdd and powers it on, and it boots its disk;
//! - the serial console appended to a file in the bound logs directory.

use super::Vm;

/// The domain XML of `vm`, on the BMC namespace's bridge `br0`.
pub fn xml(vm: &Vm) -> String {
    let disk = match vm.disk() {
        Some(path) => format!(
            "    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2' discard='unmap'/>
      <source file='{path}'/>
      <target dev='vda' bus='virtio'/>
      <boot order='1'/>
    </disk>
"
        ),
        None => String::new(),
    };
    let firmware = if vm.uefi() {
        "<os firmware='efi'>
    <type arch='x86_64' machine='q35'>hvm</type>
    <firmware>
      <feature enabled='no' name='secure-boot'/>
      <feature enabled='no' name='enrolled-keys'/>
    </firmware>
  </os>"
    } else {
        "<os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <bios useserial='yes'/>
  </os>"
    };
    format!(
        "<domain type='qemu'>
  <name>{name}</name>
  <uuid>{uuid}</uuid>
  <memory unit='MiB'>{memory}</memory>
  <vcpu>2</vcpu>
  {firmware}
  <features>
    <acpi/>
    <apic/>
  </features>
  <cpu mode='custom' match='exact' check='none'>
    <model fallback='allow'>Opteron_G3</model>
    <feature policy='disable' name='svm'/>
  </cpu>
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
{disk}    <interface type='bridge'>
      <mac address='{mac}'/>
      <source bridge='br0'/>
      <model type='virtio'/>
    </interface>
    <serial type='file'>
      <source path='{serial}' append='on'/>
      <target port='0'/>
    </serial>
    <memballoon model='none'/>
  </devices>
</domain>
",
        name = vm.name,
        uuid = vm.uuid,
        memory = vm.memory_mib,
        mac = vm.mac,
        serial = vm.serial_log(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::Site;
    use super::*;
    use crate::lab::state::VmKind;

    /// The element names of `xml` in document order, checking that every
    /// element is closed in order (a small well-formedness check).
    fn elements(xml: &str) -> Vec<String> {
        let mut open: Vec<String> = Vec::new();
        let mut seen = Vec::new();
        let mut rest = xml;
        while let Some(start) = rest.find('<') {
            let end = rest[start..].find('>').expect("a tag is closed") + start;
            let tag = &rest[start + 1..end];
            rest = &rest[end + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(open.pop().as_deref(), Some(name), "</{name}> out of order");
                continue;
            }
            let name = tag.split([' ', '/']).next().unwrap().to_string();
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{name}"
            );
            seen.push(name.clone());
            if !tag.ends_with('/') {
                open.push(name);
            }
        }
        assert!(open.is_empty(), "unclosed: {open:?}");
        assert!(rest.trim().is_empty());
        seen
    }

    /// The text of the first `<name ...>TEXT</name>`.
    fn text<'a>(xml: &'a str, name: &str) -> &'a str {
        let open = xml.find(&format!("<{name}")).expect(name);
        let start = xml[open..].find('>').unwrap() + open + 1;
        let end = xml[start..].find(&format!("</{name}>")).unwrap() + start;
        &xml[start..end]
    }

    #[test]
    fn a_node_boots_serially_from_its_disk_and_powers_off_on_reboot() {
        let site = Site::plan(3, 2, false);
        let vm = &site.vms[1];
        let xml = xml(vm);
        let elements = elements(&xml);
        assert_eq!(elements[0], "domain");
        assert!(xml.starts_with("<domain type='qemu'>"));
        assert_eq!(text(&xml, "name"), "bm1-n2");
        assert_eq!(text(&xml, "uuid"), vm.uuid);
        assert_eq!(text(&xml, "memory"), "3072");
        assert_eq!(text(&xml, "vcpu"), "2");
        // An AMD model (no page-table isolation under TCG) without svm (no
        // nested KVM for the node to pick).
        assert_eq!(text(&xml, "model"), "Opteron_G3");
        assert!(xml.contains("<feature policy='disable' name='svm'/>"));
        assert_eq!(text(&xml, "on_reboot"), "destroy");
        assert!(xml.contains("machine='q35'"));
        // n2 boots with UEFI, n1 with SeaBIOS on the serial console.
        assert!(xml.contains("<os firmware='efi'>") && !xml.contains("<bios"));
        assert!(xml.contains("<feature enabled='no' name='secure-boot'/>"));
        let n1 = super::xml(&site.vms[0]);
        assert!(n1.contains("<bios useserial='yes'/>") && !n1.contains("firmware='efi'"));
        assert!(n1.starts_with("<domain type='qemu'>"));
        assert!(xml.contains("<source file='/var/lib/libvirt/images/bm1-n2.qcow2'/>"));
        assert!(xml.contains("<boot order='1'/>"));
        assert!(xml.contains("<mac address='52:54:00:f0:03:02'/>"));
        assert!(xml.contains("<source bridge='br0'/>"));
        assert!(xml.contains("<source path='/var/log/dcn-bm/bm1-n2.serial.log' append='on'/>"));
        // No cdrom (InsertMedia adds it), no <boot dev> (per-device order).
        assert!(!xml.contains("cdrom"));
        assert!(!xml.contains("<boot dev"));
        assert!(!xml.contains("maximum") && !xml.contains("host-passthrough"));
        assert_eq!(elements.iter().filter(|e| *e == "disk").count(), 1);
    }

    #[test]
    fn the_no_disk_node_has_no_disk_and_less_memory() {
        let site = Site::plan(3, 1, true);
        let vm = site.vms.iter().find(|v| v.kind == VmKind::NoDisk).unwrap();
        let xml = xml(vm);
        let elements = elements(&xml);
        assert!(!elements.contains(&"disk".to_string()));
        assert!(!xml.contains("<boot"));
        assert_eq!(text(&xml, "memory"), "1024");
        assert_eq!(text(&xml, "name"), "bm1-nodisk");
        assert!(elements.contains(&"interface".to_string()));
    }
}
