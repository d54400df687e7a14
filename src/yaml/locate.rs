//! Where a key sits in a YAML text: for checks that run after parsing (a
//! service key the catalogue does not know, say) to name the line, as the
//! parser's own errors do. It walks the same libyaml events as
//! [`super::check`], so it sees the document serde_yaml saw.

use super::events::{Kind, Parser};

/// The 1-based line and column of the node at `path` in `text`, or
/// `None` when the text has none there. Each segment is a mapping key, or
/// the index of a sequence item (`setup`, `0`, `name`); a path that ends
/// at a key points at the key, one that ends at an item at the item.
pub fn locate(text: &str, path: &[&str]) -> Option<(usize, usize)> {
    if path.is_empty() {
        return None;
    }
    let mut parser = Parser::new(text);
    let mut open: Vec<Open> = Vec::new();
    while let Some(event) = parser.next() {
        let at = Some((event.line, event.column));
        match event.kind {
            Kind::Start { mapping } => {
                if item_matches(&open, path) {
                    return at;
                }
                open.push(Open {
                    mapping,
                    expect_key: mapping,
                    key: None,
                    index: 0,
                })
            }
            Kind::End => {
                open.pop();
                value_done(&mut open);
            }
            Kind::Scalar(value) => match open.last_mut() {
                Some(top) if top.mapping && top.expect_key => {
                    top.key = Some(value);
                    top.expect_key = false;
                    if open.len() == path.len() && on_path(&open, path) {
                        return at;
                    }
                }
                _ => {
                    if item_matches(&open, path) {
                        return at;
                    }
                    value_done(&mut open);
                }
            },
            Kind::Alias => {
                if item_matches(&open, path) {
                    return at;
                }
                value_done(&mut open)
            }
            Kind::Other => {}
        }
    }
    None
}

/// An open collection; for a mapping, whether its next node is a key and
/// the key whose value is being read; for a sequence, the index of the
/// item being read.
struct Open {
    mapping: bool,
    expect_key: bool,
    key: Option<Vec<u8>>,
    index: usize,
}

/// The open collections' current segments equal `path`, segment by
/// segment, as far as they go.
fn on_path(open: &[Open], path: &[&str]) -> bool {
    open.iter().zip(path).all(|(o, p)| {
        if o.mapping {
            o.key.as_deref() == Some(p.as_bytes())
        } else {
            p.parse::<usize>().ok() == Some(o.index)
        }
    })
}

/// The node starting now is the sequence item `path` ends at.
fn item_matches(open: &[Open], path: &[&str]) -> bool {
    open.len() == path.len() && open.last().is_some_and(|o| !o.mapping) && on_path(open, path)
}

/// A value is complete: its mapping expects a key again, its sequence
/// moves to the next item.
fn value_done(open: &mut [Open]) {
    if let Some(top) = open.last_mut() {
        if top.mapping {
            top.expect_key = true;
            top.key = None;
        } else {
            top.index += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::locate;

    const TEXT: &str = "\
kind: SiteConfig
services:
  novaCompute:
    customServiceConfig: x
nodes:
  n1:
    services:
      cinder: {}
  n2: {services: {bad: 1}}
list:
  - services: 1
";

    #[test]
    fn keys_are_found_at_their_line_and_column() {
        assert_eq!(locate(TEXT, &["kind"]), Some((1, 1)));
        assert_eq!(locate(TEXT, &["services", "novaCompute"]), Some((3, 3)));
        assert_eq!(
            locate(TEXT, &["nodes", "n1", "services", "cinder"]),
            Some((8, 7))
        );
        assert_eq!(
            locate(TEXT, &["nodes", "n2", "services", "bad"]),
            Some((9, 19))
        );
    }

    #[test]
    fn sequence_items_are_found_by_their_index() {
        let text = "setup:\n- name: a\n  run: [x]\n- {name: b, run: [y, z]}\n- plain\n";
        assert_eq!(locate(text, &["setup", "0", "name"]), Some((2, 3)));
        assert_eq!(locate(text, &["setup", "1", "run"]), Some((4, 13)));
        assert_eq!(locate(text, &["setup", "1", "run", "1"]), Some((4, 22)));
        assert_eq!(locate(text, &["setup", "2"]), Some((5, 3)));
        assert_eq!(locate(text, &["setup", "1"]), Some((4, 3)));
        assert_eq!(locate(text, &["setup", "3"]), None);
        assert_eq!(locate(text, &["setup", "x"]), None);
    }

    #[test]
    fn a_key_elsewhere_or_absent_is_not_found() {
        // `customServiceConfig` exists, but not under `nodes`; a value is
        // not a key; sequence items have no keys.
        assert_eq!(locate(TEXT, &["nodes", "customServiceConfig"]), None);
        assert_eq!(locate(TEXT, &["SiteConfig"]), None);
        assert_eq!(locate(TEXT, &["list", "services"]), None);
        assert_eq!(locate(TEXT, &["novaCompute"]), None);
        assert_eq!(locate(TEXT, &[]), None);
        assert_eq!(locate("a: [", &["a", "b"]), None);
    }
}
