//! The machine's memory bandwidth, for reporting how close a token's time is to the cost of reading its
//! weights (tests/cpu_decoder.rs and the native rows of benches-web, tools/native_bench.rs).

use std::time::Instant;

/// Single-thread copy bandwidth in bytes per second: the best of a few copies of 256 MiB, far beyond
/// any cache, counting the bytes read (the weights are only read).
pub fn memcpy_bandwidth() -> f64 {
    let n = 256 << 20;
    let src = vec![1u8; n];
    let mut dst = vec![0u8; n];
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        dst.copy_from_slice(std::hint::black_box(&src));
        best = best.min(t.elapsed().as_secs_f64());
        std::hint::black_box(&mut dst);
    }
    n as f64 / best
}
