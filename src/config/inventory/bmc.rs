//! A node's BMC in the inventory: its Redfish endpoint (checked by the same
//! rules as `dcn bmc --bmc`), which system, how its certificate is trusted
//! and where its password is. [`BmcSettings::client_options`] turns it into
//! what [`crate::bmc::Client`] takes, reading the password and the CA file
//! only then.

use crate::bmc::{ClientOptions, OriginError, Retry};
use crate::host::read::{self, ReadSpec};
use crate::secrets::Secret;
use crate::tls::ServerTrust;
use crate::types::{AbsolutePath, string_newtype};
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

/// A node's BMC.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BmcSettings {
    pub endpoint: BmcEndpoint,
    /// The system's Id, Name or UUID, when the BMC manages several.
    #[serde(default)]
    pub system: Option<SystemId>,
    #[serde(default)]
    pub tls: BmcTls,
    pub credentials: BmcCredentials,
}

/// How the BMC's certificate is checked: at most one of these; none: the
/// system's CAs (as `dcn bmc` without `--bmc-pin`/`--bmc-ca`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct BmcTls {
    /// Exactly this key (`dcn bmc fingerprint` prints it).
    pub pin: Option<BmcPin>,
    /// A CA certificate file (PEM) the BMC's certificate chains to.
    pub ca: Option<AbsolutePath>,
    /// No check at all; required for an http:// endpoint.
    pub insecure: bool,
}

/// Who logs in to the BMC, and where the password is: a file or an
/// environment variable, one of the two.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BmcCredentials {
    pub username: BmcUsername,
    #[serde(default)]
    pub password_file: Option<AbsolutePath>,
    #[serde(default)]
    pub password_env: Option<EnvVarName>,
}

impl BmcSettings {
    /// What [`crate::bmc::Client::new`] takes, `timeout` per call: reads
    /// the password and the CA file.
    pub fn client_options(&self, timeout: Duration) -> Result<ClientOptions> {
        Ok(ClientOptions {
            url: self.endpoint.as_str().to_string(),
            username: self.credentials.username.as_str().to_string(),
            password: self.credentials.password()?,
            trust: self.tls.server_trust()?,
            timeout,
            timeout_from: None,
            retry: Retry::default(),
            credentials_from: self.credentials.origin(),
        })
    }

    /// Cross-field refusals, as (path under `bmc`, message).
    pub(super) fn check(&self) -> Result<(), (&'static str, String)> {
        let tls = &self.tls;
        let set = [tls.pin.is_some(), tls.ca.is_some(), tls.insecure];
        if set.iter().filter(|s| **s).count() > 1 {
            return Err((
                "tls",
                "set one of `pin`, `ca` or `insecure: true`, not several".into(),
            ));
        }
        if self.endpoint.as_str().starts_with("http:") && !tls.insecure {
            return Err((
                "endpoint",
                "plain HTTP would send the BMC password in clear: use https:// (with tls.pin or tls.ca), or set tls.insecure: true if this BMC really has no TLS".into(),
            ));
        }
        let c = &self.credentials;
        match (&c.password_file, &c.password_env) {
            (Some(_), Some(_)) => Err((
                "credentials",
                "set `passwordFile` or `passwordEnv`, not both".into(),
            )),
            (None, None) => Err((
                "credentials",
                "say where the BMC password is: `passwordFile: /etc/dcn/bmc/NODE.password` (mode 600) or `passwordEnv: NAME`".into(),
            )),
            _ => Ok(()),
        }
    }
}

impl BmcTls {
    /// The trust the client checks the BMC's certificate with; reads `ca`.
    pub fn server_trust(&self) -> Result<ServerTrust> {
        if self.insecure {
            return Ok(ServerTrust::Insecure);
        }
        if let Some(pin) = &self.pin {
            return Ok(ServerTrust::Pin(pin.pin()));
        }
        if let Some(ca) = &self.ca {
            let pem = read::read_string(ca.path(), &ReadSpec::up_to(read::MAX_PEM))
                .context("reading the BMC's CA (tls.ca)")?;
            crate::tls::certs_from_pem(&pem).with_context(|| {
                format!("tls.ca {}: no PEM certificate in it", ca.path().display())
            })?;
            return Ok(ServerTrust::Ca(pem));
        }
        Ok(ServerTrust::SystemRoots)
    }
}

impl BmcCredentials {
    /// Where these credentials are set, for a BMC that refuses them.
    pub fn origin(&self) -> String {
        let password = match (&self.password_file, &self.password_env) {
            (Some(f), _) => format!("the password in passwordFile {}", f.path().display()),
            (None, Some(v)) => format!("the password in ${} (passwordEnv)", v.as_str()),
            (None, None) => "a passwordFile or passwordEnv".into(),
        };
        format!(
            "the node's bmc.credentials in the site inventory: username {}, and {password}",
            self.username
        )
    }

    /// The password, from `passwordFile` (its first line; refused when
    /// other users may read the file) or `passwordEnv`.
    pub fn password(&self) -> Result<Secret> {
        self.password_with(|name| std::env::var_os(name))
    }

    /// [`Self::password`] with `env` for the environment.
    pub(crate) fn password_with(&self, env: impl Fn(&str) -> Option<OsString>) -> Result<Secret> {
        if let Some(file) = &self.password_file {
            return read_password_file(file.path());
        }
        let Some(name) = &self.password_env else {
            bail!(
                "no passwordFile or passwordEnv for the BMC user {}",
                self.username
            );
        };
        match env(name.as_str()) {
            Some(v) if !v.is_empty() => match v.into_string() {
                Ok(v) => Ok(Secret::new(v)),
                Err(_) => bail!("the environment variable {name} (passwordEnv) is not UTF-8 text"),
            },
            _ => bail!(
                "the environment variable {name} (passwordEnv) is not set or empty: export it with the BMC password before running dcn, or use passwordFile"
            ),
        }
    }
}

fn read_password_file(path: &Path) -> Result<Secret> {
    let p = path.display();
    // Private: refused when other users may read it.
    let spec = ReadSpec::up_to(crate::bmc::MAX_PASSWORD_FILE).private();
    let text = read::read_string(path, &spec)
        .with_context(|| format!("reading the BMC password from {p} (passwordFile)"))?;
    match text.lines().next() {
        Some(line) if !line.is_empty() => Ok(Secret::new(line)),
        _ => bail!("{p} is empty: write the BMC password on its first line"),
    }
}

string_newtype!(
    /// A BMC's Redfish service, stored as its origin (`https://HOST[:PORT]/`),
    /// accepted by the same rules as `dcn bmc --bmc`. Errors never repeat
    /// the value: it may hold a password.
    BmcEndpoint,
    normalize = |s| {
        crate::bmc::origin(s).map(|u| u.to_string()).map_err(|e| match e {
            OriginError::Syntax(why) => format!(
                "invalid BMC endpoint ({why}): write https://HOST[:PORT], e.g. https://10.240.1.5"
            ),
            OriginError::Credentials => "a BMC endpoint carries no credentials: give the user as credentials.username and the password's place as credentials.passwordFile or credentials.passwordEnv".to_string(),
            OriginError::Scheme(scheme) => format!(
                "a BMC endpoint is https://HOST[:PORT] (http:// only with tls.insecure: true), not {scheme}://"
            ),
            OriginError::NoHost => "the BMC endpoint has no host: write https://HOST[:PORT]".to_string(),
        })
    }
);

string_newtype!(
    /// The pin of a BMC's key, as `dcn bmc fingerprint` prints it.
    BmcPin,
    normalize = |s| {
        s.parse::<crate::pki::Pin>()
            .map(|p| p.to_string())
            .map_err(|e| format!("invalid pin ({e}): copy the sha256:... pin `dcn bmc fingerprint --bmc URL` printed"))
    }
);

impl BmcPin {
    pub fn pin(&self) -> crate::pki::Pin {
        self.0.parse().expect("checked when read")
    }
}

string_newtype!(
    /// A Redfish system's Id, Name or UUID.
    SystemId,
    |s| {
        if !s.is_empty() && s.len() <= 255 && !s.chars().any(char::is_control) {
            Ok(())
        } else {
            Err("invalid system: write its Id, Name or UUID (1-255 characters, no control characters)".to_string())
        }
    }
);

string_newtype!(
    /// A BMC user name (HTTP basic authentication: no `:`).
    BmcUsername,
    |s| {
        if !s.is_empty() && s.len() <= 255 && !s.contains(':') && !s.chars().any(char::is_control) {
            Ok(())
        } else {
            Err("invalid username: 1-255 characters, no ':' or control characters".to_string())
        }
    }
);

string_newtype!(
    /// The name of an environment variable.
    EnvVarName,
    |s| {
        let ok = (1..=128).contains(&s.len())
            && !s.as_bytes()[0].is_ascii_digit()
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if ok {
            Ok(())
        } else {
            // Not repeating the value: it may be a password put here by mistake.
            Err("invalid environment variable name: use letters, digits and '_', e.g. EDGE1_N1_BMC_PASSWORD".to_string())
        }
    }
);
