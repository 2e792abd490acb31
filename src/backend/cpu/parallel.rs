//! Spreading the CPU backend's loops over threads. With the `threads` feature a forward pass runs on a
//! *team*: one pool thread (rayon's: natively the machine's cores, in the browser the Web Workers that
//! wasm-bindgen-rayon starts) leads, running the pass, and every other pool thread spins beside it for
//! the whole pass, taking pieces of each loop as soon as the leader offers them. Without the feature, and
//! outside a team, loops run in order on the caller's thread. Work is only ever split between output
//! values: each value is computed by the same code with the same operands whichever thread runs it, so
//! results are bit-identical for any thread count.
//!
//! Why a team and not rayon's own parallel iterators: a pool thread that finds no work sleeps within
//! microseconds, and in the browser waking one (`Atomics.notify`) takes tens of microseconds, twice per
//! loop (the helper to take its piece, the leader to see it done). The bundled model's prompt chunks
//! are ~30 loops of 30-200 us each, so with rayon's iterators a second thread made its prompts slower
//! than one thread (docs/performance.md, "Threads"). Spinning threads cost two wake-ups per pass instead.

use std::ops::Range;

/// Threads the CPU backend's loops use.
pub fn threads() -> usize {
    #[cfg(feature = "threads")]
    return rayon::current_num_threads();
    #[cfg(not(feature = "threads"))]
    1
}

/// Runs `f`, a forward pass of `work` multiply-adds: with the `threads` feature and a pass big enough,
/// on a team of the current pool's threads (the caller waiting, if it is not one of them); on the
/// caller's thread otherwise, its loops unsplit.
pub fn on_pool<R: Send>(
    #[cfg_attr(not(feature = "threads"), allow(unused_variables))] work: usize,
    f: impl FnOnce() -> R + Send,
) -> R {
    #[cfg(feature = "threads")]
    if threads() > 1 && work >= team::MIN_PASS_WORK && team::role() == team::Role::None {
        return team::lead(f);
    }
    f()
}

/// How many pieces `work` multiply-adds in `units` independent units are cut into: 1 when threads
/// would not pay, or outside a team.
#[cfg(feature = "threads")]
pub(super) fn tasks(work: usize, units: usize) -> usize {
    if team::role() != team::Role::Leading {
        return 1;
    }
    (work / team::MIN_TASK_WORK)
        .min(threads() * team::TASKS_PER_THREAD)
        .min(units)
        .max(1)
}

/// For outputs `outs[i] = (out, rows)`, each `T` rows of `rows` values (token t's row at
/// `out[t * rows..]`), calls `f(i, band, values)` for bands of consecutive row indices, where
/// `values[t]` is token t's values of output i for the band's rows: all the outputs' bands in one loop.
/// `work`: multiply-adds in all.
pub fn for_each_band_of<F>(
    outs: Vec<(&mut [f32], usize)>,
    #[cfg_attr(not(feature = "threads"), allow(unused_variables))] work: usize,
    f: F,
) where
    F: Fn(usize, Range<usize>, &mut [&mut [f32]]) + Sync + Send,
{
    #[cfg(feature = "threads")]
    if tasks(work, usize::MAX) > 1 {
        let all_rows = outs
            .iter()
            .fold(0usize, |n, (_, rows)| n.saturating_add(*rows));
        let mut pieces = Vec::new();
        for (i, (out, rows)) in outs.into_iter().enumerate() {
            // No rows, nothing to compute (and `out` cannot be cut into rows of 0 values).
            if rows == 0 {
                continue;
            }
            // The output's share of the work, by its share of the rows (all rows cost the same).
            let share = (work / all_rows.max(1)).saturating_mul(rows);
            let band = rows.div_ceil(tasks(share, rows));
            let mut bands: Vec<Vec<&mut [f32]>> =
                (0..rows.div_ceil(band)).map(|_| Vec::new()).collect();
            for token in out.chunks_exact_mut(rows) {
                for (values, piece) in bands.iter_mut().zip(token.chunks_mut(band)) {
                    values.push(piece);
                }
            }
            pieces.extend(bands.into_iter().enumerate().map(|(b, values)| {
                let first = b * band;
                (i, first..(first + band).min(rows), values)
            }));
        }
        team::run(pieces.into_iter(), |(i, band, mut values)| {
            f(i, band, &mut values)
        });
        return;
    }
    for (i, (out, rows)) in outs.into_iter().enumerate() {
        if rows > 0 {
            let mut values: Vec<&mut [f32]> = out.chunks_exact_mut(rows).collect();
            f(i, 0..rows, &mut values);
        }
    }
}

/// Calls `f(scratch, i, chunk)` for the `len`-long chunks of `out`, where `scratch` is a value from
/// `init` that each piece of work reuses across its chunks. `work`: multiply-adds in all.
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
        team::run(
            out.chunks_mut(per_task * len).enumerate(),
            |(p, piece): (usize, &mut [f32])| {
                let mut scratch = init();
                for (i, chunk) in piece.chunks_exact_mut(len).enumerate() {
                    f(&mut scratch, p * per_task + i, chunk);
                }
            },
        );
        return;
    }
    let mut scratch = init();
    for (i, chunk) in out.chunks_exact_mut(len).enumerate() {
        f(&mut scratch, i, chunk);
    }
}

#[cfg(feature = "threads")]
mod team {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// Multiply-adds of a pass below which it stays on the caller's thread, every loop unsplit: the two
    /// wake-ups of entering the pool and leaving it cost more than splitting the pass's loops saves (the
    /// bundled model's one-token passes, 2 M).
    pub const MIN_PASS_WORK: usize = 1 << 23;

    /// Multiply-adds below which a piece of work is not worth handing to another thread (2-7 us of wasm
    /// SIMD, f32 tiles to quantized rows; handing a piece to a spinning thread costs well under one).
    pub const MIN_TASK_WORK: usize = 1 << 15;

    /// Pieces per thread: more than one, so that a thread slowed by other work on the machine is helped
    /// by the others (a piece not yet started goes to whichever thread asks first).
    pub const TASKS_PER_THREAD: usize = 4;

    /// What the current thread is doing for a team.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub enum Role {
        None,
        /// Running a pass, offering its loops' pieces.
        Leading,
        /// Spinning for a leader on another thread, running pieces it offers.
        Helping,
    }

    thread_local! {
        static ROLE: Cell<Role> = const { Cell::new(Role::None) };
    }

    pub fn role() -> Role {
        ROLE.get()
    }

    /// Sets this thread's role until dropped (also when a panic unwinds through it), then restores the
    /// previous one.
    struct RoleGuard(Role);

    impl RoleGuard {
        fn take(role: Role) -> Self {
            RoleGuard(ROLE.replace(role))
        }
    }

    impl Drop for RoleGuard {
        fn drop(&mut self) {
            ROLE.set(self.0);
        }
    }

    /// Sets the flag when dropped: the helpers stop spinning even if the pass panics.
    struct SetOnDrop<'a>(&'a AtomicBool);

    impl Drop for SetOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }

    /// Runs `f` on a pool thread that leads, every other pool thread helping until it returns.
    ///
    /// No deadlock: a thread only ever blocks (spins) in `help`, waiting for its leader's pass, or in
    /// `run`, waiting for pieces that are either still queued (the leader takes them itself) or running
    /// to completion on another thread. A thread that leads or helps already returns from `help` at
    /// once, and starts no team of its own (`on_pool` checks the role), so no thread ever waits inside
    /// another team's wait.
    pub fn lead<R: Send>(f: impl FnOnce() -> R + Send) -> R {
        let over = AtomicBool::new(false);
        let over = &over;
        rayon::scope(move |s| {
            let _over = SetOnDrop(over);
            if role() != Role::None {
                // Called from outside the pool, rayon ran this on one of its threads, which may be
                // running another pass's piece or helper (natively, concurrent callers): no team.
                return f();
            }
            for _ in 1..super::threads() {
                s.spawn(move |_| help(over));
            }
            let _leading = RoleGuard::take(Role::Leading);
            f()
        })
    }

    /// Spins until `over`, running whatever work the pool offers (the leader's pieces).
    fn help(over: &AtomicBool) {
        if role() != Role::None {
            // The leader itself, or a thread already helping, took this job off a queue.
            return;
        }
        let _helping = RoleGuard::take(Role::Helping);
        while !over.load(Ordering::Acquire) {
            if !matches!(rayon::yield_now(), Some(rayon::Yield::Executed)) {
                std::hint::spin_loop();
            }
        }
    }

    /// Runs `f` on each piece, the team's threads taking pieces as they come, and returns when all are
    /// done. The leader waits spinning (and taking pieces), not asleep: a piece a helper runs is
    /// usually done a few microseconds after the leader's last one.
    pub fn run<P: Send>(pieces: impl Iterator<Item = P>, f: impl Fn(P) + Sync) {
        let done = AtomicUsize::new(0);
        let (f, done) = (&f, &done);
        rayon::in_place_scope(move |s| {
            let mut n = 0;
            for piece in pieces {
                n += 1;
                s.spawn(move |_| {
                    f(piece);
                    done.fetch_add(1, Ordering::Release);
                });
            }
            while done.load(Ordering::Acquire) < n {
                if !matches!(rayon::yield_now(), Some(rayon::Yield::Executed)) {
                    std::hint::spin_loop();
                }
            }
        });
    }
}
