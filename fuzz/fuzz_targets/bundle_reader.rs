//! Feed arbitrary bytes to the bundle reader: it must refuse (or accept)
//! without panicking, hanging or allocating without bound.
//!
//! Each input is tried twice: as the `.tar.gz` itself, and gzip-compressed
//! first. Random mutations of a gzip stream almost never get past its CRC,
//! so the second form is what lets the fuzzer explore the tar walk and the
//! manifest parser behind it.

#![no_main]

use dcn::bundle::{ReadOptions, read_bundle};
use flate2::Compression;
use flate2::write::GzEncoder;
use libfuzzer_sys::fuzz_target;
use std::io::Write;
use std::time::{Duration, SystemTime};

/// The catalogue, loaded once as a command loads it.
fn recipes() -> &'static dcn::recipes::Recipes {
    static R: std::sync::OnceLock<dcn::recipes::Recipes> = std::sync::OnceLock::new();
    R.get_or_init(|| dcn::recipes::Recipes::embedded().expect("the recipes load"))
}

fuzz_target!(|data: &[u8]| {
    let opts = ReadOptions {
        // 2026-09-21T14:13:20Z plus a minute, so the seed corpus's sample
        // bundles are not expired.
        now: SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_060),
        ca_pin: None,
        check_expiry: true,
    };
    let _ = read_bundle(recipes(), data, &opts);

    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(data).expect("writing to a Vec");
    let _ = read_bundle(
        recipes(),
        gz.finish().expect("writing to a Vec").as_slice(),
        &opts,
    );
});
