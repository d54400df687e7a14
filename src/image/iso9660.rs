//! A small ISO 9660 directory reader: just enough to find where one file's
//! data lies in an image (`dcn/payload.bin`), so `dcn image embed` can
//! write into it in place. It reads the primary volume descriptor and walks
//! the directories of the path, comparing ISO 9660 names (`PAYLOAD.BIN;1`)
//! case-insensitively without the version suffix. The image is untrusted
//! input: every length and offset is checked before it is used.

use anyhow::{Context, Result, bail};
use std::io::{Read, Seek, SeekFrom};

const SECTOR: u64 = 2048;
/// Volume descriptors start at sector 16.
const FIRST_DESCRIPTOR: u64 = 16;
/// Descriptors past this many are not looked at.
const MAX_DESCRIPTORS: u64 = 64;
/// A directory larger than this is refused (real ones are a few sectors).
const MAX_DIRECTORY: u64 = 4 * 1024 * 1024;

/// Where a file's data lies in the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Byte offset from the start of the image.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
}

/// A directory record's fields this reader uses.
#[derive(Debug, Clone)]
struct Record {
    extent: Extent,
    is_dir: bool,
    multi_extent: bool,
    name: String,
}

/// Find `path` (`dir/file`, relative to the root) in the image. `Ok(None)`
/// when the image is ISO 9660 but has no such file; an error when it is not
/// ISO 9660 or is damaged.
pub fn find_file<R: Read + Seek>(image: &mut R, path: &str) -> Result<Option<Extent>> {
    let size = image
        .seek(SeekFrom::End(0))
        .context("reading the image size")?;
    let root = root_record(image, size)?;
    let mut dir = root;
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let Some(rec) = lookup(image, size, &dir, part)? else {
            return Ok(None);
        };
        if last {
            if rec.is_dir {
                return Ok(None);
            }
            if rec.multi_extent {
                bail!("{path} in the image is stored in several extents, which dcn does not write");
            }
            return Ok(Some(rec.extent));
        }
        if !rec.is_dir {
            return Ok(None);
        }
        dir = rec;
    }
    Ok(None)
}

fn read_at<R: Read + Seek>(image: &mut R, offset: u64, buf: &mut [u8]) -> Result<()> {
    image.seek(SeekFrom::Start(offset))?;
    image
        .read_exact(buf)
        .with_context(|| format!("reading {} bytes at offset {offset}", buf.len()))
}

/// The root directory's record, from the primary volume descriptor.
fn root_record<R: Read + Seek>(image: &mut R, size: u64) -> Result<Record> {
    let not_iso = || {
        anyhow::anyhow!(
            "this is not an ISO 9660 image (no volume descriptor \"CD001\" at sector 16); pass the ISO written by `dcn image build`"
        )
    };
    let mut sector = [0u8; SECTOR as usize];
    for n in FIRST_DESCRIPTOR..FIRST_DESCRIPTOR + MAX_DESCRIPTORS {
        if (n + 1) * SECTOR > size {
            return Err(not_iso());
        }
        read_at(image, n * SECTOR, &mut sector)?;
        if &sector[1..6] != b"CD001" {
            return Err(not_iso());
        }
        match sector[0] {
            1 => {
                let block = u16::from_le_bytes([sector[128], sector[129]]) as u64;
                if block != SECTOR {
                    bail!(
                        "the image has {block}-byte logical blocks; dcn reads 2048-byte ISO images only"
                    );
                }
                let rec = parse_record(&sector[156..190], size)?
                    .context("the primary volume descriptor's root directory record is damaged")?;
                return Ok(rec);
            }
            255 => break,
            _ => {}
        }
    }
    bail!("the image has no primary volume descriptor; it is damaged or not an ISO 9660 image")
}

/// Parse one directory record; `None` for a record of length 0 (padding).
fn parse_record(buf: &[u8], image_size: u64) -> Result<Option<Record>> {
    let len = *buf.first().unwrap_or(&0) as usize;
    if len == 0 {
        return Ok(None);
    }
    if len < 34 || len > buf.len() {
        bail!("a directory record in the image is damaged (length {len})");
    }
    let u32le = |o: usize| u32::from_le_bytes([buf[o], buf[o + 1], buf[o + 2], buf[o + 3]]) as u64;
    let lba = u32le(2);
    let length = u32le(10);
    let flags = buf[25];
    let name_len = buf[32] as usize;
    if 33 + name_len > len {
        bail!("a directory record in the image is damaged (name runs past the record)");
    }
    let offset = lba * SECTOR;
    if offset
        .checked_add(length)
        .is_none_or(|end| end > image_size)
    {
        bail!(
            "a directory record in the image points past its end (offset {offset}, length {length}, image {image_size} bytes): the image is truncated or damaged"
        );
    }
    let raw = &buf[33..33 + name_len];
    let name = match raw {
        [0] => ".".to_string(),
        [1] => "..".to_string(),
        _ => String::from_utf8_lossy(raw).into_owned(),
    };
    Ok(Some(Record {
        extent: Extent { offset, length },
        is_dir: flags & 0x02 != 0,
        multi_extent: flags & 0x80 != 0,
        name,
    }))
}

/// `PAYLOAD.BIN;1` → `payload.bin`; `DCN` → `dcn`; `README.` → `readme`.
fn plain_name(iso_name: &str) -> String {
    let n = iso_name.split(';').next().unwrap_or_default();
    n.strip_suffix('.').unwrap_or(n).to_ascii_lowercase()
}

fn lookup<R: Read + Seek>(
    image: &mut R,
    size: u64,
    dir: &Record,
    want: &str,
) -> Result<Option<Record>> {
    if dir.extent.length > MAX_DIRECTORY {
        bail!(
            "a directory in the image is {} bytes, more than dcn reads ({MAX_DIRECTORY}); the image is damaged",
            dir.extent.length
        );
    }
    let mut data = vec![0u8; dir.extent.length as usize];
    read_at(image, dir.extent.offset, &mut data)?;
    let want = want.to_ascii_lowercase();
    let mut pos = 0usize;
    while pos < data.len() {
        match parse_record(&data[pos..], size)? {
            // Records do not cross sectors: padding to the next one.
            None => pos = (pos / SECTOR as usize + 1) * SECTOR as usize,
            Some(rec) => {
                pos += data[pos] as usize;
                if rec.name != "." && rec.name != ".." && plain_name(&rec.name) == want {
                    return Ok(Some(rec));
                }
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn plain_names() {
        assert_eq!(plain_name("PAYLOAD.BIN;1"), "payload.bin");
        assert_eq!(plain_name("DCN"), "dcn");
        assert_eq!(plain_name("README.;1"), "readme");
    }

    #[test]
    fn refuses_what_is_not_iso9660() {
        let mut zeros = Cursor::new(vec![0u8; 64 * 1024]);
        let e = format!(
            "{:#}",
            find_file(&mut zeros, "dcn/payload.bin").unwrap_err()
        );
        assert!(e.contains("not an ISO 9660 image"), "{e}");
        let mut short = Cursor::new(vec![0u8; 100]);
        assert!(find_file(&mut short, "x").is_err());
    }

    /// Lengths and offsets from a hostile image: each is refused with a
    /// message, nothing is allocated past the image's size or the
    /// directory cap (issue 12, failure 10).
    #[test]
    fn hostile_records_are_refused() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/iso/payload-area.iso");
        let good = std::fs::read(fixture).unwrap();
        let pvd = 16 * SECTOR as usize;
        let root = pvd + 156;
        // The `dcn` directory's record in the root directory.
        let dcn = good.windows(4).position(|w| w == b"\x03DCN").unwrap() - 32;
        let run = |image: Vec<u8>| {
            format!(
                "{:#}",
                find_file(&mut Cursor::new(image), "dcn/payload.bin").unwrap_err()
            )
        };
        let set32 = |image: &mut Vec<u8>, at: usize, v: u32| {
            image[at..at + 4].copy_from_slice(&v.to_le_bytes());
            image[at + 4..at + 8].copy_from_slice(&v.to_be_bytes());
        };

        let mut past_end = good.clone();
        set32(&mut past_end, root + 10, 1 << 30);
        assert!(run(past_end).contains("points past its end"));

        let mut far = good.clone();
        set32(&mut far, dcn + 2, u32::MAX);
        assert!(run(far).contains("points past its end"));

        // A directory over the cap, in an image large enough to hold it.
        let mut huge_dir = good.clone();
        set32(&mut huge_dir, dcn + 10, (MAX_DIRECTORY + SECTOR) as u32);
        huge_dir.resize(good.len() + MAX_DIRECTORY as usize + 4096, 0);
        assert!(run(huge_dir).contains("more than dcn reads"));

        let mut short = good.clone();
        short[dcn] = 20;
        assert!(run(short).contains("is damaged (length 20)"));

        let mut name = good.clone();
        name[dcn + 32] = 250;
        assert!(run(name).contains("name runs past the record"));

        let mut blocks = good.clone();
        blocks[pvd + 128..pvd + 130].copy_from_slice(&512u16.to_le_bytes());
        assert!(run(blocks).contains("512-byte logical blocks"));

        let mut no_pvd = good.clone();
        no_pvd[pvd] = 255;
        assert!(run(no_pvd).contains("no primary volume descriptor"));
    }
}
