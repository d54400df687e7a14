//! How a host's compute services (nova-compute, ovn-controller, the
//! metadata agent) reach the control plane: the one builder of the recipes'
//! `compute.*` values, for the standalone host's own compute (loopback, the
//! control plane's users) and for an edge (TLS over the WAN, its site's
//! users). A value a recipe needs is a field here, so neither side can
//! forget or misspell it; how the messaging URL and the southbound remote
//! are spelled is known here only.

use crate::passwords::PasswordStore;
use crate::recipes::Values;
use crate::types::endpoints::TlsEndpoint;
use anyhow::Result;

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

/// A user and its password.
#[derive(Debug, Clone, Copy)]
pub struct Login<'a> {
    pub user: &'a str,
    pub password: &'a str,
}

/// Where an edge's compute services reach the control plane, as its
/// bundle's exports say, and who they are there.
#[derive(Debug, Clone)]
pub struct WanLink<'a> {
    /// The messaging export (`amqps://host:port`).
    pub messaging: &'a TlsEndpoint,
    /// The southbound export (`ssl:host:port`).
    pub southbound: &'a TlsEndpoint,
    /// The site's messaging user.
    pub messaging_login: Login<'a>,
    /// The site's service user (keystone).
    pub service_login: Login<'a>,
    /// The CA file that signs the control plane's endpoints.
    pub ca_file: &'a str,
    /// The control plane's address for the metadata API.
    pub metadata_host: &'a str,
    /// The site: its availability zone.
    pub zone: &'a str,
    pub config_drive: bool,
}

/// oslo.messaging's transport URL for a RabbitMQ user at `host_port`.
fn transport_url(login: Login, host_port: &str) -> String {
    format!("rabbit://{}:{}@{host_port}/", login.user, login.password)
}

fn flag(b: bool) -> String {
    if b { "true" } else { "false" }.to_string()
}

impl ComputeLink {
    /// The standalone host's own compute services: they are on the control
    /// plane, so loopback without TLS, the control plane's messaging user
    /// and nova's service user, in the central zone.
    pub fn on_the_control_plane(
        passwords: &PasswordStore,
        ca_file: &str,
        zone: &str,
    ) -> Result<ComputeLink> {
        let messaging = Login {
            user: "openstack",
            password: passwords.get("rabbitmq_controlplane")?.expose(),
        };
        Ok(ComputeLink {
            transport_url: transport_url(messaging, "127.0.0.1:5672"),
            rabbit_tls: false,
            ca_file: ca_file.into(),
            sb_connection: "tcp:127.0.0.1:6642".into(),
            sb_tls: false,
            service_user: "nova".into(),
            service_password: passwords.get("nova_service")?.expose().to_string(),
            interface: Interface::Internal,
            metadata_host: "127.0.0.1".into(),
            metadata_tls: false,
            zone: zone.into(),
            config_drive: false,
        })
    }

    /// An edge's compute services: the control plane's public endpoints
    /// over TLS, as the site's users.
    pub fn over_the_wan(link: &WanLink) -> ComputeLink {
        ComputeLink {
            transport_url: transport_url(link.messaging_login, &link.messaging.host_port()),
            rabbit_tls: link.messaging.scheme() == "amqps",
            ca_file: link.ca_file.into(),
            sb_connection: link.southbound.as_str().to_string(),
            sb_tls: true,
            service_user: link.service_login.user.into(),
            service_password: link.service_login.password.into(),
            interface: Interface::Public,
            metadata_host: link.metadata_host.into(),
            metadata_tls: true,
            zone: link.zone.into(),
            config_drive: link.config_drive,
        }
    }

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

    #[test]
    fn an_edge_reaches_the_control_plane_over_tls_as_its_site() {
        let messaging = "amqps://[fd00::1]".parse::<TlsEndpoint>().unwrap();
        let southbound = "ssl:10.240.0.10:6642".parse::<TlsEndpoint>().unwrap();
        let link = ComputeLink::over_the_wan(&WanLink {
            messaging: &messaging,
            southbound: &southbound,
            messaging_login: Login {
                user: "dcn-node-e1",
                password: "m",
            },
            service_login: Login {
                user: "dcn-svc-e1",
                password: "s",
            },
            ca_file: "/etc/dcn/ca.crt",
            metadata_host: "10.240.0.10",
            zone: "edge1",
            config_drive: true,
        });
        assert_eq!(link.transport_url, "rabbit://dcn-node-e1:m@[fd00::1]:5671/");
        assert!(link.rabbit_tls && link.sb_tls && link.metadata_tls);
        assert_eq!(link.sb_connection, "ssl:10.240.0.10:6642");
        assert_eq!(link.interface, Interface::Public);
        assert_eq!((link.zone.as_str(), link.config_drive), ("edge1", true));
    }
}
