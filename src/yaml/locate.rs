//! Where a key sits in a YAML text: for checks that run after parsing (a
//! service key the catalogue does not know, say) to name the line, as the
//! parser's own errors do. It walks the same libyaml events as
//! [`super::check`], so it sees the document serde_yaml saw.

use super::events::{Kind, Parser};

/// The 1-based line and column of the key at `path` (mapping keys from the
/// document's root mapping), or `None` when the text has no such key.
pub fn locate(text: &str, path: &[&str]) -> Option<(usize, usize)> {
    let (last, parents) = path.split_last()?;
    let mut parser = Parser::new(text);
    let mut open: Vec<Open> = Vec::new();
    while let Some(event) = parser.next() {
        match event.kind {
            Kind::Start { mapping } => open.push(Open {
                mapping,
                expect_key: mapping,
                key: None,
            }),
            Kind::End => {
                open.pop();
                value_done(&mut open);
            }
            Kind::Scalar(value) => {
                let depth = open.len().saturating_sub(1);
                match open.last_mut() {
                    Some(top) if top.mapping && top.expect_key => {
                        top.key = Some(value);
                        top.expect_key = false;
                        let here = &open[depth];
                        if depth == parents.len()
                            && here.key.as_deref() == Some(last.as_bytes())
                            && (open[..depth].iter().zip(parents))
                                .all(|(o, p)| o.key.as_deref() == Some(p.as_bytes()))
                        {
                            return Some((event.line, event.column));
                        }
                    }
                    _ => value_done(&mut open),
                }
            }
            Kind::Alias => value_done(&mut open),
            Kind::Other => {}
        }
    }
    None
}

/// An open collection; for a mapping, whether its next node is a key and
/// the key whose value is being read.
struct Open {
    mapping: bool,
    expect_key: bool,
    key: Option<Vec<u8>>,
}

/// A value is complete: its mapping expects a key again.
fn value_done(open: &mut [Open]) {
    if let Some(top) = open.last_mut()
        && top.mapping
    {
        top.expect_key = true;
        top.key = None;
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
