//! Where the scale harness's simulated edge hosts go: their names, their
//! sites (a fixed number of hosts each, as a user's sites), the lab
//! container that carries each one, and its address there. Pure, so the
//! layout is checked without a lab.

use anyhow::{Result, bail};
use std::net::Ipv4Addr;

/// Most simulated hosts one container carries: ovn-controller numbers the
/// chassis of one Open vSwitch with a single character in its tunnel port
/// names, which allows 37, and each needs an address of its own (OVN's
/// southbound keeps one tunnel endpoint per address).
pub const MAX_PER_CARRIER: usize = 30;

/// The first host address of a carrier's chassis in its /24 (the carrier
/// itself is .10).
const FIRST_HOST_OCTET: u8 = 20;

/// One simulated edge host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimHost {
    /// Its host name, which is its chassis name (`s001n01`).
    pub name: String,
    /// Its site (`s001`): an availability zone and aggregate.
    pub site: String,
    /// The lab container that carries it.
    pub carrier: String,
    /// Its address on the carrier's subnet: its tunnel endpoint.
    pub address: Ipv4Addr,
    /// Its compute load, if it has one.
    pub compute: Option<ComputeLoad>,
}

/// What sends a simulated host's compute load to the control plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ComputeLoad {
    /// A real nova-compute with nova's fake virt driver.
    Fake,
    /// The carrier's compute replayer, which sends what that nova-compute
    /// sends (`super::compute_replay`).
    Replayed,
    /// Neither (a host switched off for `--calibrate`'s window without
    /// compute load).
    Off,
}

impl ComputeLoad {
    /// Its name on `dcn lab chassis --compute`.
    pub fn name(self) -> &'static str {
        match self {
            ComputeLoad::Fake => "fake",
            ComputeLoad::Replayed => "replayed",
            ComputeLoad::Off => "off",
        }
    }

    /// Whether nova hears from the host's compute.
    pub fn reports(self) -> bool {
        self != ComputeLoad::Off
    }
}

impl std::str::FromStr for ComputeLoad {
    type Err = String;
    fn from_str(s: &str) -> Result<ComputeLoad, String> {
        match s {
            "fake" => Ok(ComputeLoad::Fake),
            "replayed" => Ok(ComputeLoad::Replayed),
            "off" => Ok(ComputeLoad::Off),
            _ => Err(format!("{s:?}: give fake, replayed or off")),
        }
    }
}

/// The layout of `hosts` simulated hosts: `per_site` per site, up to
/// `per_carrier` in each of `carriers` (lab containers on their own /24,
/// the address of each given), the first `fake` with a nova-compute of
/// their own, the next `replayed` with a replayed one.
pub fn layout(
    hosts: usize,
    per_site: usize,
    per_carrier: usize,
    (fake, replayed): (usize, usize),
    carriers: &[(String, Ipv4Addr)],
) -> Result<Vec<SimHost>> {
    if per_site == 0 || per_carrier == 0 || per_carrier > MAX_PER_CARRIER {
        bail!("hosts per site must be at least 1, and per container 1 to {MAX_PER_CARRIER}");
    }
    let room = carriers.len() * per_carrier;
    if hosts > room {
        bail!(
            "{hosts} simulated hosts need {} carrier containers of {per_carrier}; the lab has {}: bring one up with `dcn lab up --spare {}`",
            hosts.div_ceil(per_carrier),
            carriers.len(),
            hosts.div_ceil(per_carrier)
        );
    }
    (0..hosts)
        .map(|i| {
            let (site, within) = (i / per_site + 1, i % per_site + 1);
            let (carrier, address) = &carriers[i / per_carrier];
            let octet = FIRST_HOST_OCTET as usize + i % per_carrier;
            let [a, b, c, _] = address.octets();
            Ok(SimHost {
                name: format!("s{site:03}n{within:02}"),
                site: format!("s{site:03}"),
                carrier: carrier.clone(),
                address: Ipv4Addr::new(a, b, c, octet as u8),
                compute: match i {
                    i if i < fake => Some(ComputeLoad::Fake),
                    i if i < fake + replayed => Some(ComputeLoad::Replayed),
                    _ => None,
                },
            })
        })
        .collect()
}

/// The steps of a run: the sizes given, in order, each at most `max`.
pub fn steps(list: &str) -> Result<Vec<usize>> {
    let mut steps = Vec::new();
    for part in list.split(',') {
        let n: usize = part.trim().parse().map_err(|_| {
            anyhow::anyhow!("{part:?} is not a number of hosts; give sizes like 10,100,300")
        })?;
        if n == 0 || steps.last().is_some_and(|last| n <= *last) {
            bail!("the sizes must grow, from 1 up: {list:?}");
        }
        steps.push(n);
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn carriers(n: u8) -> Vec<(String, Ipv4Addr)> {
        (1..=n)
            .map(|k| (format!("edge{k}"), Ipv4Addr::new(10, 240, k, 10)))
            .collect()
    }

    #[test]
    fn hosts_fill_sites_and_carriers_in_order() {
        let l = layout(25, 10, 12, (11, 3), &carriers(3)).unwrap();
        assert_eq!(l.len(), 25);
        assert_eq!(
            (l[0].name.as_str(), l[0].site.as_str()),
            ("s001n01", "s001")
        );
        assert_eq!(
            (l[10].name.as_str(), l[10].site.as_str()),
            ("s002n01", "s002")
        );
        assert_eq!(l[24].name, "s003n05");
        assert_eq!(l[11].carrier, "edge1");
        assert_eq!(l[12].carrier, "edge2");
        assert_eq!(l[0].address, Ipv4Addr::new(10, 240, 1, 20));
        assert_eq!(l[12].address, Ipv4Addr::new(10, 240, 2, 20));
        assert_eq!(l[24].address, Ipv4Addr::new(10, 240, 3, 20));
        assert_eq!(
            l[10].compute,
            Some(ComputeLoad::Fake),
            "the first 11 compute"
        );
        assert_eq!(
            l[11].compute,
            Some(ComputeLoad::Replayed),
            "the next 3 replayed"
        );
        assert_eq!(l[13].compute, Some(ComputeLoad::Replayed));
        assert_eq!(l[14].compute, None, "the rest chassis only");
        let mut addresses: Vec<_> = l.iter().map(|h| h.address).collect();
        addresses.dedup();
        assert_eq!(addresses.len(), 25, "every host its own tunnel endpoint");
    }

    #[test]
    fn too_many_hosts_for_the_carriers_says_how_many_are_needed() {
        let e = layout(61, 10, 30, (0, 0), &carriers(2))
            .unwrap_err()
            .to_string();
        assert!(e.contains("need 3 carrier containers"), "{e}");
        assert!(e.contains("--spare 3"), "{e}");
        assert!(layout(10, 10, 31, (0, 0), &carriers(1)).is_err());
    }

    #[test]
    fn steps_must_grow() {
        assert_eq!(steps("10, 100,300").unwrap(), vec![10, 100, 300]);
        assert!(steps("10,10").is_err());
        assert!(steps("0").is_err());
        assert!(steps("ten").unwrap_err().to_string().contains("\"ten\""));
    }

    #[test]
    fn a_compute_load_is_named_as_the_carrier_is_told() {
        for load in [ComputeLoad::Fake, ComputeLoad::Replayed, ComputeLoad::Off] {
            assert_eq!(load.name().parse::<ComputeLoad>(), Ok(load));
        }
        assert!(
            "real"
                .parse::<ComputeLoad>()
                .unwrap_err()
                .contains("fake, replayed or off")
        );
    }
}
