//! Torn operations (issue 25, item 3): power lost *inside* a flash operation (a program
//! left unreadable, an erase left half done, a GC or a merge or a map flush stopped
//! half way, a recovery cut short by a second loss). Every FTL in
//! [`TORN_RECOVERY`] must come back to a state the oracle accepts: every page reads as
//! its last durable version or, for the pages of the request the loss struck, as a
//! version that request handed to the FTL.

use ftlab::registry::{Recovery, BUFFERS, FTLS};
use ftlab::sim::run;
use ftlab::swarm::TORN_RECOVERY;
use ftlab::testkit::{with_power_losses, PROFILES};
use ftlab::NoObserver;

fn torn_cfg(ftl: &str, buffer: &str, profile: usize, seed: u64) -> ftlab::config::Config {
    let mut cfg = with_power_losses(ftl, buffer, &PROFILES[profile], seed, 4000, &["torn:40"]);
    // A scheme that recovers only with an option (superblock's snapshots) gets it, and
    // the over-provisioning that option needs.
    if let Some(Recovery::WithOption { option, value }) =
        FTLS.iter().find(|f| f.id == ftl).map(|f| f.caps.recovery)
    {
        cfg.ftl_options
            .insert(option.into(), ftlab_core::options::value_of_text(value));
        let mut least = cfg.clone();
        least.op = 0.0;
        if let Ok(op) = ftlab::sim::least_op(&least) {
            cfg.op = cfg.op.max(op);
        }
    }
    cfg
}

/// What the power losses of a run struck: torn programs, torn erases, cuts inside GC
/// or a merge, cuts inside a recovery.
#[derive(Default, Debug)]
struct Struck {
    programs: u32,
    erases: u32,
    gc_or_merge: u32,
    recoveries: u32,
}

fn struck(out: &ftlab::sim::RunOutput, s: &mut Struck) {
    for e in &out.report.power_loss.per_event {
        let t = e.torn.as_deref().unwrap_or("");
        s.programs += t.contains("torn program") as u32;
        s.erases += t.contains("torn erase") as u32;
        s.gc_or_merge += (t.contains("(gc)") || t.contains("(merge)")) as u32;
        s.recoveries += e.recovery_cuts;
    }
}

#[test]
fn every_listed_ftl_recovers_from_power_lost_inside_operations() {
    for &ftl in TORN_RECOVERY {
        let mut s = Struck::default();
        for profile in 0..2 {
            for seed in 1..=4 {
                let cfg = torn_cfg(ftl, "none", profile, seed);
                let out = run(&cfg, &mut NoObserver).unwrap();
                assert!(
                    out.failure.is_none(),
                    "{ftl}, profile {profile}, seed {seed}: {}",
                    out.failure.unwrap()
                );
                // A cut the run ends before, or that a later point replaces before it
                // strikes, never strikes: more of them on a device where requests do
                // few operations (`dftl` and `tpm` need 62.5% over-provisioning on
                // the tiny one, so GC is rarer: 29 of 40 struck with seed 3).
                let events = out.report.power_loss.events;
                assert!((20..=40).contains(&events), "{ftl}: {events}");
                struck(&out, &mut s);
            }
        }
        // The cuts reached what they are for.
        assert!(s.programs > 0, "{ftl}: {s:?}");
        assert!(s.gc_or_merge > 0, "{ftl}: {s:?}");
        assert!(s.recoveries > 0, "{ftl}: {s:?}");
    }
}

#[test]
fn every_buffer_over_page_mapping_survives_torn_operations() {
    for b in BUFFERS {
        for seed in 1..=2 {
            let cfg = torn_cfg("page", b.id, 1, seed);
            let out = run(&cfg, &mut NoObserver).unwrap();
            assert!(out.failure.is_none(), "{}: {}", b.id, out.failure.unwrap());
        }
    }
}

/// Every operation of a stretch of requests on a tiny device, one run per operation
/// (the cut walks through host programs, GC copies and erases), each followed by a
/// second loss a few operations into its recovery.
#[test]
fn a_cut_at_each_operation_in_turn() {
    for &ftl in TORN_RECOVERY {
        let mut s = Struck::default();
        for op in 1..=48u64 {
            let mut cfg = torn_cfg(ftl, "none", 0, 5);
            cfg.power_loss = vec![format!("3000@{op}/{}", 1 + op % 7)];
            let out = run(&cfg, &mut NoObserver).unwrap();
            assert!(
                out.failure.is_none(),
                "{ftl}, 3000@{op}: {}",
                out.failure.unwrap()
            );
            assert_eq!(out.report.power_loss.events, 1);
            struck(&out, &mut s);
        }
        assert!(s.programs > 0 && s.erases > 0, "{ftl}: {s:?}");
    }
}

#[test]
fn the_report_says_what_the_loss_struck() {
    let mut cfg = torn_cfg("page", "none", 0, 1);
    cfg.power_loss = vec!["100@1".into(), "200".into()];
    let out = run(&cfg, &mut NoObserver).unwrap();
    assert!(out.failure.is_none());
    let ev = &out.report.power_loss.per_event;
    assert_eq!(ev.len(), 2);
    let torn = ev[0].torn.as_deref().expect("struck inside request 100");
    assert!(torn.contains("of block") && torn.contains('('), "{torn}");
    assert_eq!(ev[1].torn, None, "before request 200");
    let json = serde_json::to_string(&out.report).unwrap();
    assert_eq!(json.matches("\"torn\"").count(), 1, "absent when none");
}
