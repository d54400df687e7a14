use super::*;

#[test]
fn hostnames() {
    for ok in ["cp", "cp-1.lab.example", "a1"] {
        assert!(ok.parse::<Hostname>().is_ok(), "{ok}");
    }
    for bad in [
        "",
        "-a",
        "a-",
        "A",
        "a_b",
        "a..b",
        "10.0.0.1",
        &"x".repeat(64),
    ] {
        assert!(bad.parse::<Hostname>().is_err(), "{bad}");
    }
}

#[test]
fn node_names_are_host_names_of_at_most_64_characters_and_not_localhost() {
    let longest = format!("{}.{}", "x".repeat(32), "y".repeat(31));
    for ok in ["edge1-n1", "cp", &longest, "a.b.c"] {
        assert!(ok.parse::<NodeName>().is_ok(), "{ok}");
    }
    let long = format!("{}.{}", "a".repeat(63), "b".repeat(40));
    assert!(long.parse::<Hostname>().is_ok());
    for bad in [
        "localhost",
        "localhost.localdomain",
        &long,
        "A",
        "10.0.0.1",
        "",
    ] {
        assert!(bad.parse::<NodeName>().is_err(), "{bad}");
    }
    let e = "localhost".parse::<NodeName>().unwrap_err();
    assert!(e.contains("reserved") && e.contains("its own name"), "{e}");
    let e = long.parse::<NodeName>().unwrap_err();
    assert!(e.contains("at most 64"), "{e}");
}

#[test]
fn site_names() {
    assert!("edge1".parse::<SiteName>().is_ok());
    assert!("edge-west-2".parse::<SiteName>().is_ok());
    for bad in ["", "1edge", "Edge", "edge_1", "edge-", &"e".repeat(33)] {
        assert!(bad.parse::<SiteName>().is_err(), "{bad}");
    }
}

#[test]
fn cidrs() {
    assert!(Cidr::try_from("10.0.0.0/24".to_string()).is_ok());
    let e = Cidr::try_from("10.0.0.1/24".to_string()).unwrap_err();
    assert!(e.contains("did you mean 10.0.0.0/24"), "{e}");
    assert!(Cidr::try_from("10.0.0.0".to_string()).is_err());
}

#[test]
fn ports_workers_durations_sources() {
    assert!(Port::try_from(0).is_err());
    assert!(Port::try_from(70000).is_err());
    assert_eq!(Workers::Auto.resolve(2), 1);
    assert_eq!(Workers::Auto.resolve(16), 4);
    assert_eq!(Workers::Count(3).resolve(2), 3);
    assert_eq!(
        HumanDuration::try_from("24h".to_string())
            .unwrap()
            .0
            .as_secs(),
        86400
    );
    assert!(HumanDuration::try_from("0s".to_string()).is_err());
}
