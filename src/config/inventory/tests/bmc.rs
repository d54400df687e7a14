//! A node's BMC settings turned into a Redfish client's options.

use super::*;
use crate::tls::ServerTrust;

fn creds(file: Option<&Path>, env: Option<&str>) -> BmcCredentials {
    BmcCredentials {
        username: "admin".parse().unwrap(),
        password_file: file.map(|f| f.to_str().unwrap().parse().unwrap()),
        password_env: env.map(|e| e.parse().unwrap()),
    }
}

#[test]
fn the_password_comes_from_a_private_file_or_the_environment() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bmc.pw");
    let mode = |m| std::fs::set_permissions(&file, std::fs::Permissions::from_mode(m)).unwrap();
    std::fs::write(&file, "s3cret-pw\nignored\n").unwrap();
    mode(0o600);
    let c = creds(Some(&file), None);
    assert_eq!(c.password().unwrap().expose(), "s3cret-pw");

    mode(0o640);
    let e = format!("{:#}", c.password().unwrap_err());
    assert!(
        e.contains(&format!("`chmod 600 {}`", file.display())),
        "{e}"
    );
    assert!(e.contains("mode 640") && !e.contains("s3cret"), "{e}");

    mode(0o600);
    std::fs::write(&file, "\nlater\n").unwrap();
    assert!(format!("{:#}", c.password().unwrap_err()).contains("is empty"));
    std::fs::write(&file, "x".repeat(5000)).unwrap();
    let e = format!("{:#}", c.password().unwrap_err());
    assert!(e.contains("is 5000 bytes, more than the 4096 bytes"), "{e}");
    let gone = creds(Some(&dir.path().join("missing")), None);
    let e = format!("{:#}", gone.password().unwrap_err());
    assert!(e.contains("missing (passwordFile)"), "{e}");
    let e = format!(
        "{:#}",
        creds(Some(dir.path()), None).password().unwrap_err()
    );
    assert!(e.contains("not a regular file"), "{e}");

    let c = creds(None, Some("EDGE_PW"));
    let env = |name: &str| (name == "EDGE_PW").then(|| "from-env".into());
    assert_eq!(c.password_with(env).unwrap().expose(), "from-env");
    let e = format!("{:#}", c.password_with(|_| None).unwrap_err());
    assert!(e.contains("EDGE_PW (passwordEnv) is not set"), "{e}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn bmc_settings_become_client_options() {
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    let tls = |yaml: &str| -> BmcTls { serde_yaml::from_str(yaml).unwrap() };
    assert!(matches!(
        tls("{}").server_trust().unwrap(),
        ServerTrust::SystemRoots
    ));
    assert!(matches!(
        tls("{insecure: true}").server_trust().unwrap(),
        ServerTrust::Insecure
    ));
    let pin = "sha256:0000000000000000000000000000000000000000000000000000000000000001";
    match tls(&format!("{{pin: {pin}}}")).server_trust().unwrap() {
        ServerTrust::Pin(p) => assert_eq!(p.to_string(), pin),
        other => panic!("{other:?}"),
    }
    let with_ca = tls(&format!("{{ca: {}}}", ca_file.display()));
    std::fs::write(&ca_file, "not a certificate").unwrap();
    let e = format!("{:#}", with_ca.server_trust().unwrap_err());
    assert!(e.contains("no PEM certificate"), "{e}");
    let ca = crate::pki::CertificateAuthority::generate("bmc vendor CA").unwrap();
    std::fs::write(&ca_file, ca.cert_pem()).unwrap();
    assert!(matches!(with_ca.server_trust().unwrap(), ServerTrust::Ca(p) if p == ca.cert_pem()));

    let settings = BmcSettings {
        endpoint: "https://10.0.0.7:8000/redfish/v1".parse().unwrap(),
        system: None,
        tls: tls("{insecure: true}"),
        credentials: creds(None, Some("DCN_TEST_SURELY_UNSET_VARIABLE")),
    };
    let e = format!(
        "{:#}",
        settings.client_options(Duration::from_secs(5)).unwrap_err()
    );
    assert!(e.contains("DCN_TEST_SURELY_UNSET_VARIABLE"), "{e}");
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "pw\n").unwrap();
    std::fs::set_permissions(&pw, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let settings = BmcSettings {
        credentials: creds(Some(&pw), None),
        ..settings
    };
    let opts = settings.client_options(Duration::from_secs(5)).unwrap();
    assert_eq!(opts.url, "https://10.0.0.7:8000/");
    assert_eq!(
        (opts.username.as_str(), opts.password.expose()),
        ("admin", "pw")
    );
    assert_eq!(opts.timeout, Duration::from_secs(5));
    assert!(crate::bmc::Client::new(&opts).is_ok());
}

/// A BMC that refuses the credentials is told where they were set: the
/// inventory's entry, not `dcn bmc`'s flags.
#[test]
fn refused_credentials_name_the_inventory_entry() {
    let file = creds(Some(Path::new("/etc/dcn/bmc/n1.pw")), None).origin();
    assert_eq!(
        file,
        "the node's bmc.credentials in the site inventory: username admin, and the password in passwordFile /etc/dcn/bmc/n1.pw"
    );
    let env = creds(None, Some("N1_BMC_PW")).origin();
    assert!(
        env.ends_with("the password in $N1_BMC_PW (passwordEnv)"),
        "{env}"
    );
}
