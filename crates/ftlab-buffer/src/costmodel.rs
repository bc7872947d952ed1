//! The analytical cost model of co-op-buffer-ftl.txt §4 (padding vs. no padding over
//! `N_f` flushes to one log block, Table 2 and Fig. 3) and §5.1.3 (the cost of one
//! victim flush of `N_i` dirty pages to a log block with `N_r` free pages under FAB,
//! BPLRU, BP-REF, BA-GC and CO-OP), as functions.
//!
//! Costs are operation counts ([`Ops`]: page reads, page writes, block erases), turned
//! into time with [`Ops::time_ns`]. Counts are `f64` because the paper's potential
//! overhead `C_pot(x) = GC_FM * x / N` is a fraction of a full merge.
//!
//! Each §5.1.3 cost is split into the operations of the flush itself
//! ([`FlushCost::now`]: integers, what a simulator counts during the two-flush scenario
//! the paper describes) and the potential overhead ([`FlushCost::potential`]: the share
//! of a later full merge that the pages left in a fresh log block will cost). As in the
//! paper, `now` excludes the `N - N_r` writes of the previous flush that every scheme
//! makes alike, but includes, for BPLRU, that flush's padding (`C_prev`).
//!
//! Choices the paper leaves open:
//! - The §5.1.3 formulas assume `0 < N_r <= N_i <= N` (a full merge follows the
//!   flush); other inputs are refused with a typed error rather than extrapolated.

use ftlab_core::nand::Latencies;
use thiserror::Error;

/// Page reads, page writes and block erases.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ops {
    /// Page reads.
    pub reads: f64,
    /// Page writes (programs).
    pub writes: f64,
    /// Block erases.
    pub erases: f64,
}

impl Ops {
    /// `reads`, `writes`, `erases`.
    pub const fn new(reads: f64, writes: f64, erases: f64) -> Ops {
        Ops {
            reads,
            writes,
            erases,
        }
    }

    /// Serial time of these operations in ns.
    pub fn time_ns(&self, l: &Latencies) -> f64 {
        self.reads * l.read.0 as f64
            + self.writes * l.program.0 as f64
            + self.erases * l.erase.0 as f64
    }
}

impl std::ops::Add for Ops {
    type Output = Ops;
    fn add(self, o: Ops) -> Ops {
        Ops::new(
            self.reads + o.reads,
            self.writes + o.writes,
            self.erases + o.erases,
        )
    }
}

impl std::ops::Mul<f64> for Ops {
    type Output = Ops;
    fn mul(self, k: f64) -> Ops {
        Ops::new(self.reads * k, self.writes * k, self.erases * k)
    }
}

/// Inputs outside the model.
#[derive(Debug, Error, PartialEq)]
pub enum ModelError {
    /// A parameter is out of the range the formulas assume.
    #[error("cost model: {param} = {value}: {why}")]
    Range {
        /// Table 2 name.
        param: &'static str,
        /// The value given.
        value: u32,
        /// The range expected.
        why: &'static str,
    },
}

/// Full merge `GC_FM = N (T_r + T_w) + 2 T_e` (Table 2).
pub fn gc_full(n: u32) -> Ops {
    Ops::new(n as f64, n as f64, 2.0)
}

/// Switch merge `GC_SM = T_e` (Table 2).
pub fn gc_switch() -> Ops {
    Ops::new(0.0, 0.0, 1.0)
}

/// §4: cost without padding of `N_f` flushes totalling `N_σ` pages to one log block:
/// `N_σ T_w + ceil(N_σ / N) GC_FM` (independent of `N_f`).
pub fn c_nopad(n: u32, n_sigma: u32) -> Ops {
    Ops::new(0.0, n_sigma as f64, 0.0) + gc_full(n) * n_sigma.div_ceil(n) as f64
}

/// §4: cost with padding: `(N_f N - N_σ) T_r + N_f N T_w + N_f GC_SM`. Requires
/// `N_f <= N_σ <= N_f N` (every flush has 1 to N dirty pages).
pub fn c_pad(n: u32, n_f: u32, n_sigma: u32) -> Result<Ops, ModelError> {
    if n_f == 0 || n_sigma < n_f || n_sigma > n_f * n {
        return Err(ModelError::Range {
            param: "N_sigma",
            value: n_sigma,
            why: "must be from N_f to N_f * N (each flush holds 1 to N dirty pages)",
        });
    }
    let total = (n_f * n) as f64;
    Ok(Ops::new(total - n_sigma as f64, total, 0.0) + gc_switch() * n_f as f64)
}

/// The cost of one victim flush under a scheme (§5.1.3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlushCost {
    /// Operations of the flush (and, for BPLRU, the previous flush's padding).
    pub now: Ops,
    /// Potential overhead `C_pot`: the share of a future full merge.
    pub potential: Ops,
}

impl FlushCost {
    /// `now + potential`.
    pub fn total(&self) -> Ops {
        self.now + self.potential
    }
}

/// The five schemes §5.1.3 compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Non-padding (FAB; BLRU flushes the same way).
    Fab,
    /// Unconditional padding.
    Bplru,
    /// Conditional padding that pads the current flush but did not pad the previous one.
    BpRef,
    /// Buffer-aware block merge.
    BaGc,
    /// Selective block padding + optimized switch merge.
    CoOp,
}

/// §5.1.3: cost of flushing `n_i` dirty pages to a log block with `n_r` free pages,
/// `N = n` pages per block. Requires `0 < n_r <= n_i <= n`.
pub fn flush_cost(scheme: Scheme, n: u32, n_i: u32, n_r: u32) -> Result<FlushCost, ModelError> {
    if n_r == 0 || n_r > n {
        return Err(ModelError::Range {
            param: "N_r",
            value: n_r,
            why: "must be from 1 to N (a partly written log block)",
        });
    }
    if n_i < n_r || n_i > n {
        return Err(ModelError::Range {
            param: "N_i",
            value: n_i,
            why: "must be from N_r to N (the flush overflows the log block)",
        });
    }
    let (nf, ni, nr) = (n as f64, n_i as f64, n_r as f64);
    let w = |k: f64| Ops::new(0.0, k, 0.0);
    let r = |k: f64| Ops::new(k, 0.0, 0.0);
    let pot = |x: f64| gc_full(n) * (x / nf);
    let none = Ops::default();
    let c = match scheme {
        // N_r T_w + GC_FM + (N_i - N_r) T_w + C_pot(N_i - N_r)
        Scheme::Fab => FlushCost {
            now: w(nr) + gc_full(n) + w(ni - nr),
            potential: pot(ni - nr),
        },
        // C_prev(N - N_r) + C_pad(N - N_i) + N T_w + GC_SM,
        // C_prev = N_r (T_r + T_w) + GC_SM
        Scheme::Bplru => FlushCost {
            now: r(nr) + w(nr) + gc_switch() + r(nf - ni) + w(nf) + gc_switch(),
            potential: none,
        },
        // C_pad(N - N_i) + N_r T_w + GC_FM + (N - N_r) T_w + C_pot(N - N_r)
        Scheme::BpRef => FlushCost {
            now: r(nf - ni) + w(nr) + gc_full(n) + w(nf - nr),
            potential: pot(nf - nr),
        },
        // N_r T_w + GC_BA-BM, GC_BA-BM = GC_FM - (N_i - N_r) T_r
        Scheme::BaGc => FlushCost {
            now: w(nr) + gc_full(n) + r(-(ni - nr)),
            potential: none,
        },
        // C_pad(N - N_i) + N T_w + GC_OSM, GC_OSM = 2 T_e
        Scheme::CoOp => FlushCost {
            now: r(nf - ni) + w(nf) + Ops::new(0.0, 0.0, 2.0),
            potential: none,
        },
    };
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ftlab_core::Nanos;

    /// co-op-buffer-ftl.txt Table 1, MLC.
    fn mlc() -> Latencies {
        Latencies {
            read: Nanos::from_us_f64(165.6),
            spare_read: Nanos::from_us_f64(165.6),
            program: Nanos::from_us_f64(905.6),
            erase: Nanos::from_us_f64(1500.0),
        }
    }

    #[test]
    fn worked_example_2_fig4_counts() {
        // 8 pages per block; the log block holds 5 pages (N_r = 3); the victim holds
        // pages 0,1,2,4,5,6,7 (N_i = 7).
        let fab = flush_cost(Scheme::Fab, 8, 7, 3).unwrap();
        assert_eq!(fab.now, Ops::new(8.0, 15.0, 2.0), "Fig. 4(a)");
        let coop = flush_cost(Scheme::CoOp, 8, 7, 3).unwrap();
        assert_eq!(coop.now, Ops::new(1.0, 8.0, 2.0), "Fig. 4(b)");
    }

    #[test]
    fn differences_to_coop_are_the_papers_inequality_terms() {
        // §5.1.3: C_BPLRU - C_CO-OP = C_BA-GC - C_CO-OP = N_r (T_r + T_w);
        // C_FAB - C_CO-OP = N_i (T_r + T_w) + C_pot(N_i - N_r);
        // C_BP-REF - C_CO-OP = N (T_r + T_w) + C_pot(N - N_r).
        let l = mlc();
        let rw = (l.read.0 + l.program.0) as f64;
        let fm = gc_full(64).time_ns(&l);
        for n_r in 1..=64u32 {
            for n_i in n_r..=64 {
                let t = |s| flush_cost(s, 64, n_i, n_r).unwrap().total().time_ns(&l);
                let coop = t(Scheme::CoOp);
                let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b.abs().max(1.0);
                assert!(close(t(Scheme::Bplru) - coop, n_r as f64 * rw));
                assert!(close(t(Scheme::BaGc) - coop, n_r as f64 * rw));
                let pot_i = fm * (n_i - n_r) as f64 / 64.0;
                assert!(close(t(Scheme::Fab) - coop, n_i as f64 * rw + pot_i));
                let pot_n = fm * (64 - n_r) as f64 / 64.0;
                assert!(close(t(Scheme::BpRef) - coop, 64.0 * rw + pot_n));
                // Hence the paper's ordering.
                assert!(coop < t(Scheme::Bplru));
                assert!(t(Scheme::Bplru) <= t(Scheme::Fab) + 1e-6);
                assert!(t(Scheme::Fab) <= t(Scheme::BpRef) + 1e-6);
            }
        }
    }

    #[test]
    fn fig3_padding_wins_with_few_dense_flushes_and_loses_with_many_sparse_ones() {
        let l = mlc();
        // One complete flush: padding costs nothing and saves a full merge.
        let pad = c_pad(128, 1, 128).unwrap().time_ns(&l);
        let nopad = c_nopad(128, 128).time_ns(&l);
        assert!(pad < nopad);
        // 64 one-page flushes: padding reads and writes almost 64 blocks.
        let pad = c_pad(128, 64, 64).unwrap().time_ns(&l);
        let nopad = c_nopad(128, 64).time_ns(&l);
        assert!(pad > 20.0 * nopad, "{pad} vs {nopad}");
        // C_nopad does not depend on N_f; C_pad grows with it.
        let a = c_pad(128, 2, 128).unwrap().time_ns(&l);
        let b = c_pad(128, 4, 128).unwrap().time_ns(&l);
        assert!(b > a);
        assert_eq!(c_pad(128, 1, 100).unwrap(), Ops::new(28.0, 128.0, 1.0));
        assert_eq!(c_nopad(128, 129), Ops::new(256.0, 385.0, 4.0));
    }

    #[test]
    fn out_of_model_inputs_are_errors() {
        assert!(flush_cost(Scheme::CoOp, 8, 2, 3).is_err());
        assert!(flush_cost(Scheme::CoOp, 8, 9, 3).is_err());
        assert!(flush_cost(Scheme::Fab, 8, 5, 0).is_err());
        let e = c_pad(8, 2, 1).unwrap_err();
        assert!(e.to_string().contains("N_sigma"), "{e}");
    }
}
