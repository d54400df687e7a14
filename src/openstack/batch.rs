//! Group commit: callers that arrive while a batch is being applied wait,
//! and the next of them applies everything that queued meanwhile in one
//! go. A lone caller applies its own item at once, so nothing waits for a
//! batch to fill; fifty callers at once cost two or three applications
//! instead of fifty. (The join service makes a RabbitMQ user per joining
//! node; each `rabbitmqctl` starts an Erlang VM, about a second of CPU.)

use anyhow::{Result, anyhow};
use std::collections::HashMap;
use std::sync::{Condvar, Mutex};

/// Items of one kind applied together, at most `max` at a time.
pub struct GroupCommit<T> {
    max: usize,
    state: Mutex<State<T>>,
    changed: Condvar,
}

struct State<T> {
    queued: Vec<(u64, T)>,
    applying: bool,
    next_ticket: u64,
    /// Outcomes not yet collected by their callers (an error's text: an
    /// error is shared by the whole batch, and `anyhow::Error` does not
    /// clone).
    outcomes: HashMap<u64, Result<(), String>>,
}

impl<T> GroupCommit<T> {
    pub fn new(max: usize) -> GroupCommit<T> {
        GroupCommit {
            max: max.max(1),
            state: Mutex::new(State {
                queued: Vec::new(),
                applying: false,
                next_ticket: 0,
                outcomes: HashMap::new(),
            }),
            changed: Condvar::new(),
        }
    }

    /// Apply `item`, alone or with whatever else is queued, through
    /// `apply`; returns once the batch that held it was applied, with that
    /// batch's outcome.
    pub fn submit(&self, item: T, apply: impl Fn(&[T]) -> Result<()>) -> Result<()> {
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.queued.push((ticket, item));
        loop {
            if let Some(outcome) = state.outcomes.remove(&ticket) {
                return outcome.map_err(|e| anyhow!(e));
            }
            if state.applying {
                state = (self.changed.wait(state)).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            // This caller applies the next batch (its own item is in it or
            // in one after it).
            let take = state.queued.len().min(self.max);
            let batch: Vec<(u64, T)> = state.queued.drain(..take).collect();
            state.applying = true;
            drop(state);
            let (tickets, items): (Vec<u64>, Vec<T>) = batch.into_iter().unzip();
            let mut finish = Finish {
                group: self,
                tickets,
                outcome: Err("applying the batch panicked".into()),
            };
            finish.outcome = apply(&items).map_err(|e| format!("{e:#}"));
            drop(finish);
            state = self.lock();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Hands a batch's outcome to its callers and lets the next batch go,
/// also when `apply` panicked (then the outcome says so), so that no
/// caller waits for ever.
struct Finish<'a, T> {
    group: &'a GroupCommit<T>,
    tickets: Vec<u64>,
    outcome: Result<(), String>,
}

impl<T> Drop for Finish<'_, T> {
    fn drop(&mut self) {
        let mut state = self.group.lock();
        state.applying = false;
        for t in self.tickets.drain(..) {
            state.outcomes.insert(t, self.outcome.clone());
        }
        self.group.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn a_lone_caller_applies_its_item_at_once() {
        let group = GroupCommit::new(10);
        let seen = Mutex::new(Vec::new());
        group
            .submit(7, |items| {
                seen.lock().unwrap().push(items.to_vec());
                Ok(())
            })
            .unwrap();
        assert_eq!(*seen.lock().unwrap(), [vec![7]]);
    }

    #[test]
    fn callers_that_arrive_during_a_batch_share_the_next_and_each_gets_its_outcome() {
        let group = Arc::new(GroupCommit::new(100));
        let batches = Arc::new(Mutex::new(Vec::<Vec<u32>>::new()));
        let applied = Arc::new(AtomicUsize::new(0));
        let apply = {
            let (batches, applied) = (batches.clone(), applied.clone());
            move |items: &[u32]| -> Result<()> {
                // Slow, as rabbitmqctl is: the others queue meanwhile.
                std::thread::sleep(Duration::from_millis(200));
                batches.lock().unwrap().push(items.to_vec());
                applied.fetch_add(items.len(), Ordering::SeqCst);
                if items.contains(&13) {
                    anyhow::bail!("13 is refused");
                }
                Ok(())
            }
        };
        let threads: Vec<_> = (0..40u32)
            .map(|i| {
                let (group, apply) = (group.clone(), apply.clone());
                std::thread::spawn(move || {
                    // The first goes alone; the rest arrive while it runs.
                    if i > 0 {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    (i, group.submit(i, &apply))
                })
            })
            .collect();
        let outcomes: Vec<(u32, Result<()>)> =
            threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(applied.load(Ordering::SeqCst), 40);
        let batches = batches.lock().unwrap();
        assert!(batches.len() <= 3, "{batches:?}");
        let with_13 = batches.iter().find(|b| b.contains(&13)).unwrap();
        for (i, outcome) in outcomes {
            match outcome {
                Err(e) => {
                    assert!(with_13.contains(&i), "{i}: {e}");
                    assert!(e.to_string().contains("13 is refused"));
                }
                Ok(()) => assert!(!with_13.contains(&i), "{i} passed with 13"),
            }
        }
    }

    #[test]
    fn batches_stay_within_their_bound() {
        let group = Arc::new(GroupCommit::new(4));
        let largest = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..20u32)
            .map(|i| {
                let (group, largest) = (group.clone(), largest.clone());
                std::thread::spawn(move || {
                    group.submit(i, |items| {
                        largest.fetch_max(items.len(), Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        Ok(())
                    })
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        assert!(largest.load(Ordering::SeqCst) <= 4);
    }

    #[test]
    fn a_panic_while_applying_fails_its_batch_and_the_next_goes_on() {
        let group = Arc::new(GroupCommit::new(10));
        let g = group.clone();
        let panicked =
            std::thread::spawn(move || g.submit(1, |_| -> Result<()> { panic!("boom") })).join();
        assert!(panicked.is_err());
        group.submit(2, |_| Ok(())).unwrap();
    }
}
