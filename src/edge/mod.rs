//! The edge's side: what runs on an edge host. The ISO's installer puts the
//! OS on its disk and hands over to the join at first boot ([`install`]);
//! the join attaches the host to a control plane with a bundle and keeps it
//! in step afterwards: config sync, progress reports and its node
//! certificate ([`join`]). It speaks to the
//! centre only through `crate::wire`; nothing here uses `crate::centre`.

pub mod install;
pub mod join;
pub mod upgrade;
