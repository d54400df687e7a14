//! Whether each OVN chassis is alive, for the views an operator asks for
//! (`dcn node list`, `dcn site status`), in the time of a few reads
//! however many chassis there are.
//!
//! Waiting for every chassis to answer a fresh ping took 2.6 s with 300
//! edge hosts, grew with them, and one dead chassis made every view wait
//! the whole answer time. Instead the join service pings every chassis
//! every [`PING_EVERY`] and keeps each ping's generation and time
//! ([`ping_forever`]). A view reads the generation each chassis last
//! processed and judges it by the newest ping that had [`ANSWER`] to be
//! answered. A chassis that comes back therefore shows up at once (it
//! processes the current generation), and one that dies shows down within
//! `PING_EVERY + ANSWER`.
//!
//! Without a usable ping on record (the join service is stopped, or the
//! southbound's generations went back, as after a restore), a view pings
//! and waits for the answers itself, as before.

use crate::host::{FileSpec, Host};
use crate::openstack::PlaneState;
use crate::openstack::southbound::{CHASSIS_ANSWER, Southbound};
use crate::paths::STATE_DIR;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often the join service pings every chassis. Each ping makes every
/// ovn-controller write one row, and neutron reads each of those writes.
pub const PING_EVERY: Duration = Duration::from_secs(30);

/// How long a chassis has to answer a ping before a view calls it down.
pub const ANSWER: Duration = Duration::from_secs(5);

/// The pings on record, oldest first.
const LOG: &str = "/var/lib/dcn/chassis-pings.json";

/// How many pings the record keeps.
const KEPT: usize = 8;

/// One ping: the `nb_cfg` generation it asked every chassis to process,
/// and when (milliseconds since the epoch, on this host's clock).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Ping {
    generation: i64,
    at_ms: u64,
}

/// The join service's pinger: every [`PING_EVERY`], for as long as the
/// service runs.
pub fn ping_forever(host: &Host, southbound: &dyn Southbound) {
    loop {
        if let Err(e) = record_ping(host, southbound, SystemTime::now()) {
            tracing::warn!("pinging the OVN chassis: {e:#}");
        }
        std::thread::sleep(PING_EVERY);
    }
}

/// Ping every chassis and keep the ping on record.
pub fn record_ping(host: &Host, southbound: &dyn Southbound, now: SystemTime) -> Result<()> {
    let generation = southbound.ping()?;
    let mut pings = read(host);
    pings.push(Ping {
        generation,
        at_ms: millis(now),
    });
    let pings = &pings[pings.len().saturating_sub(KEPT)..];
    host.files.ensure_dir(STATE_DIR, &FileSpec::private_dir())?;
    let text = serde_json::to_string(pings).expect("serialisable") + "\n";
    host.files
        .write(LOG, text.as_bytes(), &FileSpec::public())?;
    Ok(())
}

/// Chassis by host name, up or down, judged by the newest ping on record
/// that had time to be answered; without one, by a ping of its own.
pub fn chassis_states(
    host: &Host,
    southbound: &dyn Southbound,
    now: SystemTime,
) -> Result<BTreeMap<String, PlaneState>> {
    let Some(reference) = reference(&read(host), now) else {
        return southbound.chassis_states(CHASSIS_ANSWER);
    };
    let generations = southbound.generations()?;
    if generations.current < reference.generation {
        tracing::debug!(
            "the southbound is at generation {}, before the last ping's {}: pinging",
            generations.current,
            reference.generation
        );
        return southbound.chassis_states(CHASSIS_ANSWER);
    }
    Ok((generations.chassis.into_iter())
        .map(|(host, processed)| {
            let up = processed.is_some_and(|g| g >= reference.generation);
            (host, if up { PlaneState::Up } else { PlaneState::Down })
        })
        .collect())
}

/// The newest ping at least [`ANSWER`] old and recent enough that the
/// pinger is still running (two rounds and the answer time).
fn reference(pings: &[Ping], now: SystemTime) -> Option<Ping> {
    let now = millis(now);
    let answer = ANSWER.as_millis() as u64;
    let recent = (2 * PING_EVERY + ANSWER).as_millis() as u64;
    (pings.iter().rev())
        .find(|p| p.at_ms + answer <= now && now <= p.at_ms + recent)
        .copied()
}

/// The pings on record; none when the record is missing or unreadable
/// (the next ping writes it anew).
fn read(host: &Host) -> Vec<Ping> {
    match host.files.read_string(LOG) {
        Ok(Some(text)) => serde_json::from_str(&text).unwrap_or_else(|e| {
            tracing::debug!("{LOG} is unreadable ({e}); starting it anew");
            Vec::new()
        }),
        Ok(None) => Vec::new(),
        Err(e) => {
            tracing::debug!("reading {LOG}: {e:#}");
            Vec::new()
        }
    }
}

fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::RecordingRunner;
    use crate::openstack::southbound::Generations;
    use std::sync::{Arc, Mutex};

    /// A southbound at generation `current`, whose chassis processed
    /// `chassis`; it counts the pings it was asked for and the views that
    /// waited for answers.
    #[derive(Default)]
    struct Sb {
        current: Mutex<i64>,
        chassis: BTreeMap<String, Option<i64>>,
        pings: Mutex<usize>,
        waited: Mutex<usize>,
    }

    impl Southbound for Sb {
        fn chassis_states(&self, _: Duration) -> Result<BTreeMap<String, PlaneState>> {
            *self.waited.lock().unwrap() += 1;
            Ok(BTreeMap::new())
        }
        fn ping(&self) -> Result<i64> {
            *self.pings.lock().unwrap() += 1;
            let mut current = self.current.lock().unwrap();
            *current += 1;
            Ok(*current)
        }
        fn generations(&self) -> Result<Generations> {
            Ok(Generations {
                current: *self.current.lock().unwrap(),
                chassis: self.chassis.clone(),
            })
        }
        fn cut_off(&self, _: &[String]) -> Result<()> {
            unreachable!()
        }
        fn watch_chassis_options(&self, _: &mut dyn FnMut(&str)) -> Result<()> {
            unreachable!()
        }
    }

    fn southbound(current: i64, chassis: &[(&str, Option<i64>)]) -> Sb {
        Sb {
            current: Mutex::new(current),
            chassis: (chassis.iter()).map(|(h, g)| (h.to_string(), *g)).collect(),
            ..Default::default()
        }
    }

    fn host() -> (tempfile::TempDir, Host) {
        let root = tempfile::tempdir().unwrap();
        let host = Host::with_runner(root.path(), Arc::new(RecordingRunner::default()), false);
        (root, host)
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs)
    }

    #[test]
    fn a_view_judges_each_chassis_by_the_last_ping_old_enough_to_be_answered() {
        let (_root, host) = host();
        let sb = southbound(7, &[]);
        record_ping(&host, &sb, at(0)).unwrap(); // generation 8
        record_ping(&host, &sb, at(30)).unwrap(); // generation 9, too young below
        let sb = southbound(
            9,
            &[
                ("edge1", Some(9)),
                ("edge2", Some(8)),
                ("edge3", Some(7)),
                ("edge4", None),
            ],
        );
        let states = chassis_states(&host, &sb, at(32)).unwrap();
        assert_eq!(states["edge1"], PlaneState::Up);
        // It answered the ping it had time to answer.
        assert_eq!(states["edge2"], PlaneState::Up);
        assert_eq!(states["edge3"], PlaneState::Down);
        assert_eq!(states["edge4"], PlaneState::Down);
        // Once the newest ping had its time, edge2 has missed it.
        let states = chassis_states(&host, &sb, at(36)).unwrap();
        assert_eq!(states["edge2"], PlaneState::Down);
        assert_eq!(states["edge1"], PlaneState::Up);
        // The view itself pinged nothing and waited for nobody.
        assert_eq!(*sb.pings.lock().unwrap(), 0);
        assert_eq!(*sb.waited.lock().unwrap(), 0);
    }

    #[test]
    fn without_a_recent_ping_a_view_pings_and_waits_itself() {
        let (_root, host) = host();
        let sb = southbound(7, &[("edge1", Some(8))]);
        // Nothing on record.
        chassis_states(&host, &sb, at(0)).unwrap();
        assert_eq!(*sb.waited.lock().unwrap(), 1);
        // Only a ping too young to judge by.
        record_ping(&host, &sb, at(0)).unwrap();
        chassis_states(&host, &sb, at(2)).unwrap();
        assert_eq!(*sb.waited.lock().unwrap(), 2);
        // A ping so old that the pinger must have stopped.
        chassis_states(&host, &sb, at(66)).unwrap();
        assert_eq!(*sb.waited.lock().unwrap(), 3);
        // Within those bounds, the record serves.
        assert_eq!(
            chassis_states(&host, &sb, at(64)).unwrap()["edge1"],
            PlaneState::Up
        );
        assert_eq!(*sb.waited.lock().unwrap(), 3);
    }

    #[test]
    fn a_southbound_whose_generations_went_back_is_pinged_anew() {
        let (_root, host) = host();
        let sb = southbound(40, &[]);
        record_ping(&host, &sb, at(0)).unwrap(); // generation 41
        // Restored from a backup taken at generation 12: every chassis
        // processed what the southbound now holds.
        let restored = southbound(12, &[("edge1", Some(12))]);
        chassis_states(&host, &restored, at(10)).unwrap();
        assert_eq!(*restored.waited.lock().unwrap(), 1);
    }

    #[test]
    fn the_record_keeps_the_last_pings_and_survives_garbage() {
        let (_root, host) = host();
        host.files
            .write(LOG, b"{not json", &FileSpec::public())
            .unwrap();
        assert!(read(&host).is_empty());
        let sb = southbound(0, &[]);
        for i in 0..12 {
            record_ping(&host, &sb, at(i * 30)).unwrap();
        }
        let pings = read(&host);
        assert_eq!(pings.len(), KEPT);
        assert_eq!(pings.last().unwrap().generation, 12);
        assert_eq!(pings[0].generation, 5);
        assert_eq!(*sb.pings.lock().unwrap(), 12);
    }
}
