use super::*;

/// Check that `ops` turn `a` into `b`: they cover both in order, and the
/// lines they call equal are.
fn check(a: &[&str], b: &[&str], ops: &[DiffOp]) {
    let (mut i, mut j) = (0, 0);
    for op in ops {
        assert_eq!(op.old_range().start, i, "{ops:?}");
        assert_eq!(op.new_range().start, j, "{ops:?}");
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = *op
        {
            assert_eq!(a[old_index..old_index + len], b[new_index..new_index + len]);
        }
        (i, j) = (op.old_range().end, op.new_range().end);
    }
    assert_eq!((i, j), (a.len(), b.len()), "{ops:?}");
}

fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

#[test]
fn equal_files_have_no_diff() {
    assert_eq!(unified("", "", "a", "b"), "");
    let text = "[DEFAULT]\ndebug = true\n\n[x]\nk = v\n";
    assert_eq!(unified(text, text, "a", "b"), "");
}

#[test]
fn a_changed_value_reads_as_diff_u_does() {
    let old = "[DEFAULT]\na = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\nh = 8\n";
    let new = old.replace("e = 5", "e = 50");
    let diff = unified(old, &new, "f (now)", "f (new)");
    // What `similar` (Myers) and `diff -u` print for one changed line.
    let expected = similar::TextDiff::from_lines(old, new.as_str())
        .unified_diff()
        .header("f (now)", "f (new)")
        .to_string();
    assert_eq!(diff, expected);
    assert!(diff.contains("@@ -3,7 +3,7 @@\n b = 2\n c = 3\n d = 4\n-e = 5\n+e = 50\n f = 6\n"));
    // From nothing, every line is added.
    let all = unified("", old, "a", "b");
    assert!(
        all.starts_with("--- a\n+++ b\n@@ -0,0 +1,9 @@\n+[DEFAULT]\n+a = 1\n"),
        "{all}"
    );
    // A last line without its newline is marked, as diff does.
    let cut = unified("[x]\nk = 1\n", "[x]\nk = 2", "a", "b");
    assert!(
        cut.ends_with("+k = 2\n\\ No newline at end of file\n"),
        "{cut}"
    );
}

#[test]
fn ops_turn_the_old_file_into_the_new_one() {
    // Moved, repeated, changed, added and removed lines, deterministic
    // but varied (xorshift).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for _ in 0..300 {
        let len_a = next(40) as usize;
        let len_b = next(40) as usize;
        let a_lines: Vec<String> = (0..len_a).map(|_| format!("l{}\n", next(12))).collect();
        let b_lines: Vec<String> = (0..len_b).map(|_| format!("l{}\n", next(12))).collect();
        let a: Vec<&str> = a_lines.iter().map(String::as_str).collect();
        let b: Vec<&str> = b_lines.iter().map(String::as_str).collect();
        check(&a, &b, &line_ops(&a, &b));
        check(&b, &a, &line_ops(&b, &a));
    }
}

#[test]
fn unique_lines_anchor_in_order_and_gaps_keep_their_equal_ends() {
    let a = lines("[a]\nk = 1\n\n[b]\nk = 1\n\n[c]\nk = 1\n");
    let b = lines("[a]\nk = 1\n\n[c]\nk = 2\n\n[b]\nk = 1\n");
    let ops = line_ops(&a, &b);
    check(&a, &b, &ops);
    // [a] and one of [b]/[c] stay; the section that moved and the value
    // that changed are all that is removed and added.
    let changed: usize = (ops.iter())
        .filter(|op| !matches!(op, DiffOp::Equal { .. }))
        .map(|op| op.old_range().len() + op.new_range().len())
        .sum();
    assert!(changed <= 8, "{ops:?}");
    assert_eq!(
        longest_increasing(&[(3, 0), (0, 1), (1, 2), (5, 3), (2, 4), (4, 5)]),
        vec![(0, 1), (1, 2), (2, 4), (4, 5)]
    );
}
