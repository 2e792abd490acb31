//! What both runtimes' programs share: the arguments, the prompt, the causal mask, and the timing loop
//! (a prompt, then greedy one-token steps with the cache going back in, as benches-web's ort peer runs).

use std::time::Instant;

/// `model.onnx layers kv_heads head_dim prompt_len decode reps`.
pub struct Args {
    pub model: String,
    pub layers: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    prompt: usize,
    decode: usize,
    reps: usize,
}

impl Args {
    pub fn parse() -> Args {
        let a: Vec<String> = std::env::args().collect();
        let usage = "usage: MODEL.onnx LAYERS KV_HEADS HEAD_DIM PROMPT_LEN DECODE REPS";
        let n = |i: usize| -> usize { a.get(i).and_then(|v| v.parse().ok()).expect(usage) };
        Args {
            model: a.get(1).expect(usage).clone(),
            layers: n(2),
            kv_heads: n(3),
            head_dim: n(4),
            prompt: n(5),
            decode: n(6),
            reps: n(7),
        }
    }
}

/// The additive causal mask `[ids, start + ids]` of `ids` new tokens after `start` cached ones.
pub fn mask(ids: usize, start: usize) -> Vec<f32> {
    let total = start + ids;
    (0..ids * total)
        .map(|k| {
            if k % total > start + k / total {
                f32::NEG_INFINITY
            } else {
                0.0
            }
        })
        .collect()
}

pub fn argmax(logits: impl Iterator<Item = f32>) -> usize {
    logits
        .enumerate()
        .fold(
            (0, f32::NEG_INFINITY),
            |b, (i, v)| if v > b.1 { (i, v) } else { b },
        )
        .0
}

/// Times `reps` runs of a prompt (the same synthetic ids as benches-web/cpu-runtimes/wisp.mjs) and
/// `decode` greedy steps. `step(ids, start, cache)` runs `ids` after `start` cached tokens and returns
/// the next token and the new cache; `empty` is the cache of no tokens.
pub fn bench<C>(args: &Args, empty: C, mut step: impl FnMut(&[i64], usize, &C) -> (usize, C)) {
    let prompt: Vec<i64> = (0..args.prompt as i64)
        .map(|i| (i * 37 + 11) % 1500 + 5)
        .collect();
    let (mut ttfts, mut rates) = (Vec::new(), Vec::new());
    for _ in 0..args.reps {
        let t = Instant::now();
        let (mut next, mut cache) = step(&prompt, 0, &empty);
        ttfts.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        for i in 0..args.decode {
            (next, cache) = step(&[next as i64], args.prompt + i, &cache);
        }
        rates.push(args.decode as f64 / t.elapsed().as_secs_f64());
    }
    ttfts.sort_by(f64::total_cmp);
    rates.sort_by(f64::total_cmp);
    let mid = args.reps / 2;
    println!(
        "prompt {}: ttft_ms median {:.1} min {:.1}; decode tok/s median {:.1} max {:.1} (over {})",
        args.prompt,
        ttfts[mid],
        ttfts[0],
        rates[mid],
        rates[args.reps - 1],
        args.decode
    );
}

pub fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let v = f();
    println!("{what}_ms {:.1}", t.elapsed().as_secs_f64() * 1e3);
    v
}
