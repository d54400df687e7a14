//! The crate's layout, as lib.rs maps it, held true: the control plane's side
//! (`centre`) and the edge's side (`edge`) never use each other, what both
//! share uses neither of them nor the commands above it, no modules import
//! each other in a circle, and every module says what it owns. And two
//! rules of what lives where: only the commands load the catalogue (the
//! rest is handed it), and only `openstack` speaks to the services under
//! the cloud (their tools and admin APIs).
//!
//! Read from the source text: every `crate::a::b` path outside tests is an
//! arrow from the module that writes it to module `a` (to `a::b` when `a` is
//! one of the sides, whose parts are checked against each other too).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The two sides: their parts are modules of their own in the graph.
const SIDES: [&str; 2] = ["centre", "edge"];

/// What sits above both sides: the commands and the tools that look at a
/// host from outside. Nothing shared may use these.
const COMMANDS: [&str; 6] = ["app", "cli", "lab", "reset", "status", "main"];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir` that is not test code: files declared as
/// `#[cfg(test)] mod x;` (and everything under their directory) are left
/// out.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    let test_modules: BTreeSet<String> = entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .flat_map(|p| test_module_names(&std::fs::read_to_string(p).unwrap()))
        .collect();
    for p in entries {
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        if test_modules.contains(&stem) || stem == "tests" {
            continue;
        }
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Names of `#[cfg(test)] mod name;` declarations in a file.
fn test_module_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("#[cfg(test)]") {
        rest = &rest[i + "#[cfg(test)]".len()..];
        let decl = rest.trim_start();
        if let Some(after) = decl.strip_prefix("mod ") {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if after[name.len()..].trim_start().starts_with(';') {
                names.push(name);
            }
        }
    }
    names
}

/// A file's code without its inline test module (at the end of the file, by
/// this crate's convention) and without comments.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module a path of the crate names: `a`, or `a::b` when `a` is a side.
fn module_of(segments: &[&str]) -> Option<String> {
    let first = *segments.first()?;
    if SIDES.contains(&first) {
        return Some(match segments.get(1) {
            Some(second) => format!("{first}::{second}"),
            None => first.to_string(),
        });
    }
    Some(first.to_string())
}

/// The module a source file belongs to.
fn module_of_file(path: &Path) -> String {
    let rel = path.strip_prefix(src()).unwrap().with_extension("");
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .filter(|p| p != "mod")
        .collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    module_of(&parts).unwrap()
}

/// Every arrow from a module to another, read from `crate::` paths.
fn graph() -> Graph {
    let mut files = Vec::new();
    sources(&src(), &mut files);
    let mut graph = Graph::new();
    for file in files {
        let from = module_of_file(&file);
        if from == "lib" {
            continue;
        }
        let text = code(&std::fs::read_to_string(&file).unwrap());
        let targets = graph.entry(from.clone()).or_default();
        for (i, _) in text.match_indices("crate::") {
            let path: String = text[i + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            if let Some(to) = module_of(&segments)
                && to != from
                && to.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            {
                targets.insert(to);
            }
        }
    }
    graph
}

fn side_of(module: &str) -> Option<&str> {
    SIDES
        .into_iter()
        .find(|s| module == *s || module.starts_with(&format!("{s}::")))
}

fn is_command(module: &str) -> bool {
    COMMANDS.contains(&module)
}

#[test]
fn each_side_uses_only_itself_and_what_both_share() {
    let mut wrong = Vec::new();
    for (from, targets) in graph() {
        for to in targets {
            let bad = match (side_of(&from), side_of(&to)) {
                (Some(a), Some(b)) => a != b,
                (Some(_), None) => is_command(&to),
                (None, Some(_)) => !is_command(&from),
                (None, None) => !is_command(&from) && is_command(&to),
            };
            if bad {
                wrong.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "these arrows break the map in lib.rs (a side may use only itself and what both share; \
         shared code uses neither side nor the commands): {wrong:#?}"
    );
}

#[test]
fn modules_import_each_other_in_no_circle() {
    let graph = graph();
    let circles = circles(&graph);
    assert!(
        circles.is_empty(),
        "modules that import each other in a circle (move what they share below both): {circles:#?}"
    );
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

#[test]
fn the_checks_see_an_arrow_that_breaks_the_map() {
    // The parser and the rules on a made-up graph: an edge module that
    // reaches into the centre, and two shared modules in a circle.
    let mut g = Graph::new();
    g.entry("edge::join".into())
        .or_default()
        .insert("centre::sites".into());
    g.entry("config".into())
        .or_default()
        .insert("recipes".into());
    g.entry("recipes".into())
        .or_default()
        .insert("config".into());
    assert_eq!(
        circles(&g),
        vec![vec!["config".to_string(), "recipes".to_string()]]
    );
    assert_eq!(side_of("edge::join"), Some("edge"));
    assert_eq!(side_of("centre::sites"), Some("centre"));
    assert_eq!(side_of("certs"), None);
    assert_eq!(
        module_of(&["centre", "sites", "Registry"]).as_deref(),
        Some("centre::sites")
    );
    assert_eq!(module_of(&["host", "Files"]).as_deref(), Some("host"));
    assert_eq!(
        test_module_names("#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod a { }"),
        ["tests"]
    );
}

#[test]
fn the_graph_holds_the_arrows_the_sources_write() {
    // Read from the real tree: if the reader missed `crate::` paths, the
    // other two tests would pass on an empty graph.
    let g = graph();
    assert!(g["edge::join"].contains("wire"), "{:?}", g["edge::join"]);
    assert!(g["centre::serve"].contains("centre::sites"));
    assert!(g["app"].contains("centre::standalone"));
    assert!(!g.contains_key("lib"));
}

#[test]
fn every_module_says_what_it_owns() {
    // The map in lib.rs names the top of each part; each file's own `//!`
    // says what it owns below that.
    let mut files = Vec::new();
    sources(&src(), &mut files);
    let silent: Vec<String> = files
        .iter()
        .filter(|f| {
            !std::fs::read_to_string(f)
                .unwrap()
                .trim_start()
                .starts_with("//!")
        })
        .map(|f| f.strip_prefix(src()).unwrap().display().to_string())
        .collect();
    assert!(
        silent.is_empty(),
        "modules without a module doc (`//!` at the top saying what the module owns): {silent:?}"
    );
}

/// Write a made-up source file at `path` under `root`, for the checks'
/// own tests.
fn write_source(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Files under `root` (a source tree), outside `app` and `recipes`, that
/// load the catalogue themselves.
fn catalogue_loaders(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(root, &mut files);
    let allowed = [root.join("app"), root.join("recipes")];
    files
        .iter()
        .filter(|f| !allowed.iter().any(|a| f.starts_with(a)))
        .filter(|f| code(&std::fs::read_to_string(f).unwrap()).contains("Recipes::embedded("))
        .map(|f| f.strip_prefix(root).unwrap().display().to_string())
        .collect()
}

#[test]
fn the_catalogue_is_loaded_where_a_command_starts_and_passed_in() {
    // `app::run` loads the recipes once; everything below takes them as a
    // parameter, so a test or another command can hand in its own.
    let loaders = catalogue_loaders(&src());
    assert!(
        loaders.is_empty(),
        "these load the recipes themselves instead of taking them from the command: {loaders:?}"
    );
    // The check sees a load where there is one, and not in a file's tests.
    let tree = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| write_source(tree.path(), path, text);
    let load = "fn f() { let r = Recipes::embedded(); }\n";
    write("app/mod.rs", load);
    write("centre/serve.rs", load);
    write(
        "edge/join.rs",
        &format!("fn g() {{}}\n#[cfg(test)]\nmod tests {{\n{load}}}\n"),
    );
    assert_eq!(catalogue_loaders(tree.path()), ["centre/serve.rs"]);
}

/// What only `openstack` may say to the services under the cloud: their
/// command-line tools and their APIs' admin paths.
const SERVICE_PROTOCOL: [&str; 10] = [
    "\"rabbitmqctl\"",
    "\"ovn-sbctl\"",
    "\"ovn-nbctl\"",
    "\"ovn-appctl\"",
    "\"nova-manage\"",
    "\"keystone-manage\"",
    "\"mysql\"",
    "\"/os-services",
    "\"/os-aggregates",
    "/resource_providers",
];

/// Files under `root` outside `openstack` whose code (not their tests or
/// comments) speaks one of [`SERVICE_PROTOCOL`], with what they say.
fn speaking_to_services(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(root, &mut files);
    files
        .iter()
        .filter(|f| !f.starts_with(root.join("openstack")))
        .flat_map(|f| {
            let text = code(&std::fs::read_to_string(f).unwrap());
            let name = f.strip_prefix(root).unwrap().display().to_string();
            (SERVICE_PROTOCOL.iter())
                .filter(move |p| text.contains(*p))
                .map(move |p| format!("{name}: {p}"))
        })
        .collect()
}

#[test]
fn only_the_openstack_module_speaks_to_the_services() {
    // RabbitMQ, MariaDB, OVN's databases, nova's and placement's admin
    // APIs: everything else reaches them through openstack's traits.
    let speaking = speaking_to_services(&src());
    assert!(
        speaking.is_empty(),
        "these speak to the services directly; put it behind src/openstack: {speaking:?}"
    );
    // The check sees it where it is, and not in comments or tests.
    let tree = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| write_source(tree.path(), path, text);
    let call = "fn f() { Cmd::new(\"x\", \"rabbitmqctl\"); }\n";
    write("openstack/messaging.rs", call);
    write("centre/sites/admin.rs", call);
    write("centre/serve/placer.rs", "// runs \"nova-manage\" \n");
    write(
        "edge/join.rs",
        "fn g() {}\n#[cfg(test)]\nmod tests {\n fn t() { get(\"/os-services\"); }\n}\n",
    );
    assert_eq!(
        speaking_to_services(tree.path()),
        ["centre/sites/admin.rs: \"rabbitmqctl\""]
    );
}
