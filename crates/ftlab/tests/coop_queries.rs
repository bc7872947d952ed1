//! The CO-OP query interface (co-op-buffer-ftl.txt Table 3) through the registry:
//! the log-block FTLs answer, every other FTL says "not applicable".

use ftlab::registry;
use ftlab::testkit::{config, PROFILES};
use ftlab_core::ftl::{Answer, Query};
use ftlab_core::options::{BuildContext, OptionMap};
use ftlab_core::Lbn;

fn answers(id: &str) -> Vec<Answer> {
    let prepared = ftlab::sim::prepare(&config(id, "none", &PROFILES[0], 1)).unwrap();
    let entry = registry::ftl(id).unwrap();
    let ctx = BuildContext {
        geo: &prepared.geo,
        latencies: prepared.latencies,
        seed: 1,
    };
    let ftl = (entry.build)(&ctx, &OptionMap::new()).unwrap();
    [
        Query::LogFreePages(Lbn(0)),
        Query::LogIsSequential(Lbn(0)),
        Query::FreeLogBlocks,
        Query::NextVictim,
        Query::RwThreshold,
    ]
    .into_iter()
    .map(|q| ftl.query(q))
    .collect()
}

#[test]
fn log_block_ftls_answer_on_a_fresh_tiny_device() {
    let answering: Vec<&str> = registry::FTLS
        .iter()
        .filter(|e| e.caps.merge_queries)
        .map(|e| e.id)
        .collect();
    assert_eq!(answering, ["bast", "fast"], "the registry's capability");
    // Tiny profile: 8 logical blocks of 4 pages, 12 physical blocks.
    assert_eq!(
        answers("bast"),
        [
            Answer::NoLogBlock,
            Answer::NoLogBlock,
            Answer::Count(3),
            Answer::Block(None),
            Answer::NotApplicable
        ]
    );
    assert_eq!(
        answers("fast"),
        [
            Answer::NoLogBlock,
            Answer::NoLogBlock,
            Answer::Count(2),
            Answer::NotApplicable,
            Answer::Count(2)
        ]
    );
}

#[test]
fn other_ftls_answer_not_applicable() {
    for e in registry::FTLS {
        if e.caps.merge_queries {
            continue;
        }
        assert!(
            answers(e.id).iter().all(|a| *a == Answer::NotApplicable),
            "{}",
            e.id
        );
    }
}
