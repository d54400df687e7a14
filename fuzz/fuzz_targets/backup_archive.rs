//! Feed arbitrary bytes to the backup archive reader (what `dcn backup
//! verify` and `dcn restore` run first): it must refuse (or accept) without
//! panicking, hanging or allocating without bound. Nothing is extracted.
//!
//! Each input is tried as the archive itself and gzip-compressed first, so
//! that mutations get past the gzip CRC to the tar walk, the member checks
//! and the manifest parser.

#![no_main]

use flate2::Compression;
use flate2::write::GzEncoder;
use libfuzzer_sys::fuzz_target;
use std::io::Write;

/// The catalogue, loaded once as a command loads it.
fn recipes() -> &'static dcn::recipes::Recipes {
    static R: std::sync::OnceLock<dcn::recipes::Recipes> = std::sync::OnceLock::new();
    R.get_or_init(|| dcn::recipes::Recipes::embedded().expect("the recipes load"))
}

fuzz_target!(|data: &[u8]| {
    let _ = dcn::centre::backup::archive::read_stream(recipes(), data, None, None);
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(data).expect("writing to a Vec");
    let compressed = gz.finish().expect("writing to a Vec");
    let _ = dcn::centre::backup::archive::read_stream(recipes(), compressed.as_slice(), None, None);
});
