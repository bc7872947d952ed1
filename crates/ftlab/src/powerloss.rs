//! When power losses strike during a run (`power_loss` config key, `--power-loss-at`).
//!
//! A power loss strikes between two requests, or inside one (issue 25, item 3):
//! - `5000`: before request 5000 (points are request numbers counted over all passes
//!   from 1);
//! - `t=2.5`: before the first request arriving at or after 2.5 s of its pass;
//! - `random:K`: before K distinct request numbers drawn uniformly from the seed over
//!   the whole run (the workload is counted first, with a dry pass through its
//!   transforms);
//! - `5000@3`: inside the 3rd flash operation counted from the start of request 5000
//!   (a GC or merge copy counts as one; every operation counts, a recovery's
//!   too), in that request or, if it does fewer, a later one. That operation is torn: a
//!   program leaves its page unreadable, an erase its block, a read ends as power fails
//!   (`ftlab_core::flash`'s module documentation). It may belong to anything the
//!   request set off: a host read or write, a flush or a trim, idle-time work, GC, a
//!   merge, a map-page flush, a snapshot, a buffer flush. A cut the run ends before
//!   never strikes (the final drain and read-back are not cut), nor does one that a
//!   later `@` point replaces before it struck;
//! - `5000@3/40`: the same, then the power fails again inside the 40th flash operation
//!   of the recovery (a recovery that does fewer completes);
//! - `torn:K`: K distinct requests drawn like `random:K`, each starting a countdown of
//!   `1 + floor(2^(10u))` operations for `u` uniform in [0, 1) (1 to 1,024: most cuts
//!   strike in the request drawn, some deep in a GC or a merge it or a later one set
//!   off), one in four also struck inside its recovery at operation
//!   `1 + floor(2^(16u))` (1 to 65,536).

use crate::config::Config;
use crate::error::{setting, RunError};
use crate::source::{name_source, workload_stream};
use ftlab_core::geometry::Geometry;
use ftlab_core::rng::SplitMix64;
use ftlab_core::Nanos;
use ftlab_workload::transform::Counters;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Where a power loss strikes relative to its request ([`PowerLossPlan::due`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Strike {
    /// Inside the request, at this flash operation of it (`None`: before the request).
    pub inside: Option<u64>,
    /// Again inside the recovery, at this flash operation of it.
    pub recovery: Option<u64>,
}

/// The resolved power-loss points of a run.
#[derive(Debug, Default)]
pub struct PowerLossPlan {
    /// Request numbers, ascending, without repeats, each with where it strikes; those
    /// before `next_request` struck.
    requests: Vec<(u64, Strike)>,
    next_request: usize,
    times: Vec<Nanos>,
    next_time: usize,
}

impl PowerLossPlan {
    /// Parses the config's `power_loss` entries.
    pub fn new(cfg: &Config, geo: &Geometry) -> Result<PowerLossPlan, RunError> {
        let mut plan = PowerLossPlan::default();
        // Two points on one request: the one inside it wins (it strikes first).
        let mut requests: BTreeMap<u64, Strike> = BTreeMap::new();
        let mut add = |n: u64, s: Strike| {
            let e = requests.entry(n).or_default();
            if e.inside.is_none() {
                *e = s;
            }
        };
        for spec in cfg.power_loss.iter().flat_map(|s| s.split(',')) {
            let spec = spec.trim();
            let bad = |why: &str| setting("power_loss", format!("`{spec}`: {why}"));
            if let Some(t) = spec.strip_prefix("t=") {
                let secs: f64 = t.parse().map_err(|_| bad("expected t=SECONDS"))?;
                if !secs.is_finite() || secs < 0.0 {
                    return Err(bad("time must be 0 or more seconds"));
                }
                plan.times.push(Nanos((secs * 1e9).round() as u64));
            } else if let Some((kind, k)) = spec
                .strip_prefix("random:")
                .map(|k| (false, k))
                .or_else(|| spec.strip_prefix("torn:").map(|k| (true, k)))
            {
                let k: u64 = k.parse().map_err(|_| {
                    bad(if kind {
                        "expected torn:COUNT"
                    } else {
                        "expected random:COUNT"
                    })
                })?;
                let total = total_requests(cfg, geo)?;
                if k > total {
                    return Err(bad(&format!("only {total} requests in the run")));
                }
                let salt = if kind {
                    0x7042_5EED_0F70
                } else {
                    0x005E_ED0F_9043
                };
                let mut rng = SplitMix64::new(cfg.seed ^ salt);
                let mut drawn = BTreeMap::new();
                while (drawn.len() as u64) < k {
                    drawn.insert(1 + rng.below(total), ());
                }
                for n in drawn.into_keys() {
                    let strike = if kind {
                        let deep = |rng: &mut SplitMix64, bits: f64| {
                            1 + (bits * rng.unit()).exp2().floor() as u64
                        };
                        let inside = deep(&mut rng, 10.0);
                        let recovery = (rng.below(4) == 0).then(|| deep(&mut rng, 16.0));
                        Strike {
                            inside: Some(inside),
                            recovery,
                        }
                    } else {
                        Strike::default()
                    };
                    add(n, strike);
                }
            } else {
                let (n, rest) = match spec.split_once('@') {
                    Some((n, rest)) => (n, Some(rest)),
                    None => (spec, None),
                };
                let n: u64 = n.parse().map_err(|_| {
                    bad("expected a request number, N@OP, N@OP/OP, t=SECONDS, random:COUNT or torn:COUNT")
                })?;
                if n == 0 {
                    return Err(bad("request numbers start at 1"));
                }
                let op = |text: &str| -> Result<u64, RunError> {
                    match text.parse::<u64>() {
                        Ok(k) if (1..1 << 40).contains(&k) => Ok(k),
                        _ => Err(bad("operations count from 1 (N@OP: the OP-th flash operation of request N)")),
                    }
                };
                let strike = match rest {
                    None => Strike::default(),
                    Some(rest) => {
                        let (inside, recovery) = match rest.split_once('/') {
                            Some((a, b)) => (op(a)?, Some(op(b)?)),
                            None => (op(rest)?, None),
                        };
                        Strike {
                            inside: Some(inside),
                            recovery,
                        }
                    }
                };
                add(n, strike);
            }
        }
        plan.requests = requests.into_iter().collect();
        plan.times.sort_unstable();
        Ok(plan)
    }

    /// Whether a power loss strikes before or inside request `request_no` arriving at
    /// `arrival`, and where. Called for every request in order (a planned number passed
    /// over would strike at the next call); two comparisons per request when nothing is
    /// due.
    pub fn due(&mut self, request_no: u64, arrival: Nanos) -> Option<Strike> {
        let mut due = None;
        while self.next_request < self.requests.len()
            && self.requests[self.next_request].0 <= request_no
        {
            let (n, s) = self.requests[self.next_request];
            self.next_request += 1;
            // A point passed over strikes before this request.
            due = Some(if n == request_no {
                s
            } else {
                Strike::default()
            });
        }
        while self.next_time < self.times.len() && self.times[self.next_time] <= arrival {
            self.next_time += 1;
            due.get_or_insert_with(Strike::default);
        }
        due
    }

    /// Whether any power loss is planned.
    pub fn is_empty(&self) -> bool {
        self.requests.len() == self.next_request && self.times.len() == self.next_time
    }

    /// Whether any planned power loss strikes inside a request (so whole spare tags are
    /// needed to mark a torn page).
    pub fn tears(&self) -> bool {
        self.requests.iter().any(|(_, s)| s.inside.is_some())
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
        let before = Some(Strike::default());
        assert_eq!(p.due(1, Nanos(0)), None);
        assert_eq!(p.due(3, Nanos(10)), before);
        assert_eq!(p.due(4, Nanos(400_000_000)), None);
        assert_eq!(p.due(5, Nanos(500_000_000)), before);
        assert_eq!(p.due(6, Nanos(600_000_000)), None);
        assert_eq!(p.due(7, Nanos(700_000_000)), before);
        assert!(p.is_empty());
        let p = plan(&["random:10"]).unwrap();
        assert_eq!(p.requests.len(), 10);
        // Regression: random points were not drawn when explicit ones came first.
        let p = plan(&["1,2,3,4,5", "random:3"]).unwrap();
        assert!(p.requests.len() >= 6, "{:?}", p.requests);
        assert!(p.requests.iter().all(|&(n, _)| (1..=1000).contains(&n)));
    }

    #[test]
    fn torn_points_strike_inside_requests_and_recoveries() {
        let mut p = plan(&["5@3", "9@1/40", "9"]).unwrap();
        assert!(p.tears());
        assert_eq!(p.due(4, Nanos(0)), None);
        let inside = |op, rec| {
            Some(Strike {
                inside: Some(op),
                recovery: rec,
            })
        };
        assert_eq!(p.due(5, Nanos(0)), inside(3, None));
        assert_eq!(p.due(9, Nanos(0)), inside(1, Some(40)));
        assert!(p.is_empty());
        // Drawn: inside every one, at 1..=1024, a recovery cut at 1..=65536 in some.
        let p = plan(&["torn:200"]).unwrap();
        assert_eq!(p.requests.len(), 200);
        assert!(p
            .requests
            .iter()
            .all(|(_, s)| matches!(s.inside, Some(1..=1024))));
        let in_recovery = p
            .requests
            .iter()
            .filter(|(_, s)| s.recovery.is_some())
            .count();
        assert!((20..=80).contains(&in_recovery), "{in_recovery}");
        assert!(p.requests.iter().any(|(_, s)| s.inside > Some(64)));
        // The same seed draws the same points.
        assert_eq!(plan(&["torn:200"]).unwrap().requests, p.requests);
        assert!(!plan(&["random:3"]).unwrap().tears());
    }

    #[test]
    fn bad_specs_name_the_key() {
        for s in [
            "0",
            "x",
            "t=-1",
            "random:5000",
            "random:x",
            "torn:x",
            "torn:5000",
            "5@0",
            "5@x",
            "5@1/0",
            "5@1/",
            "0@1",
            "@3",
        ] {
            let e = plan(&[s]).unwrap_err().to_string();
            assert!(e.contains("power_loss"), "{e}");
        }
    }
}
