//! Tests of the join bundle: hostile containers (`archive`), wrong contents
//! (`verify`), and writing, saving, reading back and inspecting
//! (`write_read`). `support` builds good and hostile bundles.

mod archive;
mod hostile;
mod support;
mod verify;
mod write_read;
