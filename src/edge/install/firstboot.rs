//! The first-boot unit: the installed system's `dcn join`, with the node's
//! settings, rendered from the template the image carries
//! (`/usr/share/dcn/dcn-firstboot.service.in`, from `images/edge/rootfs/`).

use crate::config::NodeConfig;
use crate::image::build::DCN_IN_IMAGE;
use anyhow::{Result, bail};

/// The unit's template in the live system (and on the installed one).
pub const TEMPLATE: &str = "/usr/share/dcn/dcn-firstboot.service.in";
/// The rendered unit on the installed system.
pub const UNIT: &str = "/etc/systemd/system/dcn-firstboot.service";
pub const UNIT_NAME: &str = "dcn-firstboot.service";
/// The join bundle on the installed system (0600).
pub const BUNDLE: &str = "/etc/dcn/bundle.tar.gz";

/// `dcn join BUNDLE` and the node's flags, as words.
pub fn join_command(node: &NodeConfig) -> Vec<String> {
    let mut words: Vec<String> = vec![DCN_IN_IMAGE.into(), "join".into(), BUNDLE.into()];
    if let Some(pin) = &node.join.ca_pin {
        words.extend(["--ca-pin".into(), pin.to_string()]);
    }
    words.extend(["--hostname".into(), node.hostname.to_string()]);
    if let Some(ip) = node.my_ip() {
        words.extend(["--my-ip".into(), ip.to_string()]);
    }
    words.extend(["--timeout".into(), String::from(node.join.timeout)]);
    words
}

/// `dcn bundle verify` of the installed bundle, with the node's pin.
pub fn verify_command(node: &NodeConfig) -> Vec<String> {
    let mut words: Vec<String> = vec![
        DCN_IN_IMAGE.into(),
        "bundle".into(),
        "verify".into(),
        BUNDLE.into(),
    ];
    if let Some(pin) = &node.join.ca_pin {
        words.extend(["--ca-pin".into(), pin.to_string()]);
    }
    words
}

/// The unit text: `@JOIN_COMMAND@` and `@VERIFY_COMMAND@` filled in.
pub fn render_unit(template: &str, node: &NodeConfig) -> Result<String> {
    let join = join_command(node);
    let verify = verify_command(node);
    // Every word is a path, a host name, an address, a pin or a duration:
    // nothing systemd would need quoted. Refuse anything else.
    if let Some(w) = join.iter().chain(&verify).find(|w| {
        !w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/.:-_".contains(&b))
    }) {
        bail!("internal error: {w:?} cannot go into a unit file unquoted");
    }
    let text = template
        .replace("@JOIN_COMMAND@", &join.join(" "))
        .replace("@VERIFY_COMMAND@", &verify.join(" "));
    if text.contains('@') {
        bail!("the first-boot unit template {TEMPLATE} has a placeholder dcn does not know");
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> String {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("images/edge/rootfs")
                .join(TEMPLATE.trim_start_matches('/')),
        )
        .unwrap()
    }

    #[test]
    fn unit_runs_join_with_the_node_settings() {
        let node = crate::config::parse_node(
            "apiVersion: dcn/v1alpha1\nkind: NodeConfig\nhostname: edge1-n1\ninterfaces:\n- name: ens3\n  addresses: [10.240.1.20/24]\njoin:\n  caPin: sha256:1111111111111111111111111111111111111111111111111111111111111111\n  timeout: 5m\n",
            "n",
        )
        .unwrap();
        let unit = render_unit(&template(), &node).unwrap();
        assert!(
            unit.contains("\nExecStart=/usr/local/bin/dcn join /etc/dcn/bundle.tar.gz --ca-pin sha256:1111111111111111111111111111111111111111111111111111111111111111 --hostname edge1-n1 --my-ip 10.240.1.20 --timeout 5m\n"),
            "{unit}"
        );
        assert!(unit.contains("ExecStartPre=/usr/local/bin/dcn bundle verify /etc/dcn/bundle.tar.gz --ca-pin sha256:1111"), "{unit}");
        assert!(unit.contains("Restart=on-failure"), "{unit}");
        assert!(
            unit.contains(&format!(
                "\nEnvironment={}=1\n",
                crate::edge::join::FIRSTBOOT_ENV
            )),
            "the join reports first-boot: {unit}"
        );
        assert!(unit.contains("StandardOutput=journal+console"), "{unit}");
    }

    #[test]
    fn without_pin_or_address_the_flags_are_left_out() {
        let node = crate::config::parse_node(
            "apiVersion: dcn/v1alpha1\nkind: NodeConfig\nhostname: e\n",
            "n",
        )
        .unwrap();
        assert_eq!(
            join_command(&node).join(" "),
            "/usr/local/bin/dcn join /etc/dcn/bundle.tar.gz --hostname e --timeout 10m"
        );
        assert!(render_unit("x=@NOPE@", &node).is_err());
    }
}
