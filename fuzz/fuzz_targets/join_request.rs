//! Feed arbitrary bytes to the join service as a `POST /v2/join` body,
//! against a control plane's state in a private temporary directory (its
//! CA, a site, and a token whose text the seed corpus holds, so the fuzzer
//! gets past the token check to the host name, address and CSR). Node
//! accounts are counted, not made: RabbitMQ and keystone are not here.
//! Every answer must be a JSON reply with a status, never a panic.

#![no_main]

use dcn::bundle::JoinToken;
use dcn::openstack::accounts::NodeAccounts;
use dcn::centre::sites::{Registry, Site, TokenRecord};
use dcn::host::{FileSpec, Files, Host};
use dcn::passwords::PasswordStore;
use dcn::pki::CertificateAuthority;
use dcn::recipes::site_credentials::NodeAccount;
use dcn::secrets::Secret;
use dcn::timefmt::rfc3339;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

/// The token in the seed corpus (`fuzz/corpus/join_request/`).
const TOKEN: &str = "fuzzed.abcdefghijklmnopqrstuvwxyz012345";

struct Counted;

impl dcn::openstack::compute::ComputeHosts for Counted {
    fn is_compute_host(&self, hostname: &str) -> anyhow::Result<bool> {
        Ok(hostname == "cp")
    }
}

impl NodeAccounts for Counted {
    fn make(&self, _: &str, _: &NodeAccount) -> anyhow::Result<Secret> {
        Ok(dcn::secrets::generate_password())
    }
    fn delete(&self, _: &str, _: &NodeAccount) -> anyhow::Result<()> {
        Ok(())
    }
}

fn control_plane() -> &'static (tempfile::TempDir, Host) {
    static CP: OnceLock<(tempfile::TempDir, Host)> = OnceLock::new();
    CP.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let files = Files::new(dir.path(), false);
        let ca = CertificateAuthority::generate("fuzz CA").unwrap();
        let secret = FileSpec::secret();
        files.ensure_dir("/var/lib/dcn", &FileSpec::private_dir()).unwrap();
        files.write("/var/lib/dcn/pki/ca.crt", ca.cert_pem().as_bytes(), &secret).unwrap();
        files.write("/var/lib/dcn/pki/ca.key", ca.key_pem().expose().as_bytes(), &secret).unwrap();
        // The certificate lifetimes a join signs with come from the saved config.
        files
            .write(
                "/var/lib/dcn/config.yaml",
                b"apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\ncontrolPlane:\n  hostname: cp\n  address: 127.0.0.1\n",
                &secret,
            )
            .unwrap();
        let mut pw = PasswordStore::default();
        pw.ensure(["metadata_secret", "keystone_admin"]);
        pw.save(&files).unwrap();
        let reg = Registry::new(&files);
        let now = SystemTime::now();
        reg.save_site(&Site {
            name: "edge1".into(),
            created_at: rfc3339(now - Duration::from_secs(60)),
            aggregate_id: Some(1),
            revoked_at: None,
        })
        .unwrap();
        let token: JoinToken = TOKEN.parse().unwrap();
        reg.save_token(&TokenRecord {
            id: token.id.clone(),
            hash: token.hash(),
            site: "edge1".into(),
            created_at: rfc3339(now),
            not_after: rfc3339(now + Duration::from_secs(365 * 86400)),
            max_uses: 1_000_000,
            uses: 0,
        })
        .unwrap();
        let host = Host::system(dir.path(), false);
        (dir, host)
    })
}

fn challenges() -> &'static dcn::centre::serve::Challenges {
    static C: OnceLock<dcn::centre::serve::Challenges> = OnceLock::new();
    C.get_or_init(dcn::centre::serve::Challenges::new)
}

fn joining() -> &'static dcn::centre::serve::Joining {
    static J: OnceLock<dcn::centre::serve::Joining> = OnceLock::new();
    J.get_or_init(dcn::centre::serve::Joining::new)
}

/// The catalogue, loaded once as `dcn serve` loads it.
fn recipes() -> &'static dcn::recipes::Recipes {
    static R: OnceLock<dcn::recipes::Recipes> = OnceLock::new();
    R.get_or_init(|| dcn::recipes::Recipes::embedded().expect("the recipes load"))
}

fuzz_target!(|data: &[u8]| {
    let (_, host) = control_plane();
    let answer = dcn::centre::serve::answer_join(host, recipes(), &Counted, challenges(), joining(), data);
    assert!((200..600).contains(&answer.status));
    assert!(!answer.note.contains('\n'), "a log line stays one line");
});
