use super::*;

fn mode_of(p: &Path) -> u32 {
    fs::metadata(p).unwrap().mode() & 0o7777
}

#[test]
fn writes_under_the_root_with_mode_and_reports_changes() {
    let dir = tempfile::tempdir().unwrap();
    let f = Files::new(dir.path(), false);
    let spec = FileSpec::secret();
    assert_eq!(
        f.write("/etc/dcn/a.conf", b"x=1\n", &spec).unwrap(),
        Change::Created
    );
    let hp = dir.path().join("etc/dcn/a.conf");
    assert_eq!(fs::read(&hp).unwrap(), b"x=1\n");
    assert_eq!(mode_of(&hp), 0o600);
    assert_eq!(
        f.write("/etc/dcn/a.conf", b"x=1\n", &spec).unwrap(),
        Change::Unchanged
    );
    assert_eq!(
        f.write("/etc/dcn/a.conf", b"x=2\n", &spec).unwrap(),
        Change::Updated
    );
    // A mode change alone is a change.
    assert_eq!(
        f.write("/etc/dcn/a.conf", b"x=2\n", &FileSpec::public())
            .unwrap(),
        Change::Updated
    );
    assert_eq!(mode_of(&hp), 0o644);
    // No temporary files left behind.
    assert_eq!(fs::read_dir(dir.path().join("etc/dcn")).unwrap().count(), 1);
}

#[test]
fn dry_run_writes_nothing_and_diffs() {
    let dir = tempfile::tempdir().unwrap();
    Files::new(dir.path(), false)
        .write("/a.conf", b"one\ntwo\n", &FileSpec::public())
        .unwrap();
    let f = Files::new(dir.path(), true);
    f.write("/a.conf", b"one\nthree\n", &FileSpec::public())
        .unwrap();
    f.write("/b.key", b"topsecret", &FileSpec::secret())
        .unwrap();
    f.ensure_dir("/var/lib/dcn", &FileSpec::private_dir())
        .unwrap();
    assert_eq!(fs::read(dir.path().join("a.conf")).unwrap(), b"one\ntwo\n");
    assert!(!dir.path().join("b.key").exists());
    assert!(!dir.path().join("var").exists());
    let plan = f.planned();
    assert_eq!(plan.len(), 3);
    assert!(
        plan[0].diff.contains("-two") && plan[0].diff.contains("+three"),
        "{}",
        plan[0].diff
    );
    assert!(!plan[1].diff.contains("topsecret"));
}

#[test]
fn ensure_dir_sets_mode() {
    let dir = tempfile::tempdir().unwrap();
    let f = Files::new(dir.path(), false);
    assert_eq!(
        f.ensure_dir("/var/lib/dcn", &FileSpec::private_dir())
            .unwrap(),
        Change::Created
    );
    assert_eq!(mode_of(&dir.path().join("var/lib/dcn")), 0o700);
    assert_eq!(
        f.ensure_dir("/var/lib/dcn", &FileSpec::private_dir())
            .unwrap(),
        Change::Unchanged
    );
}

#[test]
fn rejects_relative_and_parent_paths() {
    let f = Files::new("/tmp/x", false);
    assert!(f.host_path("etc/x").is_err());
    assert!(f.host_path("/etc/../x").is_err());
}

#[test]
fn remove_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let f = Files::new(dir.path(), false);
    f.write("/x", b"1", &FileSpec::public()).unwrap();
    assert_eq!(f.remove("/x").unwrap(), Change::Removed);
    assert_eq!(f.remove("/x").unwrap(), Change::Unchanged);
}

/// A FIFO, a link to /dev/zero, a socket or a directory where a file of
/// the system is read or written is refused with its path: never waited
/// on, never read without end, never replaced.
#[test]
fn special_files_are_refused_by_read_and_write() {
    use crate::host::read::testing::{Special, bounded};
    bounded(std::time::Duration::from_secs(60), || {
        for special in Special::ALL {
            let dir = tempfile::tempdir().unwrap();
            let f = Files::new(dir.path(), false);
            let hp = dir.path().join("x.conf");
            let why = format!("{} {}", hp.display(), special.make(&hp, read::MAX_STATE));
            let e = format!("{:#}", f.read("/x.conf").unwrap_err());
            assert!(e.contains(&why), "{e}");
            let e = format!("{:#}", f.read_string("/x.conf").unwrap_err());
            assert!(e.contains(&why), "{e}");
            if let Special::Oversize = special {
                // Larger than anything dcn writes here: different, replaced.
                assert_eq!(
                    f.write("/x.conf", b"new", &FileSpec::public()).unwrap(),
                    Change::Updated
                );
                assert_eq!(fs::read(&hp).unwrap(), b"new");
                continue;
            }
            let kind = |p: &Path| fs::symlink_metadata(p).unwrap().file_type();
            let before = kind(&hp);
            let e = format!(
                "{:#}",
                f.write("/x.conf", b"new", &FileSpec::public()).unwrap_err()
            );
            assert!(e.contains(&why), "{e}");
            assert!(
                !f.matches("/x.conf", b"new", &FileSpec::public())
                    .is_ok_and(|m| m)
            );
            assert_eq!(kind(&hp), before, "{special:?} was replaced");
        }
    });
}

/// A file larger than dcn's state limit (the dcn binary of a debug build)
/// is still compared with what would be written, byte for byte.
#[test]
fn large_files_are_compared_up_to_what_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let f = Files::new(dir.path(), false);
    let big = vec![7u8; read::MAX_STATE as usize + 10];
    let spec = FileSpec::public().mode(0o755);
    assert_eq!(
        f.write("/usr/local/bin/dcn", &big, &spec).unwrap(),
        Change::Created
    );
    assert!(f.matches("/usr/local/bin/dcn", &big, &spec).unwrap());
    assert_eq!(
        f.write("/usr/local/bin/dcn", &big, &spec).unwrap(),
        Change::Unchanged
    );
    let mut other = big.clone();
    other[5] = 8;
    assert!(!f.matches("/usr/local/bin/dcn", &other, &spec).unwrap());
    assert!(!f.matches("/usr/local/bin/dcn", &big[1..], &spec).unwrap());
    assert_eq!(
        f.write("/usr/local/bin/dcn", b"small", &spec).unwrap(),
        Change::Updated
    );
}

/// dcn's own secrets are refused when others may read them or when they
/// belong to another user.
#[test]
fn own_secrets_are_private_and_roots() {
    let dir = tempfile::tempdir().unwrap();
    let f = Files::new(dir.path(), false);
    assert_eq!(f.read_secret("/s.key").unwrap(), None);
    f.write("/s.key", b"k", &FileSpec::secret()).unwrap();
    assert_eq!(f.read_secret("/s.key").unwrap().as_deref(), Some("k"));
    let hp = dir.path().join("s.key");
    fs::set_permissions(&hp, fs::Permissions::from_mode(0o644)).unwrap();
    let e = format!("{:#}", f.read_secret("/s.key").unwrap_err());
    assert!(
        e.contains(&format!(
            "mode 644 lets other users at it: `chmod 600 {}`",
            hp.display()
        )),
        "{e}"
    );
    assert_eq!(f.read_string("/s.key").unwrap().as_deref(), Some("k"));
}

#[test]
fn trees_list_move_copy_and_link_under_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let f = Files::new(dir.path(), false);
    assert!(f.list("/srv/none").unwrap().is_empty());
    assert_eq!(f.size("/srv/none").unwrap(), None);
    f.create_dir_all("/srv/b/c").unwrap();
    f.write("/srv/b/z", b"12345", &FileSpec::public()).unwrap();
    assert_eq!(f.list("/srv/b").unwrap(), ["c", "z"]);
    assert_eq!(f.size("/srv/b/z").unwrap(), Some(5));
    assert!(f.is_dir("/srv/b/c").unwrap());

    f.copy("/srv/b/z", "/srv/copy/z", &FileSpec::secret())
        .unwrap();
    let copied = dir.path().join("srv/copy/z");
    assert_eq!(fs::read(&copied).unwrap(), b"12345");
    assert_eq!(mode_of(&copied), 0o600);

    f.rename("/srv/b", "/srv/done").unwrap();
    assert!(!f.exists("/srv/b").unwrap());
    assert_eq!(f.list("/srv/done").unwrap(), ["c", "z"]);

    f.symlink("done/z", "/srv/link").unwrap();
    f.symlink("done/c", "/srv/link").unwrap();
    assert!(f.is_symlink("/srv/link").unwrap());
    assert_eq!(
        f.read_link("/srv/link").unwrap(),
        Some(PathBuf::from("done/c"))
    );
    // Nothing escapes the root.
    assert!(f.list("/srv/../etc").is_err());
}

#[test]
fn dry_run_moves_and_copies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    Files::new(dir.path(), false)
        .write("/a", b"x", &FileSpec::public())
        .unwrap();
    let f = Files::new(dir.path(), true);
    f.copy("/a", "/b", &FileSpec::public()).unwrap();
    f.rename("/a", "/c").unwrap();
    f.create_dir_all("/d").unwrap();
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["a"]);
    assert_eq!(f.planned().len(), 3);
}

#[test]
fn empty_directories_go_and_full_ones_stay() {
    let dir = tempfile::tempdir().unwrap();
    let f = Files::new(dir.path(), false);
    assert_eq!(f.remove_dir("/mnt/none").unwrap(), Change::Unchanged);
    f.create_dir_all("/mnt/empty").unwrap();
    assert_eq!(f.remove_dir("/mnt/empty").unwrap(), Change::Removed);
    assert!(!f.exists("/mnt/empty").unwrap());
    f.write("/mnt/full/a", b"x", &FileSpec::public()).unwrap();
    assert!(f.remove_dir("/mnt/full").is_err());
    assert!(f.exists("/mnt/full/a").unwrap());
}

#[test]
fn canonical_paths_resolve_links_and_stay_under_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let f = Files::new(dir.path(), false);
    f.write("/srv/a/b", b"x", &FileSpec::public()).unwrap();
    f.symlink("a", "/srv/l").unwrap();
    assert_eq!(
        f.canonicalize("/srv/l/b").unwrap(),
        PathBuf::from("/srv/a/b")
    );
    assert!(f.canonicalize("/srv/none").is_err());
    let outside = tempfile::tempdir().unwrap();
    f.symlink(outside.path(), "/srv/out").unwrap();
    assert!(f.canonicalize("/srv/out").is_err());
}

#[test]
fn mode_is_the_permission_bits_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let f = Files::new(dir.path(), false);
    assert_eq!(f.mode("/none").unwrap(), None);
    f.write("/run.sh", b"#!/bin/sh\n", &FileSpec::public().mode(0o750))
        .unwrap();
    assert_eq!(f.mode("/run.sh").unwrap(), Some(0o750));
}
