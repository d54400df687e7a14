//! Reading the guest's serial console: its `DCNGUEST` report lines grouped
//! into one [`GuestBoot`] per boot.

use std::collections::BTreeMap;

/// What one boot of the guest reported on its console.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GuestBoot {
    pub boot: String,
    /// Every `key=value` line of this boot, in order.
    pub events: Vec<BTreeMap<String, String>>,
}

impl GuestBoot {
    /// The first event named `event` (e.g. `dhcp`, `metadata`).
    pub fn event(&self, event: &str) -> Option<&BTreeMap<String, String>> {
        self.events
            .iter()
            .find(|e| e.get("event").map(String::as_str) == Some(event))
    }

    /// The periodic checks (`round=N icmp=.. tcp=.. dhcp=..`), in order.
    pub fn rounds(&self) -> Vec<&BTreeMap<String, String>> {
        self.events
            .iter()
            .filter(|e| e.contains_key("round"))
            .collect()
    }
}

/// The guest's reports in a console log, one [`GuestBoot`] per boot, in
/// order. Lines look like `DCNGUEST boot=1a2b3c4d event=dhcp ip=... uptime=3.2`.
pub fn parse_console(log: &str) -> Vec<GuestBoot> {
    let mut boots: Vec<GuestBoot> = Vec::new();
    for line in log.lines() {
        let Some(at) = line.find("DCNGUEST ") else {
            continue;
        };
        let fields: BTreeMap<String, String> = line[at + 9..]
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_end_matches('\r').to_string()))
            .collect();
        let Some(boot) = fields.get("boot").cloned() else {
            continue;
        };
        match boots.last_mut() {
            Some(b) if b.boot == boot => b.events.push(fields),
            _ => boots.push(GuestBoot {
                boot,
                events: vec![fields],
            }),
        }
    }
    boots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_reports_are_grouped_by_boot() {
        let log = "\
[    1.0] random kernel line
DCNGUEST boot=aaaa1111 event=start uptime=1.20
DCNGUEST boot=aaaa1111 event=dhcp ip=192.168.77.5 lease=43200 uptime=4.00\r
login noise DCNGUEST boot=aaaa1111 round=1 icmp=ok tcp=fail dhcp=ok uptime=9.1
DCNGUEST no boot field
DCNGUEST boot=bbbb2222 event=start uptime=0.9
DCNGUEST boot=bbbb2222 round=1 icmp=ok tcp=ok dhcp=ok uptime=7.0
";
        let boots = parse_console(log);
        assert_eq!(boots.len(), 2);
        assert_eq!(boots[0].event("dhcp").unwrap()["ip"], "192.168.77.5");
        assert_eq!(boots[0].event("dhcp").unwrap()["uptime"], "4.00");
        assert_eq!(boots[0].rounds()[0]["tcp"], "fail");
        assert_eq!(boots[1].boot, "bbbb2222");
        assert_eq!(boots[1].rounds()[0]["tcp"], "ok");
        assert!(boots[1].event("metadata").is_none());
    }
}
