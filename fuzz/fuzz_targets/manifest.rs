//! Feed arbitrary text to the YAML readers behind `bundle inspect`,
//! `bundle verify`, `join` and `config validate`: the bundle manifest (the
//! YAML guard, the format version, every field and its validation) and the
//! standalone config. They must refuse (or accept) without panicking and in
//! bounded time: deeply nested flow collections once cost minutes.

#![no_main]

use libfuzzer_sys::fuzz_target;

/// The catalogue, loaded once as a command loads it.
fn recipes() -> &'static dcn::recipes::Recipes {
    static R: std::sync::OnceLock<dcn::recipes::Recipes> = std::sync::OnceLock::new();
    R.get_or_init(|| dcn::recipes::Recipes::embedded().expect("the recipes load"))
}

fuzz_target!(|data: &[u8]| {
    if let Ok(manifest) = dcn::bundle::parse_manifest(recipes(), data) {
        let _ = manifest.validate(recipes());
        let _ = manifest.to_yaml();
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = dcn::config::parse_standalone(recipes(), text, "fuzz.yaml");
    }
});
