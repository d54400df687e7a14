//! The control plane's own certificates over their life: its TLS leaves
//! ([`leaves`]), renewing them before they are due and reloading their users
//! ([`renew`]), and moving the whole cloud to a new CA ([`rotation`]).

pub mod leaves;
pub mod renew;
pub mod rotation;
