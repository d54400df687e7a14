use super::testing::{bounded, special_files};
use super::*;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

fn set_mode(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn special_files_are_refused_with_their_path_before_a_byte_is_read() {
    bounded(Duration::from_secs(20), || {
        let dir = tempfile::tempdir().unwrap();
        for (path, why) in special_files(dir.path(), 100) {
            for spec in [
                ReadSpec::up_to(100),
                ReadSpec::up_to(100).private(),
                ReadSpec::up_to(100).own_secret(),
                ReadSpec::up_to(100).or_block_device(),
            ] {
                let e = read(&path, &spec).unwrap_err().to_string();
                assert!(e.contains(&why), "{e}");
                let e = open(&path, &spec).unwrap_err().to_string();
                assert!(e.contains(&why), "{e}");
            }
        }
    });
}

#[test]
fn a_regular_file_is_read_directly_or_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.yaml");
    std::fs::write(&file, "a: 1\n").unwrap();
    let link = dir.path().join("link.yaml");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    for p in [&file, &link] {
        assert_eq!(read_string(p, &ReadSpec::up_to(5)).unwrap(), "a: 1\n");
        let e = read(p, &ReadSpec::up_to(4)).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "{} is 5 bytes, more than the 4 bytes dcn reads",
                p.display()
            )),
            "{e}"
        );
    }
    // An opened file reads in blocking mode, from its start.
    let mut f = open(&file, &ReadSpec::up_to(5)).unwrap();
    let flags = OFlag::from_bits_truncate(fcntl(&f, FcntlArg::F_GETFL).unwrap());
    assert!(!flags.contains(OFlag::O_NONBLOCK));
    let mut s = String::new();
    f.read_to_string(&mut s).unwrap();
    assert_eq!(s, "a: 1\n");

    let missing = dir.path().join("missing");
    let e = read(&missing, &ReadSpec::up_to(5)).unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert_eq!(
        e.to_string(),
        format!("{} does not exist", missing.display())
    );
    std::fs::write(&file, [0xff, 0xfe]).unwrap();
    let e = read_string(&file, &ReadSpec::up_to(5)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{} is not UTF-8 text", file.display())
    );
}

#[test]
fn a_file_longer_than_its_size_says_is_cut_at_the_limit() {
    // /proc files say they are empty, and are not.
    let e = read(Path::new("/proc/self/maps"), &ReadSpec::up_to(10)).unwrap_err();
    assert!(
        e.to_string()
            .contains("/proc/self/maps is larger, more than the 10 bytes"),
        "{e}"
    );
}

#[test]
fn a_secret_is_private_and_dcns_own_belongs_to_root() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("credentials.yaml");
    std::fs::write(&file, "s3cret\n").unwrap();
    let private = ReadSpec::up_to(100).private();
    let own = ReadSpec::up_to(100).own_secret();
    for mode in [0o640, 0o604, 0o620, 0o601] {
        set_mode(&file, mode);
        assert_eq!(read(&file, &ReadSpec::up_to(100)).unwrap(), b"s3cret\n");
        for spec in [private, own] {
            let e = read(&file, &spec).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "{p} holds a secret, but its mode {mode:03o} lets other users at it: `chmod 600 {p}` and run again",
                    p = file.display()
                )
            );
        }
    }
    set_mode(&file, 0o600);
    assert_eq!(read(&file, &own).unwrap(), b"s3cret\n");
    assert_eq!(read(&file, &private).unwrap(), b"s3cret\n");
    if nix::unistd::geteuid().is_root() {
        let other = Some(nix::unistd::Uid::from_raw(4242));
        nix::unistd::chown(&file, other, None).unwrap();
        assert_eq!(read(&file, &private).unwrap(), b"s3cret\n");
        let e = read(&file, &own).unwrap_err().to_string();
        assert!(
            e.contains("belongs to uid 4242")
                && e.contains(&format!("`chown root:root {}`", file.display())),
            "{e}"
        );
    }
}
