//! Feed arbitrary bytes to the edge ISO readers: the ISO 9660 directory
//! walk that finds the payload area, and the payload decoder that reads the
//! framed bundle and node config from it. Both must refuse (or accept)
//! without panicking and without allocating more than the input justifies.

#![no_main]

use dcn::image::{PAYLOAD_PATH, iso9660, payload};
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;

fuzz_target!(|data: &[u8]| {
    // As a whole image: find the payload file, then read what it holds.
    let mut image = Cursor::new(data);
    if let Ok(Some(extent)) = iso9660::find_file(&mut image, PAYLOAD_PATH) {
        let start = extent.offset.min(data.len() as u64) as usize;
        let mut area = Cursor::new(&data[start..]);
        let _ = payload::read(&mut area, extent.length);
    }
    // As a payload area by itself (claimed size: the input's, then huge).
    let _ = payload::decode(data);
    let _ = payload::read(&mut Cursor::new(data), data.len() as u64);
    let _ = payload::read(&mut Cursor::new(data), u64::MAX);
});
