//! Spreading the CPU backend's loops over threads. With the `threads` feature they run on rayon's pool
//! (natively the machine's cores; in the browser the Web Workers that wasm-bindgen-rayon starts), in
//! order otherwise. Work is only ever split between output values: each value is computed by the same
//! code with the same operands whichever thread runs it, so results are bit-identical for any thread
//! count.

use std::ops::Range;

#[cfg(feature = "threads")]
use rayon::prelude::*;

/// Threads the CPU backend's loops use.
pub fn threads() -> usize {
    #[cfg(feature = "threads")]
    return rayon::current_num_threads();
    #[cfg(not(feature = "threads"))]
    1
}

/// Runs `f`, a forward pass of `work` multiply-adds, on one of the pool's threads (with the `threads`
/// feature, when the pass is big enough), the caller waiting; here otherwise. Loops only split inside the
/// pool, among threads already there: handing each one over from the caller, and waiting for it there,
/// would cost two thread wake-ups per loop instead of two per pass.
pub fn on_pool<R: Send>(
    #[cfg_attr(not(feature = "threads"), allow(unused_variables))] work: usize,
    f: impl FnOnce() -> R + Send,
) -> R {
    #[cfg(feature = "threads")]
    if threads() > 1 && rayon::current_thread_index().is_none() && work >= MIN_PASS_WORK {
        return rayon::scope(|_| f());
    }
    f()
}

/// Multiply-adds of a pass below which it stays on the caller's thread, every loop unsplit: the two
/// wake-ups of entering the pool and leaving it cost more than splitting the pass's loops saves (the
/// bundled model's one-token passes, 3.7 M).
#[cfg(feature = "threads")]
const MIN_PASS_WORK: usize = 1 << 23;

/// Multiply-adds below which a piece of work is not worth handing to another thread (about 70 us of wasm
/// SIMD): in the browser a pool thread that finds no work sleeps within microseconds, and waking it, or
/// waking the thread that waits for its piece, takes tens.
#[cfg(feature = "threads")]
const MIN_TASK_WORK: usize = 1 << 18;

/// Pieces per thread: more than one, so that a thread slowed by other work on the machine is helped by
/// the others (rayon steals the pieces it has not started).
#[cfg(feature = "threads")]
const TASKS_PER_THREAD: usize = 4;

/// How many pieces `work` multiply-adds in `units` independent units are cut into: 1 when threads
/// would not pay, or outside the pool (see `on_pool`).
#[cfg(feature = "threads")]
pub(super) fn tasks(work: usize, units: usize) -> usize {
    let threads = threads();
    if threads < 2 || rayon::current_thread_index().is_none() {
        return 1;
    }
    (work / MIN_TASK_WORK)
        .min(threads * TASKS_PER_THREAD)
        .min(units)
        .max(1)
}

/// For an output `out` of `T` rows of `rows` values (token t's row at `out[t * rows..]`), calls
/// `f(band, outs)` for bands of consecutive row indices, where `outs[t]` is token t's values for the
/// band's rows. `work`: multiply-adds in all.
pub fn for_each_band<F>(
    out: &mut [f32],
    rows: usize,
    #[cfg_attr(not(feature = "threads"), allow(unused_variables))] work: usize,
    f: F,
) where
    F: Fn(Range<usize>, &mut [&mut [f32]]) + Sync + Send,
{
    // No rows, nothing to compute (and `out` cannot be cut into rows of 0 values).
    if rows == 0 {
        return;
    }
    #[cfg(feature = "threads")]
    let tasks = tasks(work, rows);
    #[cfg(feature = "threads")]
    if tasks > 1 {
        let band = rows.div_ceil(tasks);
        let mut bands: Vec<Vec<&mut [f32]>> =
            (0..rows.div_ceil(band)).map(|_| Vec::new()).collect();
        for token in out.chunks_exact_mut(rows) {
            for (outs, piece) in bands.iter_mut().zip(token.chunks_mut(band)) {
                outs.push(piece);
            }
        }
        bands.into_par_iter().enumerate().for_each(|(b, mut outs)| {
            let first = b * band;
            f(first..(first + band).min(rows), &mut outs);
        });
        return;
    }
    let mut outs: Vec<&mut [f32]> = out.chunks_exact_mut(rows).collect();
    f(0..rows, &mut outs);
}

/// Calls `f(scratch, i, chunk)` for the `len`-long chunks of `out`, where `scratch` is a value from
/// `init` that each thread reuses across its chunks. `work`: multiply-adds in all.
pub fn for_each_chunk<S, I, F>(
    out: &mut [f32],
    len: usize,
    #[cfg_attr(not(feature = "threads"), allow(unused_variables))] work: usize,
    init: I,
    f: F,
) where
    I: Fn() -> S + Sync + Send,
    F: Fn(&mut S, usize, &mut [f32]) + Sync + Send,
{
    #[cfg(feature = "threads")]
    let (chunks, tasks) = (out.len() / len, tasks(work, out.len() / len));
    #[cfg(feature = "threads")]
    if tasks > 1 {
        let per_task = chunks.div_ceil(tasks);
        out.par_chunks_mut(len)
            .enumerate()
            .with_min_len(per_task)
            .for_each_init(init, |scratch, (i, chunk)| f(scratch, i, chunk));
        return;
    }
    let mut scratch = init();
    for (i, chunk) in out.chunks_exact_mut(len).enumerate() {
        f(&mut scratch, i, chunk);
    }
}
