//! Embeds every file under `recipes/` into the binary, so the one static
//! `dcn` carries its role and service definitions.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=recipes");
    let mut files = Vec::new();
    collect(Path::new("recipes"), &mut files);
    files.sort();
    let mut out = String::from(
        "/// (path under recipes/, contents) of every recipe file.\npub static EMBEDDED: &[(&str, &str)] = &[\n",
    );
    for f in &files {
        let rel = f
            .strip_prefix("recipes")
            .unwrap()
            .to_string_lossy()
            .trim_start_matches('/')
            .to_string();
        let abs = std::fs::canonicalize(f).unwrap();
        writeln!(
            out,
            "    ({rel:?}, include_str!({:?})),",
            abs.display().to_string()
        )
        .unwrap();
        println!("cargo:rerun-if-changed={}", f.display());
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("recipes_embedded.rs");
    std::fs::write(dest, out).unwrap();
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}
