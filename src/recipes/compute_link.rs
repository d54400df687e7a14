//! How a host's compute services reach the control plane: the one builder
//! of the recipes' `compute.*` values, used for the standalone host's own
//! compute (loopback, the control plane's users) and for an edge (TLS, its
//! site's users). A value a recipe needs is a field here, so neither side
//! can forget or misspell it.

use super::Values;

/// Which of keystone's endpoint interfaces the services use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interface {
    /// The standalone host's own services: loopback.
    Internal,
    /// Edges: the TLS endpoints of the control plane's API proxy.
    Public,
}

/// Everything `compute.*` holds, with `password.compute_service`.
#[derive(Debug, Clone)]
pub struct ComputeLink {
    /// RabbitMQ URL with its user's password (also in `password.*`, so a
    /// rendered file holding it is treated as secret).
    pub transport_url: String,
    pub rabbit_tls: bool,
    /// The CA file services trust.
    pub ca_file: String,
    pub sb_connection: String,
    pub sb_tls: bool,
    pub service_user: String,
    pub service_password: String,
    pub interface: Interface,
    pub metadata_host: String,
    pub metadata_tls: bool,
    /// The availability zone the host's compute service is in.
    pub zone: String,
    /// Every instance gets a config drive.
    pub config_drive: bool,
}

fn flag(b: bool) -> String {
    if b { "true" } else { "false" }.to_string()
}

impl ComputeLink {
    /// Set the `compute.*` values and `password.compute_service`.
    pub fn apply_to(self, v: &mut Values) {
        let interface = match self.interface {
            Interface::Internal => "internal",
            Interface::Public => "public",
        };
        let metadata_protocol = if self.metadata_tls { "https" } else { "http" };
        v.compute = [
            ("transportUrl", self.transport_url),
            ("rabbitSsl", flag(self.rabbit_tls)),
            ("caFile", self.ca_file),
            ("sbConnection", self.sb_connection),
            ("sbSsl", flag(self.sb_tls)),
            ("serviceUser", self.service_user),
            ("interface", interface.to_string()),
            ("metadataHost", self.metadata_host),
            ("metadataProtocol", metadata_protocol.to_string()),
            ("zone", self.zone),
            ("configDrive", flag(self.config_drive)),
        ]
        .into_iter()
        .map(|(k, val)| (k.to_string(), val))
        .collect();
        v.password
            .insert("compute_service".into(), self.service_password);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compute_value_is_set_from_its_field() {
        let mut v = Values::default();
        ComputeLink {
            transport_url: "rabbit://u:p@h:5671/".into(),
            rabbit_tls: true,
            ca_file: "/etc/dcn/ca.crt".into(),
            sb_connection: "ssl:10.0.0.1:6642".into(),
            sb_tls: true,
            service_user: "site-edge1".into(),
            service_password: "pw".into(),
            interface: Interface::Public,
            metadata_host: "cp".into(),
            metadata_tls: true,
            zone: "edge1".into(),
            config_drive: false,
        }
        .apply_to(&mut v);
        assert_eq!(v.compute.len(), 11);
        assert_eq!(v.compute["interface"], "public");
        assert_eq!(v.compute["metadataProtocol"], "https");
        assert_eq!(v.compute["configDrive"], "false");
        assert_eq!(v.password["compute_service"], "pw");
    }
}
