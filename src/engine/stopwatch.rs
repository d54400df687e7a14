//! Named stages timed in order: the one way dcn logs and keeps how long
//! each part of a long job took (a join's steps, the lab's phases, an
//! image build's stages). Each stage is logged as it starts (`==> name`)
//! and as it ends with its time (`<== name: 1.2s`).

use anyhow::Result;
use std::time::{Duration, Instant};

/// The stages timed so far, in order.
#[derive(Debug, Default)]
pub struct Stopwatch {
    laps: Vec<(String, Duration)>,
}

impl Stopwatch {
    pub fn new() -> Stopwatch {
        Stopwatch::default()
    }

    /// Run `f` as stage `name`, logged and, when it succeeds, kept with its
    /// time. A failed stage is not kept: its error says where it stopped.
    pub fn time<T>(&mut self, name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        tracing::info!("==> {name}");
        let started = Instant::now();
        let r = f()?;
        let took = started.elapsed();
        tracing::info!("<== {name}: {:.1}s", took.as_secs_f64());
        self.laps.push((name.to_string(), took));
        Ok(r)
    }

    /// Each finished stage with its time, in order.
    pub fn laps(&self) -> &[(String, Duration)] {
        &self.laps
    }

    pub fn into_laps(self) -> Vec<(String, Duration)> {
        self.laps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_stages_are_kept_in_order_and_a_failed_one_is_not() {
        let mut w = Stopwatch::new();
        assert_eq!(w.time("one", || Ok(1)).unwrap(), 1);
        assert!(w.time::<()>("two", || anyhow::bail!("no")).is_err());
        w.time("three", || {
            std::thread::sleep(Duration::from_millis(20));
            Ok(())
        })
        .unwrap();
        let names: Vec<&str> = w.laps().iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["one", "three"]);
        assert!(w.laps()[1].1 >= Duration::from_millis(20));
    }
}
