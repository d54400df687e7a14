//! The edge lab's end-to-end test in named steps, each a module by
//! subject; tests/lab_edges.rs runs them in order on one lab.

pub mod joins;
pub mod leaks;
pub mod observe;
pub mod operator;
pub mod outages;
pub mod placement;
pub mod tempest;
