//! How many connections the join service holds open: at most
//! [`Limits::max_connections`] in all (the accept loop waits for a free
//! place before accepting, so descriptors stay bounded) and at most
//! [`Limits::per_address`] from one client address (more are closed as
//! soon as they are accepted), so one client cannot take every place.

use super::Limits;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct Gate {
    places: Arc<Semaphore>,
    per_address: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// A connection's place; given back when dropped.
pub struct Ticket {
    gate: Arc<Gate>,
    peer: IpAddr,
    _place: OwnedSemaphorePermit,
}

/// A place in the global count, before the connection is accepted.
pub struct Place(OwnedSemaphorePermit);

impl Gate {
    pub fn new(limits: &Limits) -> Arc<Gate> {
        Arc::new(Gate {
            places: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            per_address: limits.per_address.max(1),
            open: Mutex::new(HashMap::new()),
        })
    }

    /// Wait for a free place.
    pub async fn place(&self) -> Place {
        Place(
            self.places
                .clone()
                .acquire_owned()
                .await
                .expect("the semaphore is never closed"),
        )
    }

    /// Admit a connection from `peer` into `place`, unless that address
    /// already holds its share.
    pub fn admit(self: &Arc<Self>, place: Place, peer: IpAddr) -> Option<Ticket> {
        let mut open = self.open.lock().unwrap();
        let n = open.entry(peer).or_insert(0);
        if *n >= self.per_address {
            return None;
        }
        *n += 1;
        Some(Ticket {
            gate: self.clone(),
            peer,
            _place: place.0,
        })
    }

    #[cfg(test)]
    fn open_from(&self, peer: IpAddr) -> usize {
        self.open.lock().unwrap().get(&peer).copied().unwrap_or(0)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut open = self.gate.open.lock().unwrap();
        if let Some(n) = open.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn places_are_capped_in_all_and_per_address() {
        let gate = Gate::new(&Limits {
            max_connections: 3,
            per_address: 2,
            ..Limits::default()
        });
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let t1 = gate.admit(gate.place().await, a).unwrap();
        let _t2 = gate.admit(gate.place().await, a).unwrap();
        assert!(
            gate.admit(gate.place().await, a).is_none(),
            "a third from a"
        );
        let _t3 = gate.admit(gate.place().await, b).unwrap();
        // All three places are taken: the next waits.
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), gate.place());
        assert!(waiting.await.is_err());
        drop(t1);
        assert_eq!(gate.open_from(a), 1);
        let _t4 = gate.admit(gate.place().await, a).unwrap();
    }
}
