//! Feed arbitrary text to dcn's INI reader, the check behind every
//! customServiceConfig (in the standalone config and in bundles): it must
//! refuse (or accept) without panicking, and what it accepts must read
//! back the same after dcn writes it out.

#![no_main]

use dcn::ini::Ini;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(ini) = Ini::parse(text) {
        let again = Ini::parse(&ini.to_string()).expect("dcn reads what it writes");
        assert_eq!(again.to_string(), ini.to_string());
    }
});
