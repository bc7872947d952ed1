//! Prefetch hints: the memory a request will touch, fetched while earlier requests run.
//!
//! On a big device the per-page tables (the map, the valid bits, the oracle's
//! versions) are far larger than the caches, so each random host write misses them
//! several times, one miss waiting on the other (the map entry gives the old copy,
//! whose valid bit and block count are next). When the engine knows a request a few
//! requests ahead ([`crate::engine::Engine::prefetch`]), the FTL and the oracle fetch
//! those lines early. A hint changes no state and no result: it only moves when the
//! memory reaches the cache.

/// Asks the processor to bring the cache line of `slot` into the cache (x86-64;
/// elsewhere nothing). Taking a reference keeps the address one the caller may read.
#[inline(always)]
pub fn read<T>(slot: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads no memory the program can observe and cannot fault; SSE,
    // which the instruction belongs to, is part of every x86-64 processor.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(slot as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = slot;
}
