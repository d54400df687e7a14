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
