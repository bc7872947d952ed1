//! Running the planned jobs: each distinct configuration once, however many figures or
//! `best` variants ask for it, on a rayon pool of `jobs` threads, with the reports
//! gathered in the order of the plan whatever order the runs finish in.

use super::expand::{Expanded, Job, RunKey};
use super::ReproError;
use ftlab::sim::{run, NoObserver};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    let threads = threads.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("ftlab-reproduce-{i}"))
        .build()
        .map_err(|e| ReproError::Threads {
            threads,
            why: e.to_string(),
        })?;
    let done = AtomicUsize::new(0);
    // One run per task (`with_max_len(1)`): runs differ in length by orders of
    // magnitude, so idle threads take them one at a time. `collect` keeps the order of
    // `unique`.
    let reports: Vec<_> = pool.install(|| {
        unique
            .par_iter()
            .with_max_len(1)
            .map(|job| {
                let r = run_one(&exps[job.key.exp], job);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
                r
            })
            .collect()
    });
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

/// Runs one job of experiment `e`: its report as JSON, or why there is none.
fn run_one(e: &Expanded, job: &Job) -> Result<serde_json::Value, ReproError> {
    let path = || e.path.display().to_string();
    let x = || e.xs[job.key.x].name.clone();
    let series = || e.ss[job.key.series].name.clone();
    let out = run(&job.cfg, &mut NoObserver).map_err(|err| ReproError::Run {
        path: path(),
        x: x(),
        series: series(),
        source: Box::new(err),
    })?;
    match out.failure {
        Some(f) => Err(ReproError::Integrity {
            path: path(),
            x: x(),
            series: series(),
            why: f.to_string(),
        }),
        None => Ok(serde_json::to_value(&out.report).expect("report serialises")),
    }
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
