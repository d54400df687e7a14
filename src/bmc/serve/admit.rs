//! Connection slots: a global cap and a cap per client address, so that a
//! client holding many connections open (slowloris) only uses up its own
//! share. A [`Ticket`] is a slot; dropping it frees the slot.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The open connections, counted in all and per client.
pub struct Admission {
    max_total: usize,
    max_per_client: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    total: usize,
    per_client: HashMap<IpAddr, usize>,
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The server holds its maximum of connections.
    Full(usize),
    /// This client holds its maximum of connections.
    ClientFull(usize),
}

impl Refusal {
    /// The body of the 503 the client gets.
    pub fn message(self) -> String {
        match self {
            Refusal::Full(n) => format!(
                "503 Service Unavailable: the server has {n} connections open, its maximum; try again shortly\n"
            ),
            Refusal::ClientFull(n) => format!(
                "503 Service Unavailable: your address has {n} connections open, the most one client may hold; close one first\n"
            ),
        }
    }
}

/// One admitted connection; the slot is freed when it is dropped.
pub struct Ticket {
    admission: Arc<Admission>,
    client: IpAddr,
}

impl Admission {
    pub fn new(max_total: usize, max_per_client: usize) -> Arc<Admission> {
        Arc::new(Admission {
            max_total,
            max_per_client,
            state: Mutex::default(),
        })
    }

    /// A slot for a connection from `peer`, or why there is none.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<Ticket, Refusal> {
        let client = client_key(peer);
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.total >= self.max_total {
            return Err(Refusal::Full(self.max_total));
        }
        let mine = st.per_client.entry(client).or_insert(0);
        if *mine >= self.max_per_client {
            return Err(Refusal::ClientFull(self.max_per_client));
        }
        *mine += 1;
        st.total += 1;
        Ok(Ticket {
            admission: self.clone(),
            client,
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut st = self
            .admission
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        st.total -= 1;
        if let Some(n) = st.per_client.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                // The map holds only clients with connections open.
                st.per_client.remove(&self.client);
            }
        }
    }
}

/// The address a client's connections are counted under: IPv4 as is (an
/// IPv4-mapped IPv6 address too), IPv6 by its /64, since one host usually
/// holds a whole /64 and could otherwise open each connection from
/// another address.
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn caps_per_client_and_in_all() {
        let a = Admission::new(3, 2);
        let t1 = a.admit(ip("10.0.0.1")).unwrap();
        let _t2 = a.admit(ip("10.0.0.1")).unwrap();
        assert_eq!(a.admit(ip("10.0.0.1")).err(), Some(Refusal::ClientFull(2)));
        // The same client through an IPv4-mapped address counts the same.
        assert_eq!(
            a.admit(ip("::ffff:10.0.0.1")).err(),
            Some(Refusal::ClientFull(2))
        );
        let _t3 = a.admit(ip("10.0.0.2")).unwrap();
        assert_eq!(a.admit(ip("10.0.0.3")).err(), Some(Refusal::Full(3)));
        drop(t1);
        assert_eq!(a.state.lock().unwrap().total, 2);
        let t4 = a.admit(ip("10.0.0.3")).unwrap();
        assert_eq!(a.state.lock().unwrap().per_client.len(), 3);
        // Clients with nothing open leave no entry behind.
        drop(t4);
        assert_eq!(a.state.lock().unwrap().per_client.len(), 2);
    }

    #[test]
    fn ipv6_clients_count_per_64() {
        let a = Admission::new(10, 1);
        let _t = a.admit(ip("2001:db8:1:2::1")).unwrap();
        assert_eq!(
            a.admit(ip("2001:db8:1:2:ffff::9")).err(),
            Some(Refusal::ClientFull(1))
        );
        assert!(a.admit(ip("2001:db8:1:3::1")).is_ok());
    }

    #[test]
    fn refusals_say_what_to_do() {
        assert!(
            Refusal::ClientFull(16)
                .message()
                .contains("close one first")
        );
        assert!(Refusal::Full(256).message().contains("try again shortly"));
    }
}
