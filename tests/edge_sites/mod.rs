//! The edge lab's end-to-end test in named steps, each a module by
//! subject; tests/lab_edges.rs runs them in this order on one lab:
//! [`placement`] (sites placed, zones, guests in their zones), the
//! certificates' renewals ([`crate::lifecycle`]) and day 2 config
//! ([`crate::day2`]), [`outages`] (a WAN cut, a power cycle during a cut, a
//! stalled ovn-controller), [`joins`] (refused joins, a second node, least
//! privilege, removal), the control plane's power cycle, the lifecycle
//! drills, [`leaks`] and [`tempest`]. What the steps watch is in
//! [`observe`]; what an operator does by hand, in [`operator`].

pub mod joins;
pub mod leaks;
pub mod observe;
pub mod operator;
pub mod outages;
pub mod placement;
pub mod tempest;
