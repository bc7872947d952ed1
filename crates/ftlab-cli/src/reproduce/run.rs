//! Running the planned jobs: each distinct configuration once, however many figures or
//! `best` variants ask for it, on the sweep engine's pool (`ftlab::sweep::run_on_pool`,
//! the one way ftlab runs many points) of `jobs` threads, with the reports gathered in
//! the order of the plan whatever order the runs finish in.

use super::expand::{Expanded, Job, RunKey};
use super::ReproError;
use ftlab::sweep::{run_config, run_on_pool, PointError, SweepError};
use std::collections::BTreeMap;

/// The report (or error) of every run.
pub(super) type Results = BTreeMap<RunKey, Result<serde_json::Value, ReproError>>;

/// Runs every job of `jobs` on `threads` threads and returns the report of each;
/// `progress(done, total)` is called as runs finish, `total` counting distinct
/// configurations.
pub(super) fn run_all(
    exps: &[Expanded],
    jobs: &[Job],
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Results, ReproError> {
    // A configuration that several figures share (e.g. a breakdown at one x point of
    // another figure) runs once; `same[j]` is the job whose report job `j` takes. The
    // key is the whole configuration, `best` variant keys included, so two variants
    // of a `best` series share a run only when they configure the same run.
    let same = first_of_same(jobs);
    let unique: Vec<&Job> = jobs
        .iter()
        .enumerate()
        .filter(|&(j, _)| same[j] == j)
        .map(|(_, job)| job)
        .collect();
    let total = unique.len();
    let reports = run_on_pool(
        &unique,
        threads.max(1),
        |job| run_one(&exps[job.key.exp], job),
        |_, done| progress(done, total),
    )
    .map_err(|e| match e {
        SweepError::Threads { threads, why } => ReproError::Threads { threads, why },
        other => ReproError::Io {
            path: String::new(),
            why: other.to_string(),
        },
    })?;
    let mut results: Results = unique.iter().map(|job| job.key).zip(reports).collect();
    for (j, &first) in same.iter().enumerate() {
        if first != j {
            let copy = match &results[&jobs[first].key] {
                Ok(report) => Ok(report.clone()),
                Err(e) => Err(ReproError::Spec {
                    path: exps[jobs[j].key.exp].path.display().to_string(),
                    why: format!("a run is the same as one that failed: {e}"),
                }),
            };
            results.insert(jobs[j].key, copy);
        }
    }
    Ok(results)
}

/// Runs one job of experiment `e` (`ftlab::sweep::run_config`, as a sweep point runs):
/// its report as JSON, or why there is none.
fn run_one(e: &Expanded, job: &Job) -> Result<serde_json::Value, ReproError> {
    let path = || e.path.display().to_string();
    let x = || e.xs[job.key.x].name.clone();
    let series = || e.ss[job.key.series].name.clone();
    run_config(&job.cfg).map_err(|err| match err {
        PointError::Refused(err) => ReproError::Run {
            path: path(),
            x: x(),
            series: series(),
            source: Box::new(err),
        },
        found @ (PointError::Found(_) | PointError::Panicked(_)) => ReproError::Integrity {
            path: path(),
            x: x(),
            series: series(),
            why: found.to_string(),
        },
    })
}

/// For each job, the first job with the same configuration (itself if none before):
/// the whole `Config`, so `best` variants that set different keys stay apart.
fn first_of_same(jobs: &[Job]) -> Vec<usize> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    jobs.iter()
        .enumerate()
        .map(|(j, job)| {
            let key = serde_json::to_string(&job.cfg).expect("a config serialises");
            *seen.entry(key).or_insert(j)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_configurations_share_a_run_but_best_variants_do_not() {
        let cfg = |op: f64| ftlab::config::parse_str(&format!("op = {op:?}"), "test").unwrap();
        let (a, b) = (cfg(7.0), cfg(25.0));
        let job = |exp, series, variant, cfg| Job {
            key: RunKey {
                exp,
                series,
                x: 0,
                variant,
            },
            cfg,
        };
        // Two variants of one series point (different op), and a second figure
        // (experiment 1) whose plain point configures the same run as variant 1.
        let jobs = vec![
            job(0, 0, 0, a.clone()),
            job(0, 0, 1, b.clone()),
            job(1, 0, 0, b),
            job(1, 1, 0, a),
        ];
        assert_eq!(first_of_same(&jobs), [0, 1, 1, 0]);
    }
}
