//! Feed arbitrary text to the YAML readers behind `bundle inspect`,
//! `bundle verify`, `join` and `config validate`: the bundle manifest (the
//! YAML guard, the format version, every field and its validation) and the
//! standalone config. They must refuse (or accept) without panicking and in
//! bounded time: deeply nested flow collections once cost minutes.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(manifest) = dcn::bundle::parse_manifest(data) {
        let _ = manifest.validate();
        let _ = manifest.to_yaml();
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = dcn::config::parse_standalone(text, "fuzz.yaml");
    }
});
