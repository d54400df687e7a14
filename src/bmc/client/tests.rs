use super::*;

#[test]
fn plain_http_needs_insecure() {
    let opts = |trust| ClientOptions {
        url: "http://127.0.0.1:1".into(),
        username: "admin".into(),
        password: Secret::new("pw"),
        trust,
        timeout: Duration::from_secs(1),
        timeout_from: None,
        retry: Retry::default(),
        credentials_from: "the test's user".into(),
    };
    let err = Client::new(&opts(ServerTrust::Pin(
        "sha256:0000000000000000000000000000000000000000000000000000000000000000"
            .parse()
            .unwrap(),
    )))
    .err()
    .unwrap();
    assert!(err.to_string().contains("plain HTTP"), "{err}");
    assert!(Client::new(&opts(ServerTrust::Insecure)).is_ok());
}
