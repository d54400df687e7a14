//! Man pages generated from the clap definition: `dcn.1` and one page per
//! subcommand (`dcn-bundle-verify.1`). They are committed under
//! `docs/man/`, and a test fails when they drift from the code.

/// Every page as (file name, roff text).
pub fn pages() -> Vec<(String, Vec<u8>)> {
    let mut cmd = super::command();
    cmd.build();
    let mut out = Vec::new();
    collect(&cmd, "dcn", &mut out);
    out
}

fn collect(cmd: &clap::Command, name: &str, out: &mut Vec<(String, Vec<u8>)>) {
    if cmd.is_hide_set() {
        return;
    }
    let page_cmd = cmd
        .clone()
        .name(name.to_string())
        .bin_name(name.replace('-', " "));
    let mut buf = Vec::new();
    clap_mangen::Man::new(page_cmd)
        .date("")
        .render(&mut buf)
        .expect("rendering to memory cannot fail");
    out.push((format!("{name}.1"), buf));
    for sub in cmd.get_subcommands() {
        if sub.get_name() != "help" {
            collect(sub, &format!("{name}-{}", sub.get_name()), out);
        }
    }
}
