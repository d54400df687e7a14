//! Hostile containers: every kind of archive entry and damage that must be
//! refused before the manifest is even looked at.

use super::super::archive::inflate_into;
use super::super::limits::*;
use super::support::*;
use std::io;
use std::time::{Duration, Instant};
use tar::EntryType;

/// The good members, for building archives around one bad entry.
fn good() -> Vec<(String, Vec<u8>)> {
    members(&bundle())
}

#[test]
fn absolute_paths_are_refused() {
    let err = refusal(&raw_bundle(&[file("/etc/passwd", b"x")]));
    assert_contains(
        &err,
        &["absolute path \"/etc/passwd\"", "dcn bundle export --site"],
    );
}

#[test]
fn parent_directory_components_are_refused() {
    for name in ["../x", "a/../../x", ".."] {
        let err = refusal(&raw_bundle(&[file(name, b"x")]));
        assert_contains(&err, &["`..` component", &format!("{name:?}")]);
    }
}

#[test]
fn links_devices_fifos_and_directories_are_refused() {
    let cases = [
        (
            special("ca.crt", EntryType::Symlink, "/etc/shadow"),
            "a symbolic link to \"/etc/shadow\"",
        ),
        (
            special("token", EntryType::Link, "manifest.yaml"),
            "a hard link to \"manifest.yaml\"",
        ),
        (special("token", EntryType::Char, ""), "a character device"),
        (special("token", EntryType::Block, ""), "a block device"),
        (special("token", EntryType::Fifo, ""), "a FIFO"),
        (
            special("manifest.yaml", EntryType::Directory, ""),
            "a directory",
        ),
        (
            special("token", EntryType::XHeader, ""),
            "a PAX extended header",
        ),
        (
            special("././@LongLink", EntryType::GNULongName, ""),
            "a GNU long-name header",
        ),
        (
            special("token", EntryType::new(b'Z'), ""),
            "an entry of unknown type 'Z'",
        ),
    ];
    for (entry, kind) in cases {
        let name = String::from_utf8_lossy(entry.name).into_owned();
        let err = refusal(&raw_bundle(&[entry]));
        assert_contains(
            &err,
            &[&format!("member {name:?} is {kind}"), "not a regular file"],
        );
    }
}

#[test]
fn duplicate_members_are_refused() {
    let g = good();
    let err = refusal(&raw_bundle(&[
        file("token", &g[2].1),
        file("token", &g[2].1),
    ]));
    assert_contains(&err, &["holds token twice", "ambiguous"]);
}

#[test]
fn unknown_members_are_named() {
    let g = good();
    let mut entries: Vec<_> = g.iter().map(|(n, d)| file(n, d)).collect();
    entries.push(file("ca.key", b"-----BEGIN PRIVATE KEY-----"));
    let err = refusal(&raw_bundle(&entries));
    assert_contains(
        &err,
        &[
            "unknown member \"ca.key\"",
            "only manifest.yaml, ca.crt, token and manifest.sig",
        ],
    );
    // Names are matched exactly: no normalisation of ./ or trailing slashes.
    let err = refusal(&raw_bundle(&[file("./manifest.yaml", &g[0].1)]));
    assert_contains(&err, &["unknown member \"./manifest.yaml\""]);
}

#[test]
fn oversize_members_are_refused() {
    let big = vec![b'a'; MAX_MEMBER_SIZE as usize + 1];
    let err = refusal(&raw_bundle(&[file("manifest.yaml", &big)]));
    assert_contains(
        &err,
        &["manifest.yaml is 262145 bytes, more than the limit of 262144"],
    );
}

#[test]
fn missing_members_are_named() {
    let g = good();
    let err = refusal(&raw_bundle(&[
        file("ca.crt", &g[1].1),
        file("token", &g[2].1),
    ]));
    assert_contains(
        &err,
        &["has no manifest.yaml, no manifest.sig", "incomplete"],
    );
    let err = refusal(&raw_bundle(&[]));
    assert_contains(
        &err,
        &["has no manifest.yaml, no ca.crt, no token, no manifest.sig"],
    );
}

/// 100 MB of zeros gzips to about 100 KB, under the compressed cap; it must
/// be refused after decompressing one byte past the archive cap.
#[test]
fn a_gzip_bomb_is_refused_quickly_with_bounded_memory() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..100 {
        io::Write::write_all(&mut gz, &zeros).unwrap();
    }
    let bomb = gz.finish().unwrap();
    assert!((bomb.len() as u64) < MAX_COMPRESSED_SIZE, "{}", bomb.len());

    let start = Instant::now();
    let err = refusal(&bomb);
    assert_contains(
        &err,
        &[
            "decompresses to more than 1048576 bytes",
            "decompression bomb",
        ],
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );

    // The only buffer the decompressed stream goes into stops at cap + 1.
    let mut out = Vec::new();
    assert!(inflate_into(&bomb, MAX_ARCHIVE_SIZE, &mut out).is_err());
    assert_eq!(out.len() as u64, MAX_ARCHIVE_SIZE + 1);
    assert!(
        (out.capacity() as u64) <= 2 * (MAX_ARCHIVE_SIZE + 1),
        "{}",
        out.capacity()
    );
}

#[test]
fn oversize_input_is_refused_after_reading_one_byte_past_the_cap() {
    use std::io::Read;
    let just_over = io::repeat(0x1f).take(MAX_COMPRESSED_SIZE + 1);
    let err =
        crate::bundle::read_bundle(crate::recipes::for_tests(), just_over, &opts()).unwrap_err();
    assert_contains(
        &err.to_string(),
        &["larger than 1048576 bytes", "a few kilobytes"],
    );
    // An endless stream: the reader must stop on its own.
    let err = crate::bundle::read_bundle(crate::recipes::for_tests(), io::repeat(0x1f), &opts())
        .unwrap_err();
    assert!(
        matches!(err, crate::bundle::BundleError::TooLarge { .. }),
        "{err}"
    );
}

#[test]
fn truncated_gzip_is_refused_at_every_cut() {
    let b = bundle();
    for cut in [
        0,
        1,
        5,
        10,
        20,
        b.len() / 3,
        b.len() / 2,
        b.len() - 8,
        b.len() - 4,
        b.len() - 1,
    ] {
        let err = refusal(&b[..cut]);
        assert!(
            err.contains("truncated") || err.contains("damaged"),
            "cut at {cut} of {}: {err}",
            b.len()
        );
    }
    // Losing the trailer (CRC and length) is noticed even though every
    // byte of the tar stream decompresses.
    assert_contains(&refusal(&b[..b.len() - 8]), &["truncated", "copy it again"]);
}

#[test]
fn corrupt_bytes_are_refused() {
    let b = bundle();
    for pos in [3, 12, b.len() / 2, b.len() - 6] {
        let mut bad = b.clone();
        bad[pos] ^= 0x55;
        let err = refusal(&bad);
        assert!(!err.is_empty(), "{err}");
        assert!(
            ["damaged", "truncated", "signature", "digest"]
                .iter()
                .any(|w| err.contains(w)),
            "flip at {pos}: {err}"
        );
    }
    assert_contains(
        &refusal(b"hello, world"),
        &["does not start with the gzip signature"],
    );
    let tar = gunzip(&b);
    assert_contains(&refusal(&tar), &["uncompressed tar archive"]);
    // A CRC mismatch: change the stored CRC of an intact stream.
    let mut bad = b.clone();
    let n = bad.len();
    bad[n - 8] ^= 0xff;
    assert_contains(&refusal(&bad), &["gzip stream is corrupt"]);
}

#[test]
fn data_after_the_gzip_stream_is_refused() {
    let mut b = bundle();
    b.extend_from_slice(&gzip(b"more"));
    assert_contains(&refusal(&b), &["follow the end of the gzip stream"]);
}

#[test]
fn a_tar_without_its_end_marker_is_refused() {
    let tar = gunzip(&bundle());
    let end = tar.len() - 1024;
    assert!(tar[end..].iter().all(|b| *b == 0));
    assert_contains(
        &refusal(&gzip(&tar[..end])),
        &["truncated", "no end-of-archive marker"],
    );
    assert_contains(&refusal(&gzip(&tar[..end - 100])), &["truncated"]);
    assert_contains(
        &refusal(&gzip(&tar[..700])),
        &["truncated", "ends inside manifest.yaml"],
    );
    assert_contains(
        &refusal(&gzip(&tar[..300])),
        &["truncated", "inside a header"],
    );
}

#[test]
fn data_after_the_tar_end_marker_is_refused() {
    let mut tar = gunzip(&bundle());
    tar.extend_from_slice(&[b'x'; 512]);
    assert_contains(
        &refusal(&gzip(&tar)),
        &["data follows the tar end-of-archive marker"],
    );
}

#[test]
fn a_bad_header_checksum_is_refused() {
    let mut tar = gunzip(&bundle());
    tar[0] ^= 1;
    assert_contains(
        &refusal(&gzip(&tar)),
        &["tar archive is corrupt", "checksum"],
    );
}
