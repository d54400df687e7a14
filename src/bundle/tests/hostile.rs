//! Manifests and CAs made to hurt the reader: times that leave what RFC
//! 3339 can write, nesting that costs the YAML parser quadratic time,
//! repeated keys, and CA certificates that are expired, not yet valid or
//! not a CA. Each is signed by the trusted CA, so only the check under test
//! can refuse it.

use super::super::*;
use super::support::*;

fn signed(fix: impl FnOnce(String) -> String) -> String {
    refusal(&resigned(ca(), fix))
}

#[test]
fn times_outside_1970_to_9999_in_utc_are_refused_with_their_field() {
    let cases = [
        (
            "createdAt: 2026-09-21T14:13:20Z",
            "createdAt: 0000-01-01T00:00:00+23:59",
            "createdAt",
        ),
        (
            "notAfter: 2026-09-22T14:13:20Z",
            "notAfter: 9999-12-31T23:59:59-23:59",
            "notAfter",
        ),
        (
            "notAfter: 2026-09-22T14:13:20Z",
            "notAfter: 9999-12-31T23:59:59-00:01",
            "notAfter",
        ),
        (
            "createdAt: 2026-09-21T14:13:20Z",
            "createdAt: 1969-12-31T23:59:59Z",
            "createdAt",
        ),
    ];
    for (from, to, field) in cases {
        let err = signed(|y| y.replace(from, to));
        assert_contains(
            &err,
            &[
                "the bundle's manifest is invalid: manifest.yaml",
                &format!(": {field}: "),
                "outside the times dcn accepts (1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z)",
                "dcn bundle export --site",
            ],
        );
    }
    // Also without expiry checks (`bundle inspect`) and without a pin.
    let b = resigned(other_ca(), |y| {
        y.replace(
            "notAfter: 2026-09-22T14:13:20Z",
            "notAfter: 9999-12-31T23:59:59-23:59",
        )
    });
    let o = ReadOptions {
        ca_pin: None,
        check_expiry: false,
        ..opts()
    };
    assert_contains(&refusal_with(&b, &o), &["notAfter: ", "outside the times"]);
}

#[test]
fn deeply_nested_yaml_is_refused_quickly_before_the_signature() {
    // Signed by nobody: the nesting is refused before any signature check,
    // and in bounded time whatever the depth.
    let bombs = [
        format!("formatVersion: 1\nsite: {}\n", "[".repeat(200 * 1024)),
        format!("formatVersion: 1\nsite: {}\n", "{a: ".repeat(50 * 1024)),
        format!(
            "formatVersion: 1\nhosts: {}\n",
            "[\"]\", ".repeat(30 * 1024)
        ),
    ];
    for bomb in bombs {
        let b = rebuild(|m| m[0].1 = bomb.into_bytes());
        let started = std::time::Instant::now();
        let err = refusal(&b);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_contains(
            &err,
            &[
                "the bundle's manifest is invalid: manifest.yaml:2:",
                "nested more than 32 levels deep",
            ],
        );
    }
}

#[test]
fn repeated_keys_are_refused_in_members_and_everywhere_else() {
    let token_digest = |y: &str| {
        let i = y.find("  token: ").unwrap();
        y[i..].lines().next().unwrap().to_string()
    };
    // members lists the token twice: the second copy used to win.
    let err = signed(|y| {
        let line = token_digest(&y);
        y.replace(
            &line,
            &format!("{line}\n  token: sha256:{}", "0".repeat(64)),
        )
    });
    assert_contains(
        &err,
        &[
            "manifest.yaml:",
            "the key \"token\" appears twice in one mapping (first on line",
        ],
    );
    let err = signed(|y| y.replace("site: edge1\n", "site: edge1\nsite: edge2\n"));
    assert_contains(&err, &["the key \"site\" appears twice"]);
    let err = signed(|y| y.replace("    tls: true\n", "    tls: true\n    tls: false\n"));
    assert_contains(&err, &["the key \"tls\" appears twice"]);
}

#[test]
fn custom_service_config_with_a_bare_carriage_return_is_refused() {
    // oslo.config would read a [database] section here; dcn saw one option.
    let err = signed(|y| {
        y.replace(
            "  novaCompute: |\n    [DEFAULT]\n    debug = true\n",
            "  novaCompute: \"[DEFAULT]\\ndebug = true\\r[database]\\rconnection = mysql://evil\\n\"\n",
        )
    });
    assert_contains(
        &err,
        &[
            "customServiceConfig.novaCompute",
            "invalid INI in customServiceConfig, line 2: a carriage return (\\r) not followed by a line feed",
        ],
    );
}
