//! A node's own accounts on the control plane's services, whatever kind
//! its recipe declares ([`NodeAccount`]): a RabbitMQ user, a keystone user
//! or a MariaDB user. Which accounts a node gets, and when, is the centre's
//! to say ([`crate::centre::sites::accounts`]); making and deleting them is
//! here.

use super::Cloud;
use super::batch::GroupCommit;
use super::client::KeptLogin;
use super::compute::{ComputeHosts, Nova};
use super::messaging::RabbitUser;
use super::{database, identity, messaging};
use crate::host::Host;
use crate::recipes::site_credentials::NodeAccount;
use crate::secrets::{Secret, generate_password};
use anyhow::Result;
use std::sync::{Arc, Mutex, OnceLock};

/// Where node accounts live. The control plane's services in production
/// ([`ControlPlaneAccounts`]); the join service's tests, which have none
/// of them, record the calls instead.
pub trait NodeAccounts: ComputeHosts + Send + Sync {
    /// Create the account, or give the existing one a new password (the
    /// old one stops working at once); its password.
    fn make(&self, hostname: &str, account: &NodeAccount) -> Result<Secret>;
    /// Delete the account and close what it has open. Deleting an account
    /// that is already gone succeeds.
    fn delete(&self, hostname: &str, account: &NodeAccount) -> Result<()>;
}

/// RabbitMQ users made in one `rabbitmqctl` call at most: a bound on
/// the definitions one call reads.
const RABBIT_BATCH: usize = 100;

/// The accounts on this control plane. One value serves every join the
/// service answers: RabbitMQ users of joins at once are made together
/// ([`GroupCommit`]), and keystone is called with one kept admin login.
pub struct ControlPlaneAccounts {
    host: Host,
    admin: KeptLogin<Admin>,
    rabbit: GroupCommit<RabbitUser>,
    /// Joins at once call keystone a few at a time.
    keystone_slots: Slots,
}

/// At most this many of the join service's calls to keystone at once.
/// Keystone serves a few requests at a time on a small control plane and
/// holds the rest in a short listen queue: 200 joins at once overflowed
/// it, and the joins whose connections it refused failed. Waiting here
/// costs them nothing more than waiting there.
const KEYSTONE_AT_ONCE: usize = 8;

/// A counting semaphore for blocking threads.
struct Slots {
    free: Mutex<usize>,
    freed: std::sync::Condvar,
}

/// A taken slot, given back when dropped.
struct Slot<'a>(&'a Slots);

impl Slots {
    fn new(n: usize) -> Slots {
        Slots {
            free: Mutex::new(n),
            freed: std::sync::Condvar::new(),
        }
    }

    /// Wait for a free slot and take it.
    fn take(&self) -> Slot<'_> {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let mut free =
            (self.freed.wait_while(free, |n| *n == 0)).unwrap_or_else(|e| e.into_inner());
        *free -= 1;
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// The kept admin login, with what node users need of keystone looked up
/// once for as long as it is kept.
struct Admin {
    cloud: Arc<Cloud>,
    node_scope: OnceLock<identity::NodeUserScope>,
}

impl Admin {
    fn node_scope(&self) -> Result<&identity::NodeUserScope> {
        if let Some(scope) = self.node_scope.get() {
            return Ok(scope);
        }
        let scope = identity::NodeUserScope::look_up(&self.cloud)?;
        // Joins at once may each look it up; the first kept wins.
        Ok(self.node_scope.get_or_init(|| scope))
    }
}

impl ControlPlaneAccounts {
    pub fn new(host: &Host) -> ControlPlaneAccounts {
        ControlPlaneAccounts {
            host: host.clone(),
            admin: KeptLogin::default(),
            rabbit: GroupCommit::new(RABBIT_BATCH),
            keystone_slots: Slots::new(KEYSTONE_AT_ONCE),
        }
    }

    /// `call` with the kept admin login; when it fails, the login is
    /// made again for the next call (its token may have expired).
    fn with_admin<T>(&self, call: impl FnOnce(&Admin) -> Result<T>) -> Result<T> {
        let _slot = self.keystone_slots.take();
        let admin = self.admin.get(|| {
            Ok(Arc::new(Admin {
                cloud: Arc::new(super::client::admin(&self.host)?),
                node_scope: OnceLock::new(),
            }))
        })?;
        let outcome = call(&admin);
        if outcome.is_err() {
            self.admin.forget();
        }
        outcome
    }
}

impl ComputeHosts for ControlPlaneAccounts {
    fn is_compute_host(&self, hostname: &str) -> Result<bool> {
        self.with_admin(|admin| {
            Nova::with_login(admin.cloud.clone(), &self.host).is_compute_host(hostname)
        })
    }
}

impl NodeAccounts for ControlPlaneAccounts {
    fn make(&self, _hostname: &str, account: &NodeAccount) -> Result<Secret> {
        match account {
            NodeAccount::Rabbitmq {
                username,
                permissions,
            } => {
                let user = RabbitUser {
                    name: username.clone(),
                    password: generate_password(),
                    permissions: permissions.clone(),
                };
                let password = user.password.clone();
                (self.rabbit).submit(user, |users| messaging::ensure_users(&self.host, users))?;
                Ok(password)
            }
            NodeAccount::Keystone { username } => self.with_admin(|admin| {
                let password = generate_password();
                let scope = admin.node_scope()?;
                identity::ensure_node_user(&admin.cloud, scope, username, &password)?;
                Ok(password)
            }),
            NodeAccount::Database {
                username,
                databases,
            } => {
                let password = generate_password();
                database::ensure_user(&self.host, username, &password, databases)?;
                Ok(password)
            }
        }
    }

    fn delete(&self, _hostname: &str, account: &NodeAccount) -> Result<()> {
        match account {
            NodeAccount::Rabbitmq { username, .. } => messaging::remove_user(&self.host, username),
            NodeAccount::Keystone { username } => {
                self.with_admin(|admin| identity::remove_user(&admin.cloud, username))
            }
            NodeAccount::Database { username, .. } => database::remove_user(&self.host, username),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn no_more_than_the_slots_at_once() {
        let slots = Slots::new(3);
        let (inside, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|scope| {
            for _ in 0..12 {
                scope.spawn(|| {
                    let _slot = slots.take();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    inside.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 3);
        assert_eq!(*slots.free.lock().unwrap(), 3, "every slot given back");
    }
}
