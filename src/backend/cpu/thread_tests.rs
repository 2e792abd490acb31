//! The threaded loops (`threads` feature) give bit-identical results whatever the number of threads: the
//! matrix products of every kernel type and attention, on teams of 1 to 3 threads, on work large
//! enough to be split; and a team survives concurrent passes and passes started from inside it.

use half::f16;

use super::blocks::{BYTES_BYTES, FOUR_BIT_BYTES, NIBBLES_BYTES};
use super::dot::QK;
use super::layer::{self, Heads};
use super::matrix::{Matrix, Pass};
use super::parallel;
use super::test_gguf::one_tensor;
use super::test_rng::Rng;
use crate::weights::gguf::GgufFile;

/// A one-tensor GGUF file: `rows` x `cols` of ggml type `ty` (its code, block length and bytes), random
/// blocks whose f16 scale fields (the first `scales` of each block) hold small finite values.
fn gguf(
    rng: &mut Rng,
    ty: u32,
    (block_len, block_bytes, scales): (usize, usize, usize),
    rows: usize,
    cols: usize,
) -> Vec<u8> {
    let mut data = Vec::new();
    for _ in 0..rows * cols / block_len {
        for _ in 0..scales {
            data.extend(f16::from_f32(rng.unit() * 0.05).to_le_bytes());
        }
        data.extend((2 * scales..block_bytes).map(|_| (rng.next() >> 24) as u8));
    }
    one_tensor(ty, rows, cols, &data)
}

/// `f` as a pass (`parallel::on_pool`, as big as passes come) in a pool of `threads` threads: with more
/// than one, on a team of them.
fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        assert_eq!(parallel::threads(), threads);
        parallel::on_pool(usize::MAX, f)
    })
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// `matrix` times `tokens` random rows, stepwise and as a prefill, in pools of 1 to 3 threads: the
/// same bits every time.
fn check_matmul(what: &str, matrix: &Matrix, rows: usize, cols: usize, rng: &mut Rng) {
    for (tokens, pass) in [1, 5, 32]
        .into_iter()
        .flat_map(|t| [(t, Pass::Stepwise), (t, Pass::Prefill)])
    {
        let x = rng.values(tokens * cols);
        let run = |threads| {
            in_pool(threads, || {
                let mut out = vec![f32::NAN; tokens * rows];
                matrix.matmul(&x, &mut out, pass).unwrap();
                out
            })
        };
        let one = run(1);
        assert!(
            one.iter().all(|v| v.is_finite()),
            "{what}: non-finite products"
        );
        for threads in 2..=3 {
            assert_eq!(
                bits(&run(threads)),
                bits(&one),
                "{what}, {tokens} tokens ({pass:?}), {threads} threads"
            );
        }
    }
}

#[test]
fn products_are_bit_identical_for_any_thread_count() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (rows, cols) = (1024, 512);
    // Big enough that even one token's product is split between threads, or this would prove nothing.
    assert!(in_pool(4, || parallel::tasks(rows * cols, rows)) > 1);
    // (ggml type code, (block length, block bytes, f16 scale fields), bytes per QK weights in the
    // kernel layout it is converted to).
    let types = [
        ("Q8_0", 8, (32, 34, 1), BYTES_BYTES),
        ("Q4_0", 2, (32, 18, 1), NIBBLES_BYTES),
        ("Q4_1", 3, (32, 20, 2), NIBBLES_BYTES),
        ("Q4_K", 12, (256, 144, 2), FOUR_BIT_BYTES / 8),
    ];
    for (name, code, layout, kernel_bytes) in types {
        let bytes = gguf(&mut rng, code, layout, rows, cols);
        let file = GgufFile::parse(&bytes).unwrap();
        let matrix = Matrix::from_gguf(file.tensor("w").unwrap(), rows, cols).unwrap();
        assert_eq!(
            matrix.weight_bytes(),
            rows * cols / QK * kernel_bytes,
            "{name} stays quantized"
        );
        check_matmul(name, &matrix, rows, cols, &mut rng);
    }
    let dense = Matrix::dense(rows, cols, rng.values(rows * cols));
    check_matmul("F32", &dense, rows, cols, &mut rng);
}

#[test]
fn attention_is_bit_identical_for_any_thread_count() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let heads = Heads {
        q: 16,
        kv: 4,
        dim: 64,
    };
    for (start, tokens) in [(300, 1), (40, 7), (0, 32)] {
        let q = rng.values(tokens * heads.q * heads.dim);
        let keys = rng.values((start + tokens) * heads.kv * heads.dim);
        let values = rng.values((start + tokens) * heads.kv * heads.dim);
        // Even one token's heads are split between threads, or this would prove nothing.
        let work = 2 * q.len() * (start + tokens);
        assert!(in_pool(4, || parallel::tasks(work, tokens * heads.q)) > 1);
        let run = |threads| {
            in_pool(threads, || {
                let mut out = vec![f32::NAN; q.len()];
                layer::attention(&q, &keys, &values, start, heads, &mut out);
                out
            })
        };
        let one = run(1);
        assert!(one.iter().all(|v| v.is_finite()));
        for threads in 2..=3 {
            assert_eq!(
                bits(&run(threads)),
                bits(&one),
                "start {start}, {tokens} tokens, {threads} threads"
            );
        }
    }
}

/// Passes entering one pool from several threads at once (natively, concurrent callers of a model's
/// pool) each finish with the bits of a one-thread run: a pass whose leader is already busy for another
/// team runs unsplit, and no thread waits inside another team's wait.
#[test]
fn concurrent_passes_share_a_pool() {
    let mut rng = Rng(0x6a09_e667_f3bc_c908);
    let (rows, cols, tokens) = (512, 256, 9);
    let matrix = Matrix::dense(rows, cols, rng.values(rows * cols));
    let x = rng.values(tokens * cols);
    let product = || {
        let mut out = vec![f32::NAN; tokens * rows];
        matrix.matmul(&x, &mut out, Pass::Prefill).unwrap();
        bits(&out)
    };
    let want = in_pool(1, product);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    std::thread::scope(|s| {
        let callers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    (0..25)
                        .map(|_| pool.install(|| parallel::on_pool(usize::MAX, product)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for caller in callers {
            for got in caller.join().unwrap() {
                assert_eq!(got, want);
            }
        }
    });
}

/// A pass started inside a pass (and so on a thread of its team) runs as part of that team.
#[test]
fn a_pass_inside_a_pass_stays_on_its_team() {
    let tasks = in_pool(3, || {
        parallel::on_pool(usize::MAX, || parallel::tasks(usize::MAX, 100))
    });
    assert!(tasks > 1);
    assert_eq!(in_pool(3, || parallel::tasks(0, 100)), 1, "too little work");
}

/// The helpers really take pieces: in a team of 3, the pieces of one loop (64 chunks of 2 ms in 12
/// pieces: the leader alone would need 128 ms, far longer than a helper takes to arrive even on a busy
/// machine) run on more than one thread.
#[test]
fn a_team_spreads_a_loop_over_its_threads() {
    let ran_on = std::sync::Mutex::new(std::collections::HashSet::new());
    let mut out = vec![0.0f32; 256];
    in_pool(3, || {
        parallel::for_each_chunk(
            &mut out,
            4,
            usize::MAX,
            || (),
            |_, i, chunk| {
                let until = std::time::Instant::now() + std::time::Duration::from_millis(2);
                while std::time::Instant::now() < until {
                    std::hint::spin_loop();
                }
                chunk.fill(i as f32);
                ran_on.lock().unwrap().insert(rayon::current_thread_index());
            },
        )
    });
    assert!(
        ran_on.lock().unwrap().len() > 1,
        "{:?}",
        ran_on.lock().unwrap()
    );
    for (i, chunk) in out.chunks(4).enumerate() {
        assert!(chunk.iter().all(|&v| v == i as f32));
    }
}
