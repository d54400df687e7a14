//! Where a node's deploy starts, from what the centre knows of it: a
//! re-run leaves placed nodes alone, follows nodes that are under way, and
//! retries failed or silent ones from the failed stretch — the install
//! again while nothing usable is on the disk, else a reset of the
//! installed system, whose first-boot join runs again.

use super::watch::Seen;

/// The first step of a node's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Placed: nothing to do.
    Placed,
    /// Make its ISO and boot it through the BMC.
    Boot,
    /// Eject the media and reset the node: its disk holds the installed
    /// system, whose join runs again.
    Reset,
    /// It is installing or joining right now: follow it.
    Follow,
}

/// The start for a node the centre sees as `seen`.
pub fn start(seen: &Seen) -> Start {
    if seen.placed {
        return Start::Placed;
    }
    if seen.none {
        return Start::Boot;
    }
    match (seen.failed.is_some() || seen.silent, seen.on_disk) {
        (false, _) => Start::Follow,
        (true, false) => Start::Boot,
        (true, true) => Start::Reset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(phase: &str, on_disk: bool) -> Seen {
        Seen {
            phase: phase.into(),
            none: false,
            on_disk,
            booted: false,
            placed: false,
            failed: None,
            retrying: false,
            silent: false,
            unheard: false,
            quiet_seconds: 0,
        }
    }

    #[test]
    fn placed_nodes_are_left_alone_and_new_ones_boot() {
        let placed = Seen {
            placed: true,
            ..seen("placed", true)
        };
        assert_eq!(start(&placed), Start::Placed);
        let new = Seen {
            none: true,
            ..seen("-", false)
        };
        assert_eq!(start(&new), Start::Boot);
    }

    #[test]
    fn nodes_under_way_are_followed() {
        for (p, disk) in [
            ("powered-on", false),
            ("installer-started", false),
            ("disk-written", true),
            ("join-step", true),
        ] {
            assert_eq!(start(&seen(p, disk)), Start::Follow, "{p}");
        }
    }

    #[test]
    fn failed_or_silent_nodes_resume_from_the_failed_stretch() {
        let failed = |disk| Seen {
            failed: Some("it broke".into()),
            ..seen("failed", disk)
        };
        let silent = |disk| Seen {
            silent: true,
            ..seen("silent (last: x)", disk)
        };
        // Nothing usable on the disk yet: install again.
        assert_eq!(start(&failed(false)), Start::Boot);
        assert_eq!(start(&silent(false)), Start::Boot);
        // The installed system is there: reset it, its join runs again.
        assert_eq!(start(&failed(true)), Start::Reset);
        assert_eq!(start(&silent(true)), Start::Reset);
    }
}
