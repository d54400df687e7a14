//! OpenStack's own suite against the edge lab's cloud (issue 27).

use crate::common::Lab;
use std::time::Instant;

/// The Tempest tests that boot servers, run with the edge site as nova's
/// default zone: an edge host serves them.
const TEMPEST_AT_THE_EDGE: &str = "^tempest\\.api\\.compute\\.servers\\.test_create_server\\.";

/// Tempest's smoke tests with servers in the central zone, then the server
/// tests with every server at edge site edge1. Any failure outside the
/// exclusion list (src/lab/tempest/exclude.txt, each with its reason)
/// fails the test.
pub fn tempest_passes(lab: &Lab) {
    for (what, args) in [
        ("smoke", vec!["--smoke"]),
        (
            "servers at edge1",
            vec!["--regex", TEMPEST_AT_THE_EDGE, "--zone", "edge1"],
        ),
    ] {
        let mut a = vec!["tempest", "--output", "json"];
        a.extend(args);
        let started = Instant::now();
        let out = lab.lab(&a);
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "tempest ({what}) gave no summary ({e}): {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        eprintln!(
            "Tempest {what}: {} passed, {} skipped, {} failed in {:.0}s",
            summary["passed"],
            summary["skipped"],
            summary["failed"],
            started.elapsed().as_secs_f64()
        );
        assert!(
            summary["failed"] == 0 && summary["passed"].as_u64().unwrap_or(0) > 0,
            "Tempest ({what}) failed: {summary:#}"
        );
    }
}
