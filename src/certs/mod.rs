//! What both sides know of the certificates dcn issues: when one is due
//! ([`policy`]), the control plane's CAs ([`authority`]), putting renewed
//! certificates where services read them ([`install`]), and a certificate
//! as `dcn cert list` shows it ([`inventory`]). The control plane renews its
//! own in `crate::centre::renewal`; a node renews its own through the join
//! service (`crate::edge::join::node_cert`).

pub mod authority;
pub mod install;
pub mod inventory;
pub mod policy;
