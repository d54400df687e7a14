//! Feed arbitrary bytes to what dcn reads from a BMC: every Redfish
//! resource type it deserialises, after the cleaning every answer gets
//! (terminal escapes and the password removed), and the error body parser.
//! All must refuse (or accept) without panicking, and nothing cleaned may
//! still hold the password.

#![no_main]

use dcn::bmc::error::RedfishError;
use dcn::bmc::model::{ActionInfo, Collection, ComputerSystem, Manager, ServiceRoot, VirtualMedia};
use dcn::bmc::untrusted::{Redactor, terminal_safe};
use dcn::secrets::Secret;
use libfuzzer_sys::fuzz_target;

const PASSWORD: &str = "fuzz-bmc-password";

fn read<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Option<T> {
    serde_json::from_value(v.clone()).ok()
}

fuzz_target!(|data: &[u8]| {
    let redactor = Redactor::new("admin", &Secret::new(PASSWORD));
    let text = String::from_utf8_lossy(data);
    let error =
        RedfishError::from_body("GET", "/redfish/v1/Systems/1", 400, &text).cleaned(&redactor);
    assert!(!error.to_string().contains(PASSWORD));
    let _ = terminal_safe(&text);
    let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    redactor.clean_value(&mut v);
    assert!(!v.to_string().contains(PASSWORD));
    let _ = read::<ServiceRoot>(&v);
    let _ = read::<Collection>(&v);
    let _ = read::<ComputerSystem>(&v);
    let _ = read::<Manager>(&v);
    let _ = read::<ActionInfo>(&v);
    if let Some(media) = read::<VirtualMedia>(&v) {
        let _ = (
            media.takes_cd(),
            media.inserted_image(),
            media.is_inserted(),
        );
    }
});
