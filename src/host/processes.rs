//! What the host's running processes say about code an upgrade replaced:
//! guests whose qemu binary is no longer the one on the disk. Read from
//! `/proc` of the machine dcn runs on (the guests of this host).

/// libvirt's names of the guests whose qemu binary was replaced on the
/// disk since they started (`/proc/PID/exe` reads `… (deleted)`): they
/// take the new one at their next restart, which is the operator's call.
pub fn guests_on_replaced_qemu() -> Vec<String> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut guests = Vec::new();
    for p in procs.flatten() {
        let dir = p.path();
        let Ok(exe) = std::fs::read_link(dir.join("exe")) else {
            continue;
        };
        let exe = exe.to_string_lossy();
        if !exe.contains("qemu-system") || !exe.ends_with(" (deleted)") {
            continue;
        }
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        guests.push(
            guest_name(&cmdline)
                .unwrap_or_else(|| format!("qemu PID {}", p.file_name().to_string_lossy())),
        );
    }
    guests.sort();
    guests
}

/// The `guest=NAME` of qemu's `-name` argument, from its NUL-separated
/// command line.
fn guest_name(cmdline: &[u8]) -> Option<String> {
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let i = args.iter().position(|a| *a == b"-name")?;
    let value = String::from_utf8_lossy(args.get(i + 1)?);
    let name = value
        .split(',')
        .find_map(|kv| kv.strip_prefix("guest="))
        .unwrap_or(&value);
    Some(crate::terminal_text::sanitize(name).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_is_named_from_qemus_command_line() {
        let cmd =
            b"/usr/bin/qemu-system-x86_64\0-name\0guest=instance-00000001,debug-threads=on\0-S\0";
        assert_eq!(guest_name(cmd).as_deref(), Some("instance-00000001"));
        assert_eq!(guest_name(b"qemu\0-S\0-nographic\0"), None);
    }
}
