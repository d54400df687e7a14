//! Who the control plane is and what its recipes are rendered with: its
//! name, address and certificate names ([`identity`]), its `cp.*` values
//! ([`values`]), and where its services' certificates come from
//! ([`pki_certs`]). The installer, the join service, bundles and renewal
//! all read it; none of them is below it.

pub mod identity;
pub mod pki_certs;
pub mod values;
