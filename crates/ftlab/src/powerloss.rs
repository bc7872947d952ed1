//! When power losses strike during a run (`power_loss` config key, `--power-loss-at`).
//!
//! A power loss strikes between two requests (the engine's granularity: a request's
//! flash operations are never torn). Points are request numbers counted over all passes
//! from 1 (`5000`: before request 5000), simulated arrival times (`t=2.5`: before the
//! first request arriving at or after 2.5 s of its pass) or `random:K`, K distinct
//! request numbers drawn uniformly from the seed over the whole run (the workload is
//! counted first, with a dry pass through its transforms).

use crate::config::Config;
use crate::error::{setting, RunError};
use crate::source::{name_source, workload_stream};
use ftlab_core::geometry::Geometry;
use ftlab_core::rng::SplitMix64;
use ftlab_core::Nanos;
use ftlab_workload::transform::Counters;
use std::collections::BTreeSet;
use std::rc::Rc;

/// The resolved power-loss points of a run.
#[derive(Debug, Default)]
pub struct PowerLossPlan {
    /// Request numbers, ascending, without repeats; those before `next_request` struck.
    requests: Vec<u64>,
    next_request: usize,
    times: Vec<Nanos>,
    next_time: usize,
}

impl PowerLossPlan {
    /// Parses the config's `power_loss` entries.
    pub fn new(cfg: &Config, geo: &Geometry) -> Result<PowerLossPlan, RunError> {
        let mut plan = PowerLossPlan::default();
        let mut requests = BTreeSet::new();
        for spec in cfg.power_loss.iter().flat_map(|s| s.split(',')) {
            let spec = spec.trim();
            let bad = |why: &str| setting("power_loss", format!("`{spec}`: {why}"));
            if let Some(t) = spec.strip_prefix("t=") {
                let secs: f64 = t.parse().map_err(|_| bad("expected t=SECONDS"))?;
                if !secs.is_finite() || secs < 0.0 {
                    return Err(bad("time must be 0 or more seconds"));
                }
                plan.times.push(Nanos((secs * 1e9).round() as u64));
            } else if let Some(k) = spec.strip_prefix("random:") {
                let k: u64 = k.parse().map_err(|_| bad("expected random:COUNT"))?;
                let total = total_requests(cfg, geo)?;
                if k > total {
                    return Err(bad(&format!("only {total} requests in the run")));
                }
                let mut rng = SplitMix64::new(cfg.seed ^ 0x005E_ED0F_9043);
                let mut drawn = BTreeSet::new();
                while (drawn.len() as u64) < k {
                    drawn.insert(1 + rng.below(total));
                }
                requests.extend(drawn);
            } else {
                let n: u64 = spec
                    .parse()
                    .map_err(|_| bad("expected a request number, t=SECONDS or random:COUNT"))?;
                if n == 0 {
                    return Err(bad("request numbers start at 1"));
                }
                requests.insert(n);
            }
        }
        plan.requests = requests.into_iter().collect();
        plan.times.sort_unstable();
        Ok(plan)
    }

    /// Whether a power loss strikes before request `request_no` arriving at `arrival`.
    /// Called for every request in order (a planned number passed over would strike at
    /// the next call); two comparisons per request when nothing is due.
    pub fn due(&mut self, request_no: u64, arrival: Nanos) -> bool {
        let mut due = false;
        while self.next_request < self.requests.len()
            && self.requests[self.next_request] <= request_no
        {
            self.next_request += 1;
            due = true;
        }
        while self.next_time < self.times.len() && self.times[self.next_time] <= arrival {
            self.next_time += 1;
            due = true;
        }
        due
    }

    /// Whether any power loss is planned.
    pub fn is_empty(&self) -> bool {
        self.requests.len() == self.next_request && self.times.len() == self.next_time
    }
}

/// Requests the whole run submits, all passes, after the transforms (a dry pass over
/// the workload).
fn total_requests(cfg: &Config, geo: &Geometry) -> Result<u64, RunError> {
    let counters = Rc::new(Counters::default());
    let mut n = 0;
    for r in workload_stream(cfg, geo, &counters)? {
        r.map_err(|e| name_source(e, cfg))?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::prepare;

    fn plan(specs: &[&str]) -> Result<PowerLossPlan, RunError> {
        let mut cfg = Config {
            capacity: "16MiB".parse().unwrap(),
            ..Config::default()
        };
        cfg.synthetic.count = 1000;
        cfg.power_loss = specs.iter().map(|s| s.to_string()).collect();
        let geo = prepare(&cfg).unwrap().geo;
        PowerLossPlan::new(&cfg, &geo)
    }

    #[test]
    fn request_numbers_times_and_random_points() {
        let mut p = plan(&["3,7", "t=0.5"]).unwrap();
        assert!(!p.due(1, Nanos(0)));
        assert!(p.due(3, Nanos(10)));
        assert!(!p.due(4, Nanos(400_000_000)));
        assert!(p.due(5, Nanos(500_000_000)));
        assert!(!p.due(6, Nanos(600_000_000)));
        assert!(p.due(7, Nanos(700_000_000)));
        assert!(p.is_empty());
        let p = plan(&["random:10"]).unwrap();
        assert_eq!(p.requests.len(), 10);
        // Regression: random points were not drawn when explicit ones came first.
        let p = plan(&["1,2,3,4,5", "random:3"]).unwrap();
        assert!(p.requests.len() >= 6, "{:?}", p.requests);
        assert!(p.requests.iter().all(|&n| (1..=1000).contains(&n)));
    }

    #[test]
    fn bad_specs_name_the_key() {
        for s in ["0", "x", "t=-1", "random:5000", "random:x"] {
            let e = plan(&[s]).unwrap_err().to_string();
            assert!(e.contains("power_loss"), "{e}");
        }
    }
}
