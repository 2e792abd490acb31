//! The threaded loops (`threads` feature) give bit-identical results whatever the number of threads: the
//! matrix products of every kernel type and attention, in rayon pools of 1 to 3 threads, on work large
//! enough to be split.

use half::f16;

use super::blocks::{BYTES_BYTES, NIBBLES_BYTES};
use super::dot::QK;
use super::layer::{self, Heads};
use super::matrix::{Matrix, Pass};
use super::parallel;
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
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(1u64.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.extend(1u64.to_le_bytes());
    b.push(b'w');
    b.extend(2u32.to_le_bytes());
    // ggml lists dimensions innermost first.
    b.extend((cols as u64).to_le_bytes());
    b.extend((rows as u64).to_le_bytes());
    b.extend(ty.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.resize(b.len().next_multiple_of(32), 0);
    for _ in 0..rows * cols / block_len {
        for _ in 0..scales {
            b.extend(f16::from_f32(rng.unit() * 0.05).to_le_bytes());
        }
        b.extend((2 * scales..block_bytes).map(|_| (rng.next() >> 24) as u8));
    }
    b
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        assert_eq!(parallel::threads(), threads);
        f()
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
        ("Q4_K", 12, (256, 144, 2), NIBBLES_BYTES),
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
