use super::*;
use clap::Parser;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("dcn").chain(args.iter().copied()))
}

#[test]
fn definition_is_consistent() {
    command().debug_assert();
}

#[test]
fn parses_each_subcommand() {
    assert!(matches!(
        parse(&["config", "defaults"]).unwrap().command,
        Command::Config(ConfigCommand::Defaults)
    ));
    assert!(matches!(
        parse(&["config", "validate", "a.yaml"]).unwrap().command,
        Command::Config(ConfigCommand::Validate { .. })
    ));
    let c = parse(&[
        "preflight",
        "edge",
        "--output",
        "json",
        "--ignore-preflight-errors=memory,ports",
    ])
    .unwrap();
    let Command::Preflight(p) = c.command else {
        panic!()
    };
    assert_eq!(p.role, HostRole::Edge);
    assert_eq!(p.output, OutputFormat::Json);
    assert_eq!(p.ignore_preflight_errors, vec!["memory", "ports"]);
    let c = parse(&["bundle", "verify", "b.tar.gz", "--ca-pin", "sha256:00"]).unwrap();
    assert!(matches!(
        c.command,
        Command::Bundle(BundleCommand::Verify {
            ca_pin: Some(_),
            ..
        })
    ));
    assert!(matches!(
        parse(&["bundle", "inspect", "b.tar.gz", "--output", "json"])
            .unwrap()
            .command,
        Command::Bundle(BundleCommand::Inspect {
            output: OutputFormat::Json,
            ..
        })
    ));
    let c = parse(&[
        "standalone",
        "init",
        "--phase",
        "secrets",
        "--root",
        "/tmp/x",
        "--dry-run",
    ])
    .unwrap();
    let Command::Standalone(StandaloneCommand::Init(i)) = c.command else {
        panic!()
    };
    assert!(i.dry_run);
    assert_eq!(i.root, std::path::PathBuf::from("/tmp/x"));
    assert!(matches!(
        parse(&["completions", "bash"]).unwrap().command,
        Command::Completions(_)
    ));
}

#[test]
fn global_flags() {
    assert_eq!(
        parse(&["-vv", "config", "defaults"])
            .unwrap()
            .global
            .verbosity(),
        Verbosity::Trace
    );
    assert_eq!(
        parse(&["config", "defaults", "-q"])
            .unwrap()
            .global
            .verbosity(),
        Verbosity::Quiet
    );
    assert!(parse(&["-q", "-v", "config", "defaults"]).is_err());
}

#[test]
fn bad_input_is_refused() {
    assert!(parse(&["preflight", "router"]).is_err());
    assert!(parse(&["standalone", "init", "--phase", "bogus"]).is_err());
    assert!(parse(&["completions", "cmd.exe"]).is_err());
}

/// The committed man pages match the code. Regenerate with
/// `cargo run -- man --out-dir docs/man`.
#[test]
fn man_pages_are_current() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/man");
    let pages = man::pages();
    let mut names: Vec<_> = pages.iter().map(|(n, _)| n.clone()).collect();
    for (name, text) in &pages {
        let committed = std::fs::read(dir.join(name)).unwrap_or_default();
        assert!(
            committed == *text,
            "docs/man/{name} is out of date; run `cargo run -- man --out-dir docs/man`"
        );
    }
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    on_disk.sort();
    assert_eq!(names, on_disk, "docs/man has stale pages; regenerate it");
}
