use super::*;
use std::time::Instant;

/// Every line of `text` at most `max` characters.
fn bounded(text: &str, max: usize) -> bool {
    text.lines().all(|l| l.chars().count() <= max)
}

#[test]
fn columns_line_up_and_the_last_is_not_padded() {
    let mut t = Table::new(&[
        Column::new("NODE", 64),
        Column::new("RESULT", 40),
        Column::new("TIME", 10),
    ]);
    t.row(["n1", "placed", "420s"]);
    t.row(["edge1-n22", "FAILED in powered-on", "1s"]);
    assert_eq!(
        t.render(),
        "NODE       RESULT                TIME\n\
         n1         placed                420s\n\
         edge1-n22  FAILED in powered-on  1s\n"
    );
    // Fixed-looking tables: a minimum width, one space apart, indented.
    let mut t = Table::new(&[Column::new("", 20).at_least(6), Column::new("", 9)])
        .gap(1)
        .indent("  ");
    t.row(["a", "b"]);
    t.row(["abc"]);
    assert_eq!(t.render(), "  a      b\n  abc\n");
}

#[test]
fn huge_cells_are_cut_to_their_column_quickly() {
    for size in [100 * 1024, 1024 * 1024] {
        let huge = "x".repeat(size);
        let started = Instant::now();
        let mut t = Table::new(&[Column::new("ID", 16), Column::new("NAME", 64)]);
        t.row(["node-0", huge.as_str()]);
        t.row([huge.as_str(), "short"]);
        let out = t.render();
        assert!(started.elapsed().as_millis() < 500, "{size}: too slow");
        assert!(bounded(&out, 16 + 2 + 64), "{size}:\n{out}");
        assert!(out.contains(&format!("node-0{}{}…", " ".repeat(12), "x".repeat(63))));
        assert!(out.contains(&format!("{}…  short", "x".repeat(15))));
    }
}

#[test]
fn control_characters_are_escaped_and_count_as_what_is_shown() {
    let mut t = Table::new(&[Column::new("A", 12), Column::new("B", 5)]);
    t.row(["x\x1b[2J\ny", "\r\u{202e}"]);
    // A megabyte of escapes costs a cell, not six megabytes.
    let escapes = "\x1b".repeat(1024 * 1024);
    t.row([escapes.as_str(), "ok"]);
    let out = t.render();
    assert!(!out.contains('\x1b') && !out.contains('\r') && !out.contains('\u{202e}'));
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(out.contains("x\\u{1b}[2J\\…  \\r\\u…\n"), "{out}");
    assert!(out.contains("\\u{1b}\\u{1b…  ok\n"), "{out}");
}

#[test]
fn multi_byte_characters_are_cut_between_characters() {
    let names = [
        "é".repeat(100_000),
        "✓".repeat(300_000),
        "🦀".repeat(262_144),
    ];
    for name in &names {
        let c = cell(name, 10);
        assert_eq!(c.chars().count(), 10, "{c}");
        assert!(c.ends_with('…'));
        assert_eq!(c.chars().next(), name.chars().next());
    }
    // Combining marks are characters of their own: cut between them, never
    // inside one.
    let combining = "e\u{301}".repeat(50_000);
    assert_eq!(cell(&combining, 7).chars().count(), 7);
    let mut t = Table::new(&[Column::new("NAME", 8), Column::new("X", 3)]);
    t.row(["Système № 1", "✓"]);
    t.row(["ab", "🦀"]);
    assert_eq!(t.render(), "NAME      X\nSystème…  ✓\nab        🦀\n");
}

#[test]
fn cut_and_pad_at_their_edges() {
    assert_eq!(cut("abc", 3), "abc");
    assert_eq!(cut("abcd", 3), "ab…");
    assert_eq!(cut("abcd", 1), "…");
    assert_eq!(cut("abcd", 0), "");
    assert_eq!(cut("", 0), "");
    assert!(matches!(cut("short", 10), Cow::Borrowed(_)));
    assert_eq!(pad("ab", 4), "ab  ");
    assert_eq!(pad("abcdef", 4), "abcdef");
    assert_eq!(pad("é", 3), "é  ");
    // Widths far past 65,535, where a format width panics.
    assert_eq!(pad("", 70_000).len(), 70_000);
    let mut t = Table::new(&[Column::new("A", 200_000), Column::new("B", 1)]);
    t.row(["y".repeat(100_000), "z".into()]);
    assert!(
        t.render()
            .ends_with(&format!("{}  z\n", "y".repeat(100_000)))
    );
    assert_eq!(Table::new(&[Column::new("", 5)]).render(), "");
}
