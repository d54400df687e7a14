use super::*;
use std::time::{Duration, Instant};

fn refusal(text: &str) -> LimitError {
    check(text).expect_err("refused")
}

#[test]
fn nesting_up_to_the_limit_passes_and_one_more_is_refused_where_it_starts() {
    // The top-level mapping is the first level.
    let ok = format!(
        "a: {}{}\n",
        "[".repeat(MAX_DEPTH - 1),
        "]".repeat(MAX_DEPTH - 1)
    );
    check(&ok).unwrap();
    let deep = format!(
        "a: 1\nb: {}{}\n",
        "[".repeat(MAX_DEPTH),
        "]".repeat(MAX_DEPTH)
    );
    let e = refusal(&deep);
    assert_eq!(
        (e.line, e.column),
        (Some(2), Some(4 + MAX_DEPTH - 1)),
        "{e}"
    );
    assert!(e.message.contains("nested more than 32 levels"), "{e}");
    let maps = format!("a: {}{}\n", "{b: ".repeat(MAX_DEPTH), "}".repeat(MAX_DEPTH));
    assert!(refusal(&maps).message.contains("nested"));
    let block: String = (0..=MAX_DEPTH)
        .map(|i| format!("{}k:\n", "  ".repeat(i)))
        .collect();
    assert!(refusal(&block).message.contains("nested"));
}

#[test]
fn deep_flow_nesting_is_refused_in_bounded_time() {
    // 256 KiB of brackets (the bundle member limit) took libyaml over a
    // minute; the check stops at the 33rd level.
    for bomb in [
        "[".repeat(256 * 1024),
        "{a: ".repeat(64 * 1024),
        format!("x: {}", "[\"]\", ".repeat(40 * 1024)),
    ] {
        let started = Instant::now();
        let e = refusal(&bomb);
        assert!(e.message.contains("nested"), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
}

#[test]
fn brackets_in_strings_comments_and_block_scalars_are_not_nesting() {
    let deep = "[".repeat(200);
    let text = format!("a: \"{deep}\"\nb: '{deep}'\n# {deep}\nc: |\n  {deep}\nd: x{deep}\n");
    check(&text).unwrap();
}

#[test]
fn a_key_repeated_in_one_mapping_is_refused_with_both_lines() {
    let cases = [
        (
            "members:\n  ca.crt: x\n  token: y\n  ca.crt: z\n",
            4,
            "\"ca.crt\"",
            2,
        ),
        ("a: 1\n'a': 2\n", 2, "\"a\"", 1),
        ("m: {k: 1, \"k\": 2}\n", 1, "\"k\"", 1),
        ("a: 1\nb:\n  c: 2\na: 3\n", 4, "\"a\"", 1),
        (
            "\"\\e[31mred\": 1\n\"\\e[31mred\": 2\n",
            2,
            "\"\\u{1b}[31mred\"",
            1,
        ),
    ];
    for (text, line, key, first) in cases {
        let e = refusal(text);
        assert_eq!(e.line, Some(line), "{text:?}: {e}");
        assert!(
            e.message.contains(&format!("the key {key} appears twice"))
                && e.message.contains(&format!("first on line {first}")),
            "{text:?}: {e}"
        );
    }
    // The same key in different mappings, and complex keys, are fine.
    check("- a: 1\n- a: 2\nx:\n  a: 1\ny:\n  a: 1\n").unwrap();
    check("? [a, b]\n: 1\n? [a, b]\n: 2\n").unwrap();
}

#[test]
fn size_is_bounded_and_syntax_errors_are_left_to_the_parser() {
    let big = format!("a: \"{}\"\n", "x".repeat(MAX_BYTES));
    assert!(
        refusal(&big)
            .message
            .contains("more than the limit of 1048576")
    );
    check("a: b: c\n").unwrap();
    check("a: [1, 2\n").unwrap();
    assert!(from_str::<serde_yaml::Value>("a: b: c\n").is_err());
    let v: std::collections::BTreeMap<String, u32> = from_str("a: 1\nb: 2\n").unwrap();
    assert_eq!(v.len(), 2);
    assert!(from_str::<serde_yaml::Value>("a: 1\na: 2\n").is_err());
}

#[test]
fn read_file_reads_a_regular_file_up_to_the_limit() {
    crate::host::read::testing::bounded(Duration::from_secs(20), || {
        let dir = tempfile::tempdir().unwrap();
        for (path, why) in crate::host::read::testing::special_files(dir.path(), MAX_BYTES as u64) {
            let e = read_file(&path).unwrap_err().to_string();
            assert!(e.contains(&why), "{e}");
        }
        let p = dir.path().join("c.yaml");
        std::fs::write(&p, "a: 1\n").unwrap();
        assert_eq!(read_file(&p).unwrap(), "a: 1\n");
    });
}
