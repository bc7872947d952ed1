//! `Observer::power_loss_now`, the hook a live caller (`ftlab serve`'s SIGUSR1) strikes
//! a power loss through: it takes the same path as a planned `power_loss` point, so the
//! two give the same report.

use ftlab::config::{Config, VerifyLevel};
use ftlab::{Observer, Simulation, Workload};
use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;

fn config() -> Config {
    let mut c = Config {
        capacity: "16MiB".parse().unwrap(),
        ..Config::default()
    };
    c.buffer = "lru".into();
    c.verify = VerifyLevel::Deep;
    c
}

fn requests() -> Vec<Request> {
    (0..3000u64)
        .map(|i| Request {
            arrival: Nanos(i * 5000),
            op: if i % 4 == 3 { Op::Read } else { Op::Write },
            offset: (i * 7919 % 8192) * 2048,
            len: 2048,
        })
        .collect()
}

/// Asks for a power loss before request `at` (1-based), once.
struct StrikeAt {
    at: u64,
    asked: u64,
}

impl Observer for StrikeAt {
    fn power_loss_now(&mut self) -> bool {
        self.asked += 1;
        self.asked == self.at
    }

    fn may_power_loss(&self) -> bool {
        true
    }
}

#[test]
fn a_power_loss_asked_for_live_equals_the_planned_one() {
    let mut live = StrikeAt { at: 1777, asked: 0 };
    let out = Simulation::new(config())
        .unwrap()
        .run(
            Workload::Requests(Box::new(requests().into_iter())),
            &mut live,
        )
        .unwrap();
    assert!(out.failure.is_none(), "{:?}", out.failure);
    assert_eq!(live.asked, 3000, "asked once before every request");
    assert_eq!(out.report.power_loss.events, 1);
    assert_eq!(out.report.power_loss.per_event[0].after_request, 1776);
    assert!(
        out.report.power_loss.lost_pages > 0,
        "the LRU buffer held dirty pages"
    );

    let mut planned = config();
    planned.power_loss = vec!["1777".into()];
    let out2 = Simulation::new(planned)
        .unwrap()
        .run(
            Workload::Requests(Box::new(requests().into_iter())),
            &mut ftlab::NoObserver,
        )
        .unwrap();
    assert_eq!(out.report.power_loss, out2.report.power_loss);
    assert_eq!(out.report.flash, out2.report.flash);
}
