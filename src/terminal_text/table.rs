//! Columns of text for a terminal, whatever the text. Rust's format widths
//! (`{:<w$}`) panic above 65,535 and a release build aborts on a panic, so
//! a column's width is never a format width here: cells are padded with
//! spaces pushed by hand. Each cell is made safe ([`super::sanitize`]) and
//! cut to its column's stated maximum (`…` marks the cut), so one 100 KB
//! name from a BMC, a node or a config costs one bounded cell, not the
//! table. Widths count characters (a wide CJK character counts as one:
//! the columns may then be off by a little, never broken).

use super::sanitize;
use std::borrow::Cow;

/// One column: its heading, and the fewest and most characters it takes.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    heading: &'static str,
    min: usize,
    max: usize,
}

impl Column {
    /// A column of at most `max` characters (longer cells are cut).
    pub const fn new(heading: &'static str, max: usize) -> Column {
        Column {
            heading,
            min: 0,
            max,
        }
    }

    /// At least `min` characters wide, however short its cells.
    pub const fn at_least(mut self, min: usize) -> Column {
        self.min = min;
        self
    }
}

/// A table: a heading line (unless every heading is empty), then a line
/// per row; columns padded to their widest cell within their bounds, the
/// last one not padded.
#[derive(Debug, Clone)]
pub struct Table {
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
    gap: usize,
    indent: &'static str,
}

impl Table {
    /// Columns two spaces apart.
    pub fn new(columns: &[Column]) -> Table {
        Table {
            columns: columns.to_vec(),
            rows: Vec::new(),
            gap: 2,
            indent: "",
        }
    }

    /// `n` spaces between columns.
    pub fn gap(mut self, n: usize) -> Table {
        self.gap = n;
        self
    }

    /// Every line starts with `prefix`.
    pub fn indent(mut self, prefix: &'static str) -> Table {
        self.indent = prefix;
        self
    }

    /// Add a row: each cell made safe and cut to its column's maximum. A
    /// missing cell is empty; cells beyond the columns are dropped.
    pub fn row<S: AsRef<str>>(&mut self, cells: impl IntoIterator<Item = S>) {
        let mut row: Vec<String> = cells
            .into_iter()
            .zip(&self.columns)
            .map(|(text, col)| cell(text.as_ref(), col.max))
            .collect();
        row.resize(self.columns.len(), String::new());
        self.rows.push(row);
    }

    /// The lines, each ending in a newline, without trailing spaces.
    pub fn render(&self) -> String {
        let widths: Vec<usize> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, col)| {
                let widest = self
                    .rows
                    .iter()
                    .map(|r| r[i].chars().count())
                    .chain([col.heading.chars().count()])
                    .max()
                    .unwrap_or(0);
                widest.clamp(col.min, col.max.max(col.min))
            })
            .collect();
        let mut out = String::new();
        let headings: Vec<String> = self.columns.iter().map(|c| c.heading.to_string()).collect();
        let headed = headings.iter().any(|h| !h.is_empty());
        for row in headed.then_some(&headings).into_iter().chain(&self.rows) {
            let mut line = String::from(self.indent);
            for (i, text) in row.iter().enumerate() {
                if i + 1 == row.len() {
                    line.push_str(text);
                } else {
                    line.push_str(&pad(text, widths[i] + self.gap));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Text from outside as one cell of at most `max` characters: made safe,
/// then cut. Costs about `max` characters' work whatever the text's length.
pub fn cell(text: &str, max: usize) -> String {
    // Escaping only lengthens text, so the first max + 1 characters decide
    // both what is shown and whether it is cut.
    cut(&sanitize(head(text, max.saturating_add(1))), max).into_owned()
}

/// The first `max` characters of `text` (all of it when shorter), without
/// copying: the one way dcn bounds text it keeps, sends or logs.
pub fn head(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// At most `max` characters of `text`, the last one `…` when it was cut.
pub fn cut(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some(_) if max == 0 => Cow::Borrowed(""),
        Some(_) => {
            // The byte where the (max - 1)th character ends.
            let end = text
                .char_indices()
                .nth(max - 1)
                .map_or(text.len(), |(i, _)| i);
            let mut t = String::with_capacity(end + '…'.len_utf8());
            t.push_str(&text[..end]);
            t.push('…');
            Cow::Owned(t)
        }
    }
}

/// `text` followed by spaces up to `width` characters (none when it is
/// that long already): padding without a format width.
pub fn pad(text: &str, width: usize) -> String {
    let n = text.chars().count();
    let mut out = String::with_capacity(text.len() + width.saturating_sub(n));
    out.push_str(text);
    out.extend(std::iter::repeat_n(' ', width.saturating_sub(n)));
    out
}

#[cfg(test)]
mod tests;
