use super::*;

#[test]
fn parses_sections_comments_and_continuations() {
    let ini = Ini::parse(
        "# comment\n[DEFAULT]\ndebug = true\n; other\n[database]\nconnection=mysql://x\nmulti = a\n  b\n\n[x]\nk: v\n",
    )
    .unwrap();
    assert_eq!(ini.get("DEFAULT", "debug"), Some("true"));
    assert_eq!(ini.get("database", "connection"), Some("mysql://x"));
    assert_eq!(ini.get("database", "multi"), Some("a\nb"));
    assert_eq!(ini.get("x", "k"), Some("v"));
}

#[test]
fn errors_name_the_line() {
    let cases = [
        ("debug = true\n", 1, "before any [section]"),
        ("[DEFAULT]\n\njust words\n", 3, "neither a [section]"),
        ("[DEFAULT\n", 1, "no closing"),
        ("[]\n", 1, "invalid section name"),
        ("[a]\n= x\n", 2, "invalid option name"),
    ];
    for (text, line, msg) in cases {
        let e = Ini::parse(text).unwrap_err();
        assert_eq!(e.line, line, "{text:?}");
        assert!(e.message.contains(msg), "{text:?}: {}", e.message);
    }
}

#[test]
fn line_breaks_and_spaces_oslo_config_reads_differently_are_refused() {
    // oslo.config reads `debug = true\r[database]\rconnection = …` as a
    // [database] section; dcn used to see one `debug` option.
    let bare_cr = "[DEFAULT]\ndebug = true\r[database]\rconnection = mysql://evil\n";
    let e = Ini::parse(bare_cr).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(
        e.message
            .contains("carriage return (\\r) not followed by a line feed")
            && e.message.contains("end lines with \\n"),
        "{e}"
    );
    // Python's universal newlines and str.strip()/splitlines() act on
    // these; each is refused with its code point.
    for c in [
        '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\x1f', '\u{85}', '\u{2028}', '\u{2029}', '\u{a0}',
        '\x00', '\x1b', '\x7f',
    ] {
        for text in [
            format!("[DEFAULT]\ndebug = true{c}[database]\n"),
            format!("[DEFAULT]\n{c}[database]\n"),
            format!("[DEFAULT]{c}\n"),
        ] {
            let e = Ini::parse(&text).unwrap_err();
            let code = format!("U+{:04X}", u32::from(c));
            assert!(e.line == 1 || e.line == 2, "{text:?}: {e}");
            assert!(e.message.contains(&code), "{text:?}: {e}");
        }
    }
    // \r\n line ends and tabs are fine.
    let ini = Ini::parse("[DEFAULT]\r\ndebug =\ttrue\r\n\tmore\r\n").unwrap();
    assert_eq!(ini.get("DEFAULT", "debug"), Some("true\nmore"));
}

#[test]
fn indentation_and_section_names_mean_what_they_mean_to_oslo_config() {
    // Indented lines continue the previous option, comment or not.
    let ini = Ini::parse("[DEFAULT]\na = 1\n  # not a comment\n").unwrap();
    assert_eq!(ini.get("DEFAULT", "a"), Some("1\n# not a comment"));
    for (text, line, msg) in [
        ("[DEFAULT]\n  debug = true\n", 2, "continues no option"),
        ("[DEFAULT]\na = 1\n# c\n  b = 2\n", 4, "continues no option"),
        ("[DEFAULT]\na = 1\n\n  b = 2\n", 4, "continues no option"),
        (
            "[ database ]\nconnection = x\n",
            1,
            "spaces inside its brackets",
        ),
    ] {
        let e = Ini::parse(text).unwrap_err();
        assert_eq!(e.line, line, "{text:?}: {e}");
        assert!(e.message.contains(msg), "{text:?}: {e}");
    }
}

#[test]
fn render_round_trips() {
    let mut ini = Ini::default();
    ini.set("DEFAULT", "a", "1");
    ini.set("x", "multi", "p\nq");
    ini.set("DEFAULT", "a", "2");
    let text = ini.to_string();
    assert_eq!(Ini::parse(&text).unwrap(), ini);
    assert!(text.starts_with("[DEFAULT]\na = 2\n"));
}

#[test]
fn repeated_sections_and_keys_read_as_oslo_config_reads_them() {
    // A repeated header adds to its section; a repeated key keeps its
    // first place with its last value, and a continuation line continues
    // the entry its option line set.
    let ini = Ini::parse("[a]\nk = 1\nx = 1\n[b]\nk = 2\n[a]\nk = 3\n  more\ny = 4\n").unwrap();
    assert_eq!(ini.sections().len(), 2);
    assert_eq!(ini.get("a", "k"), Some("3\nmore"));
    assert_eq!(ini.get("b", "k"), Some("2"));
    assert_eq!(ini.get("b", "x"), None);
    assert_eq!(ini.get("c", "k"), None);
    assert_eq!(
        ini.to_string(),
        "[a]\nk = 3\n    more\nx = 1\ny = 4\n\n[b]\nk = 2\n"
    );
    let mut ini = ini;
    assert_eq!(ini.set("b", "z", "5"), (1, 1));
    assert_eq!(ini.set("a", "x", "6"), (0, 1));
    let (section, entry) = ini.at((0, 1));
    assert_eq!(
        (section, entry.key.as_str(), entry.value.as_str()),
        ("a", "x", "6")
    );
    assert!(!ini.is_empty());
    assert!(Ini::parse("[a]\n[b]\n").unwrap().is_empty());
}
