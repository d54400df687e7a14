//! Feed arbitrary bytes to the join service's router as a request's method
//! and target (`METHOD SP TARGET`), the target parsed as hyper parses it
//! (origin or absolute form). Whatever arrives, the router answers with a
//! route and never panics; a route that names a node names a valid one,
//! taken from the path it was given. (A path whose prefix and suffix
//! overlap, `/v1/nodes/config`, once made the router slice out of range
//! and kill the join service.)

#![no_main]

use dcn::centre::serve::routes::Route;
use dcn::types::NodeName;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (method, target) = match data.iter().position(|&b| b == b' ') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"/"[..]),
    };
    let Ok(method) = std::str::from_utf8(method) else {
        return;
    };
    let Ok(uri) = http::Uri::try_from(target) else {
        return;
    };
    let path = uri.path();
    match Route::resolve(method, path) {
        Route::NodeStatus(h) | Route::FetchConfig(h) | Route::ReportConfig(h) => {
            assert!(NodeName::is_valid(h.as_str()));
            assert!(path.contains(h.as_str()));
        }
        Route::NotAHostName(name) => assert!(path.contains(&name)),
        _ => {}
    }
});
