//! Unified diffs of rendered INI files (the per-node drop-ins a site config
//! dry run shows) in time that grows as n log n with their lines.
//!
//! A rendered [`super::Ini`] names each section once and each key once per
//! section, so nearly every header and option line occurs once in a file.
//! Those lines anchor the diff (the patience diff's idea): the lines found
//! once in each file are matched, the longest run of matches in the same
//! order in both is kept (a longest increasing subsequence, n log n), and
//! between two anchors the equal lines at either end are kept and the rest
//! is shown as removed and added. Myers' diff (the `similar` crate) can find
//! shorter diffs in the gaps, but its cost grows faster than linearly: an
//! operator's config must not cost minutes to preview.

use similar::{DiffOp, group_diff_ops, udiff::UnifiedHunkHeader};
use std::collections::HashMap;
use std::fmt::Write;

/// Lines of context around each change, as `diff -u`.
const CONTEXT: usize = 3;

/// The unified diff from `old` to `new`, with `old_label` and `new_label`
/// in its header; empty when they are equal.
pub fn unified(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let groups = group_diff_ops(line_ops(&a, &b), CONTEXT);
    if groups.is_empty() {
        return String::new();
    }
    let mut out = format!("--- {old_label}\n+++ {new_label}\n");
    for group in groups {
        writeln!(out, "{}", UnifiedHunkHeader::new(&group)).expect("a String takes writes");
        for op in group {
            let (sign, lines) = match op {
                DiffOp::Equal { old_index, len, .. } => (' ', &a[old_index..old_index + len]),
                DiffOp::Delete {
                    old_index, old_len, ..
                } => ('-', &a[old_index..old_index + old_len]),
                DiffOp::Insert {
                    new_index, new_len, ..
                } => ('+', &b[new_index..new_index + new_len]),
                DiffOp::Replace { .. } => unreachable!("line_ops makes no Replace"),
            };
            for line in lines {
                out.push(sign);
                out.push_str(line);
                if !line.ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// The edit from lines `a` to lines `b` (no `Replace`; equal runs merged).
fn line_ops(a: &[&str], b: &[&str]) -> Vec<DiffOp> {
    let mut ops = Ops(Vec::new());
    let (mut i, mut j) = (0, 0);
    for (ai, bj) in anchors(a, b).into_iter().chain([(a.len(), b.len())]) {
        ops.gap(a, b, i..ai, j..bj);
        if ai < a.len() {
            ops.equal(ai, bj, 1);
        }
        (i, j) = (ai + 1, bj + 1);
    }
    ops.0
}

/// The pairs of line indexes of lines that occur once in `a` and once in
/// `b`, the longest chain of them in the same order in both.
fn anchors(a: &[&str], b: &[&str]) -> Vec<(usize, usize)> {
    // Per line: how often in a, how often in b, and its index in a.
    let mut seen: HashMap<&str, (u32, u32, usize)> = HashMap::with_capacity(a.len());
    for (i, line) in a.iter().enumerate() {
        let e = seen.entry(line).or_insert((0, 0, i));
        e.0 = e.0.saturating_add(1);
    }
    for line in b {
        if let Some(e) = seen.get_mut(line) {
            e.1 = e.1.saturating_add(1);
        }
    }
    // In b's order; the chain to keep is the longest increasing in a.
    let pairs: Vec<(usize, usize)> = (b.iter().enumerate())
        .filter_map(|(j, line)| match seen.get(line) {
            Some(&(1, 1, i)) => Some((i, j)),
            _ => None,
        })
        .collect();
    longest_increasing(&pairs)
}

/// The longest subsequence of `pairs` (increasing in `.1`) whose `.0` also
/// increases: patience sorting, n log n.
fn longest_increasing(pairs: &[(usize, usize)]) -> Vec<(usize, usize)> {
    // tails[k]: the index in `pairs` of the smallest `.0` that ends a chain
    // of length k + 1; before[p]: the pair before p in its chain.
    let mut tails: Vec<usize> = Vec::new();
    let mut before: Vec<Option<usize>> = vec![None; pairs.len()];
    for (p, &(i, _)) in pairs.iter().enumerate() {
        let k = tails.partition_point(|&t| pairs[t].0 < i);
        before[p] = k.checked_sub(1).map(|k| tails[k]);
        if k == tails.len() {
            tails.push(p);
        } else {
            tails[k] = p;
        }
    }
    let mut chain = Vec::with_capacity(tails.len());
    let mut at = tails.last().copied();
    while let Some(p) = at {
        chain.push(pairs[p]);
        at = before[p];
    }
    chain.reverse();
    chain
}

/// Diff ops as they are made.
struct Ops(Vec<DiffOp>);

impl Ops {
    fn equal(&mut self, old_index: usize, new_index: usize, len: usize) {
        if len == 0 {
            return;
        }
        if let Some(DiffOp::Equal {
            old_index: o,
            new_index: n,
            len: l,
        }) = self.0.last_mut()
            && *o + *l == old_index
            && *n + *l == new_index
        {
            *l += len;
            return;
        }
        self.0.push(DiffOp::Equal {
            old_index,
            new_index,
            len,
        });
    }

    /// Lines `old` of `a` become lines `new` of `b`: the equal lines at
    /// either end are kept, the rest removed and added.
    fn gap(
        &mut self,
        a: &[&str],
        b: &[&str],
        old: std::ops::Range<usize>,
        new: std::ops::Range<usize>,
    ) {
        let same = |k: usize| a[old.start + k] == b[new.start + k];
        let max = old.len().min(new.len());
        let prefix = (0..max).take_while(|&k| same(k)).count();
        let same_end = |k: usize| a[old.end - 1 - k] == b[new.end - 1 - k];
        let suffix = (0..max - prefix).take_while(|&k| same_end(k)).count();
        self.equal(old.start, new.start, prefix);
        let (o, n) = (old.start + prefix, new.start + prefix);
        let (o_end, n_end) = (old.end - suffix, new.end - suffix);
        if o < o_end {
            self.0.push(DiffOp::Delete {
                old_index: o,
                old_len: o_end - o,
                new_index: n,
            });
        }
        if n < n_end {
            self.0.push(DiffOp::Insert {
                old_index: o_end,
                new_index: n,
                new_len: n_end - n,
            });
        }
        self.equal(o_end, n_end, suffix);
    }
}

#[cfg(test)]
mod tests;
