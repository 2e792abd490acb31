//! Picks the next token from the logits: logits processors, penalties, then greedy or temperature, top-k,
//! top-p and min-p with Hugging Face semantics and a draw from a seeded ChaCha generator, so that a seed
//! reproduces a generation exactly on every platform.

use std::cmp::Ordering;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::processor::LogitsProcessor;
use crate::error::{Result, WispError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SamplingParams {
    /// 0 always picks the most likely token (greedy); above 1 flattens the distribution, below sharpens it.
    pub temperature: f32,
    /// Keeps only the `top_k` most likely tokens (and any tied with the last of them); 0 keeps all.
    pub top_k: u32,
    /// Keeps the most likely tokens until their probability reaches `top_p`; 1 keeps all.
    pub top_p: f32,
    /// Drops the tokens less likely than `min_p` times the most likely one; 0 keeps all.
    pub min_p: f32,
    /// Hugging Face's (CTRL's) penalty on the tokens of the history: their positive logits are divided by
    /// it and their negative ones multiplied; 1 is none.
    pub repetition_penalty: f32,
    /// OpenAI's: subtracted once from the logit of every token of the history; 0 is none.
    pub presence_penalty: f32,
    /// OpenAI's: subtracted from the logit of a token once per occurrence in the history; 0 is none.
    pub frequency_penalty: f32,
    /// Seed of the random draws; `None` leaves it to the caller's fresh entropy (see `Sampler::new`).
    pub seed: Option<u64>,
}

/// Greedy: the package's one sampling default (JavaScript's `generate`, agents, the OpenAI surface and
/// the AI SDK provider send the same).
impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            repetition_penalty: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            seed: None,
        }
    }
}

impl SamplingParams {
    /// Rejects a NaN, infinite or out-of-range value with an `INVALID_REQUEST` error naming the field.
    pub fn validate(&self) -> Result<()> {
        check(
            "temperature",
            self.temperature,
            self.temperature >= 0.0,
            "must be >= 0",
        )?;
        check(
            "top_p",
            self.top_p,
            self.top_p > 0.0 && self.top_p <= 1.0,
            "must be in (0, 1]",
        )?;
        check(
            "min_p",
            self.min_p,
            (0.0..=1.0).contains(&self.min_p),
            "must be in [0, 1]",
        )?;
        check(
            "repetition_penalty",
            self.repetition_penalty,
            self.repetition_penalty > 0.0,
            "must be > 0",
        )?;
        check(
            "presence_penalty",
            self.presence_penalty,
            true,
            "must be finite",
        )?;
        check(
            "frequency_penalty",
            self.frequency_penalty,
            true,
            "must be finite",
        )
    }

    fn has_penalties(&self) -> bool {
        self.repetition_penalty != 1.0
            || self.presence_penalty != 0.0
            || self.frequency_penalty != 0.0
    }
}

fn check(field: &str, value: f32, in_range: bool, rule: &str) -> Result<()> {
    if value.is_finite() && in_range {
        Ok(())
    } else {
        Err(WispError::InvalidRequest(format!(
            "sampling parameter {field} {rule}, got {value}"
        )))
    }
}

fn all_masked(count: usize) -> WispError {
    WispError::AllTokensMasked(format!("all {count} logits are -inf or NaN"))
}

/// A token still in the running, with its probability up to a common factor (the most likely has 1).
#[derive(Clone, Copy)]
struct Candidate {
    id: u32,
    weight: f32,
}

/// Most likely first; ties in id order, so that the outcome never depends on the sort's whims.
fn by_weight_desc(a: &Candidate, b: &Candidate) -> Ordering {
    b.weight.total_cmp(&a.weight).then(a.id.cmp(&b.id))
}

pub struct Sampler {
    params: SamplingParams,
    rng: ChaCha8Rng,
    processors: Vec<Box<dyn LogitsProcessor>>,
    // Scratch kept between calls, so that a step allocates nothing vocabulary-sized.
    candidates: Vec<Candidate>,
    sorted_history: Vec<u32>,
}

impl Sampler {
    /// Validates `params`; the draws are seeded with `params.seed`, or with `fallback_seed` (fresh entropy
    /// from the caller) when the request gave none.
    pub fn new(params: SamplingParams, fallback_seed: u64) -> Result<Self> {
        params.validate()?;
        let rng = ChaCha8Rng::seed_from_u64(params.seed.unwrap_or(fallback_seed));
        Ok(Sampler {
            params,
            rng,
            processors: Vec::new(),
            candidates: Vec::new(),
            sorted_history: Vec::new(),
        })
    }

    /// Adds a processor; processors run in the order they were added, before the penalties.
    pub fn add_processor(&mut self, processor: Box<dyn LogitsProcessor>) {
        self.processors.push(processor);
    }

    /// Picks the next token. `logits` (one row, one entry per token id) is modified in place by the
    /// processors and penalties; `history` is what the penalties count (Hugging Face passes the prompt and
    /// the generated tokens). The processors are told the token picked.
    pub fn sample(&mut self, logits: &mut [f32], history: &[u32]) -> Result<u32> {
        for processor in &mut self.processors {
            processor.process(history, logits)?;
        }
        self.apply_penalties(logits, history)?;
        let token = if self.params.temperature == 0.0 {
            greedy(logits)?
        } else {
            self.draw(logits)?
        };
        for processor in &mut self.processors {
            processor.accept(token)?;
        }
        Ok(token)
    }

    /// The tokens a processor forces after the last sampled one (see `LogitsProcessor::jump_forward`); the
    /// other processors are told them as if sampled.
    pub fn jump_forward(&mut self) -> Result<Vec<u32>> {
        for i in 0..self.processors.len() {
            let forced = self.processors[i].jump_forward()?;
            if !forced.is_empty() {
                for (j, other) in self.processors.iter_mut().enumerate() {
                    if j != i {
                        for &token in &forced {
                            other.accept(token)?;
                        }
                    }
                }
                return Ok(forced);
            }
        }
        Ok(Vec::new())
    }

    /// Repetition penalty first, then presence and frequency, as vLLM orders them.
    fn apply_penalties(&mut self, logits: &mut [f32], history: &[u32]) -> Result<()> {
        let params = &self.params;
        if !params.has_penalties() {
            return Ok(());
        }
        // Sorting groups the occurrences of each token: counts without a vocabulary-sized table.
        self.sorted_history.clear();
        self.sorted_history.extend_from_slice(history);
        self.sorted_history.sort_unstable();
        let vocab = logits.len();
        for run in self.sorted_history.chunk_by(|a, b| a == b) {
            let id = run[0];
            let logit = logits.get_mut(id as usize).ok_or_else(|| {
                WispError::InvalidInput(format!("history token {id} is outside the {vocab} logits"))
            })?;
            let penalized = if *logit < 0.0 {
                *logit * params.repetition_penalty
            } else {
                *logit / params.repetition_penalty
            };
            *logit =
                penalized - params.presence_penalty - params.frequency_penalty * run.len() as f32;
        }
        Ok(())
    }

    /// Temperature, top-k, top-p, min-p, then one draw.
    fn draw(&mut self, logits: &[f32]) -> Result<u32> {
        let SamplingParams {
            temperature,
            top_k,
            top_p,
            min_p,
            ..
        } = self.params;
        // `f32::max` ignores NaN, so NaN logits never become the maximum.
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        if max == f32::NEG_INFINITY {
            return Err(all_masked(logits.len()));
        }
        let candidates = &mut self.candidates;
        candidates.clear();
        if max == f32::INFINITY {
            // Tokens forced to +inf outweigh every finite one and are equally likely among themselves.
            candidates.extend(
                (0u32..)
                    .zip(logits)
                    .filter(|(_, &l)| l == f32::INFINITY)
                    .map(|(id, _)| Candidate { id, weight: 1.0 }),
            );
        } else {
            // softmax(l / T) up to a factor, shifted by the maximum so that it cannot overflow. A weight
            // that underflows to 0 could never be drawn (and adds no mass to top-p), so it is left out.
            candidates.extend(
                (0u32..)
                    .zip(logits)
                    .filter(|(_, l)| l.is_finite())
                    .map(|(id, &l)| Candidate {
                        id,
                        weight: ((l - max) / temperature).exp(),
                    })
                    .filter(|c| c.weight > 0.0),
            );
        }

        let k = top_k as usize;
        let apply_top_k = k > 0 && k < candidates.len();
        if apply_top_k {
            candidates.select_nth_unstable_by(k - 1, by_weight_desc);
            let kth = candidates[k - 1].weight;
            // Hugging Face keeps every token tied with the k-th: move those from the tail to the front.
            let mut end = k;
            for i in k..candidates.len() {
                if candidates[i].weight == kth {
                    candidates.swap(i, end);
                    end += 1;
                }
            }
            candidates.truncate(end);
        }
        // Only top-p needs the candidates in order, but the draw walks them in their order too, which
        // must not depend on how `select_nth_unstable_by` happens to leave them: so sort whatever top-k
        // kept (few), and the whole vocabulary only for top-p. Untouched, they are in id order.
        if top_p < 1.0 || apply_top_k {
            candidates.sort_unstable_by(by_weight_desc);
        }

        if top_p < 1.0 {
            // A token stays while the mass of the more likely ones is below top_p, so the one that
            // crosses the threshold stays too, and so does the most likely one.
            let threshold = f64::from(top_p) * total_weight(candidates);
            let mut mass = 0.0;
            let keep = candidates
                .iter()
                .take_while(|c| {
                    let below = mass < threshold;
                    mass += f64::from(c.weight);
                    below
                })
                .count();
            candidates.truncate(keep);
        }

        if min_p > 0.0 {
            // Weights are probabilities up to a common factor, so comparing them to the largest one's
            // compares probabilities.
            let floor = candidates.iter().map(|c| c.weight).fold(0.0, f32::max) * min_p;
            candidates.retain(|c| c.weight >= floor);
        }

        let target = unit(&mut self.rng) * total_weight(candidates);
        let mut mass = 0.0;
        for c in candidates.iter() {
            mass += f64::from(c.weight);
            if target < mass {
                return Ok(c.id);
            }
        }
        // Rounding can leave the target a hair above the last partial sum: the last candidate takes it.
        candidates
            .last()
            .map(|c| c.id)
            .ok_or_else(|| all_masked(logits.len()))
    }
}

/// The most likely token; the lowest id among ties; never NaN.
fn greedy(logits: &[f32]) -> Result<u32> {
    let mut best: Option<(u32, f32)> = None;
    for (id, &l) in (0u32..).zip(logits) {
        // Strictly greater keeps the lowest id among ties; NaN compares false and is skipped.
        if l > best.map_or(f32::NEG_INFINITY, |(_, b)| b) {
            best = Some((id, l));
        }
    }
    best.map(|(id, _)| id)
        .ok_or_else(|| all_masked(logits.len()))
}

fn total_weight(candidates: &[Candidate]) -> f64 {
    candidates.iter().map(|c| f64::from(c.weight)).sum()
}

/// Uniform in [0, 1): the top 53 bits of a draw, as many as an f64 mantissa holds.
fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::HashSet;
    use std::rc::Rc;

    use super::*;

    fn params(temperature: f32) -> SamplingParams {
        SamplingParams {
            temperature,
            ..SamplingParams::default()
        }
    }

    fn sampler(params: SamplingParams) -> Sampler {
        Sampler::new(params, 7).unwrap()
    }

    /// A deterministic, irregular logits row.
    fn logits(vocab: usize, salt: u32) -> Vec<f32> {
        (0..vocab)
            .map(|i| ((i as f32 * 12.9898 + salt as f32 * 78.233).sin() * 43.758).fract() * 8.0)
            .collect()
    }

    /// Token counts over `n` draws from the same logits.
    fn histogram(s: &mut Sampler, row: &[f32], n: usize) -> Vec<usize> {
        let mut counts = vec![0; row.len()];
        for _ in 0..n {
            counts[s.sample(&mut row.to_vec(), &[]).unwrap() as usize] += 1;
        }
        counts
    }

    fn sequence(params: SamplingParams, fallback_seed: u64) -> Vec<u32> {
        let mut s = Sampler::new(params, fallback_seed).unwrap();
        let mut history = Vec::new();
        for i in 0..64 {
            let token = s.sample(&mut logits(50, i), &history).unwrap();
            history.push(token);
        }
        history
    }

    #[test]
    fn invalid_params_name_the_field() {
        let cases: Vec<(&str, SamplingParams)> = vec![
            (
                "temperature",
                SamplingParams {
                    temperature: f32::NAN,
                    ..Default::default()
                },
            ),
            (
                "temperature",
                SamplingParams {
                    temperature: -0.5,
                    ..Default::default()
                },
            ),
            (
                "temperature",
                SamplingParams {
                    temperature: f32::INFINITY,
                    ..Default::default()
                },
            ),
            (
                "top_p",
                SamplingParams {
                    top_p: 0.0,
                    ..Default::default()
                },
            ),
            (
                "top_p",
                SamplingParams {
                    top_p: 1.5,
                    ..Default::default()
                },
            ),
            (
                "top_p",
                SamplingParams {
                    top_p: f32::NAN,
                    ..Default::default()
                },
            ),
            (
                "min_p",
                SamplingParams {
                    min_p: -0.1,
                    ..Default::default()
                },
            ),
            (
                "min_p",
                SamplingParams {
                    min_p: 1.1,
                    ..Default::default()
                },
            ),
            (
                "repetition_penalty",
                SamplingParams {
                    repetition_penalty: 0.0,
                    ..Default::default()
                },
            ),
            (
                "presence_penalty",
                SamplingParams {
                    presence_penalty: f32::NAN,
                    ..Default::default()
                },
            ),
            (
                "frequency_penalty",
                SamplingParams {
                    frequency_penalty: f32::NEG_INFINITY,
                    ..Default::default()
                },
            ),
        ];
        for (field, p) in cases {
            let err = p.validate().unwrap_err();
            assert_eq!(err.code(), "INVALID_REQUEST", "{field}");
            assert!(err.to_string().contains(field), "{err} should name {field}");
            assert_eq!(Sampler::new(p, 0).err(), Some(err));
        }
        SamplingParams::default().validate().unwrap();
        SamplingParams {
            temperature: 0.0,
            top_p: 1.0,
            min_p: 1.0,
            presence_penalty: -2.0,
            ..Default::default()
        }
        .validate()
        .unwrap();
    }

    #[test]
    fn params_deserialize_with_defaults() {
        let p: SamplingParams =
            serde_json::from_str(r#"{"temperature": 0.7, "top_k": 40, "seed": 3}"#).unwrap();
        assert_eq!(
            p,
            SamplingParams {
                temperature: 0.7,
                top_k: 40,
                seed: Some(3),
                ..Default::default()
            }
        );
    }

    #[test]
    fn greedy_picks_the_argmax_lowest_id_on_ties_never_nan() {
        let mut s = sampler(params(0.0));
        assert_eq!(s.sample(&mut [0.1, 2.0, -1.0, 1.9], &[]).unwrap(), 1);
        assert_eq!(s.sample(&mut [0.1, 3.0, -1.0, 3.0], &[]).unwrap(), 1);
        assert_eq!(s.sample(&mut [f32::NAN, -5.0, f32::NAN], &[]).unwrap(), 1);
        assert_eq!(
            s.sample(&mut [f32::NEG_INFINITY, -1e30, f32::NEG_INFINITY], &[])
                .unwrap(),
            1
        );
        for salt in 0..20 {
            let row = logits(100, salt);
            let argmax = (0..100).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap() as u32;
            assert_eq!(s.sample(&mut row.clone(), &[]).unwrap(), argmax);
        }
    }

    #[test]
    fn all_masked_is_an_error_not_a_token() {
        for temperature in [0.0, 1.0] {
            let mut s = sampler(params(temperature));
            for row in [
                vec![f32::NEG_INFINITY; 5],
                vec![f32::NAN; 5],
                vec![f32::NAN, f32::NEG_INFINITY],
                vec![],
            ] {
                let err = s.sample(&mut row.clone(), &[]).unwrap_err();
                assert_eq!(err.code(), "ALL_TOKENS_MASKED", "{row:?}");
            }
        }
    }

    #[test]
    fn sampling_never_picks_nan_or_masked_tokens() {
        let mut s = sampler(params(1.0));
        let row = [f32::NAN, 0.0, f32::NEG_INFINITY, f32::NAN, 0.5];
        let counts = histogram(&mut s, &row, 500);
        assert_eq!(counts[0] + counts[2] + counts[3], 0);
        assert!(counts[1] > 0 && counts[4] > 0);
        // +inf outweighs everything finite.
        let counts = histogram(&mut s, &[1.0, f32::INFINITY, 50.0, f32::INFINITY], 500);
        assert_eq!(counts[0] + counts[2], 0);
        assert!(counts[1] > 0 && counts[3] > 0);
    }

    #[test]
    fn same_seed_same_sequence_different_seed_different_sequence() {
        let seeded = |seed| SamplingParams {
            seed: Some(seed),
            ..params(1.0)
        };
        assert_eq!(sequence(seeded(42), 1), sequence(seeded(42), 2));
        assert_ne!(sequence(seeded(42), 1), sequence(seeded(43), 1));
        // Without a seed in the request, the caller's seed decides.
        assert_eq!(sequence(params(1.0), 5), sequence(params(1.0), 5));
        assert_ne!(sequence(params(1.0), 5), sequence(params(1.0), 6));
        // Every stage at once.
        let all = |seed| SamplingParams {
            top_k: 20,
            top_p: 0.9,
            min_p: 0.05,
            repetition_penalty: 1.3,
            seed: Some(seed),
            ..params(0.8)
        };
        assert_eq!(sequence(all(9), 0), sequence(all(9), 0));
        assert_ne!(sequence(all(9), 0), sequence(all(10), 0));
    }

    #[test]
    fn temperature_one_follows_the_softmax() {
        // p(1) = 3 / (1 + 3).
        let mut s = sampler(params(1.0));
        let counts = histogram(&mut s, &[0.0, 3f32.ln()], 4000);
        let share = counts[1] as f64 / 4000.0;
        assert!((share - 0.75).abs() < 0.03, "{share}");
        // Temperature 0.5 squares the odds: 9 / (1 + 9).
        let mut s = sampler(params(0.5));
        let counts = histogram(&mut s, &[0.0, 3f32.ln()], 4000);
        let share = counts[1] as f64 / 4000.0;
        assert!((share - 0.9).abs() < 0.03, "{share}");
    }

    #[test]
    fn top_k_one_and_tiny_top_p_equal_greedy() {
        let mut greedy = sampler(params(0.0));
        let mut top_k = sampler(SamplingParams {
            top_k: 1,
            ..params(1.5)
        });
        let mut top_p = sampler(SamplingParams {
            top_p: 1e-6,
            ..params(1.5)
        });
        for salt in 0..50 {
            let row = logits(200, salt);
            let expected = greedy.sample(&mut row.clone(), &[]).unwrap();
            assert_eq!(top_k.sample(&mut row.clone(), &[]).unwrap(), expected);
            assert_eq!(top_p.sample(&mut row.clone(), &[]).unwrap(), expected);
        }
        // Tied maxima: top-p keeps the lowest id only, as greedy picks it.
        assert_eq!(top_p.sample(&mut [1.0, 4.0, 4.0, 4.0], &[]).unwrap(), 1);
    }

    #[test]
    fn top_k_keeps_the_k_best_and_their_ties() {
        let mut s = sampler(SamplingParams {
            top_k: 2,
            ..params(1.0)
        });
        let counts = histogram(&mut s, &[1.0, 0.0, 1.2, 0.9, 1.1], 2000);
        assert_eq!(counts[0] + counts[1] + counts[3], 0, "{counts:?}");
        assert!(counts[2] > 0 && counts[4] > 0);
        // The 2nd best (1.0) is tied: both stay, like Hugging Face's `scores < kth` test.
        let counts = histogram(&mut s, &[1.0, 0.0, 1.2, 1.0], 2000);
        assert_eq!(counts[1], 0);
        assert!(counts[0] > 0 && counts[2] > 0 && counts[3] > 0);
    }

    #[test]
    fn top_p_keeps_the_token_that_crosses_the_threshold() {
        // Probabilities 0.5, 0.3, 0.15, 0.05: the mass before token 1 is 0.5 < 0.7 (stays), before token
        // 2 it is 0.8 (dropped).
        let row: Vec<f32> = [0.5f32, 0.3, 0.15, 0.05].iter().map(|p| p.ln()).collect();
        let mut s = sampler(SamplingParams {
            top_p: 0.7,
            ..params(1.0)
        });
        let counts = histogram(&mut s, &row, 2000);
        assert_eq!(counts[2] + counts[3], 0, "{counts:?}");
        let share = counts[1] as f64 / 2000.0;
        assert!(
            (share - 0.375).abs() < 0.04,
            "renormalized 0.3 / 0.8, got {share}"
        );
    }

    #[test]
    fn min_p_drops_tokens_below_a_fraction_of_the_best() {
        let row: Vec<f32> = [1.0f32, 0.5, 0.05, 0.2].iter().map(|p| p.ln()).collect();
        let mut s = sampler(SamplingParams {
            min_p: 0.1,
            ..params(1.0)
        });
        let counts = histogram(&mut s, &row, 3000);
        assert_eq!(counts[2], 0, "{counts:?}");
        assert!(counts[0] > 0 && counts[1] > 0 && counts[3] > 0);
        let mut s = sampler(SamplingParams {
            min_p: 0.6,
            ..params(1.0)
        });
        assert_eq!(histogram(&mut s, &row, 200)[0], 200);
    }

    #[test]
    fn repetition_penalty_divides_positive_and_multiplies_negative_logits() {
        let mut s = sampler(SamplingParams {
            repetition_penalty: 2.0,
            ..params(0.0)
        });
        let mut row = [2.0, -1.0, 0.5, 3.0];
        assert_eq!(s.sample(&mut row, &[0, 1, 0]).unwrap(), 3);
        assert_eq!(row, [1.0, -2.0, 0.5, 3.0]);
        // It can change the pick: 3.0 / 2 < 2.0.
        assert_eq!(s.sample(&mut [2.0, -1.0, 0.5, 3.0], &[3]).unwrap(), 0);
    }

    #[test]
    fn presence_and_frequency_penalties_subtract() {
        let mut s = sampler(SamplingParams {
            presence_penalty: 0.5,
            frequency_penalty: 0.25,
            ..params(0.0)
        });
        let mut row = [2.0, -1.0, 0.5, f32::NEG_INFINITY];
        s.sample(&mut row, &[0, 1, 0, 3]).unwrap();
        assert_eq!(
            row,
            [2.0 - 0.5 - 0.5, -1.0 - 0.5 - 0.25, 0.5, f32::NEG_INFINITY]
        );
        let err = s.sample(&mut [0.0; 4], &[4]).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
    }

    /// Bans a set of tokens and records what it is told was sampled.
    struct Ban {
        banned: HashSet<u32>,
        accepted: Rc<RefCell<Vec<u32>>>,
    }

    impl LogitsProcessor for Ban {
        fn process(&mut self, _history: &[u32], logits: &mut [f32]) -> Result<()> {
            for &id in &self.banned {
                logits[id as usize] = f32::NEG_INFINITY;
            }
            Ok(())
        }

        fn accept(&mut self, token: u32) -> Result<()> {
            self.accepted.borrow_mut().push(token);
            Ok(())
        }
    }

    #[test]
    fn processors_mask_before_sampling_and_hear_the_pick() {
        let accepted = Rc::new(RefCell::new(Vec::new()));
        let mut s = sampler(params(0.0));
        s.add_processor(Box::new(Ban {
            banned: HashSet::from([3]),
            accepted: accepted.clone(),
        }));
        assert_eq!(s.sample(&mut [2.0, -1.0, 0.5, 3.0], &[]).unwrap(), 0);
        assert_eq!(s.sample(&mut [2.0, -1.0, 2.5, 3.0], &[]).unwrap(), 2);
        assert_eq!(*accepted.borrow(), [0, 2]);

        let mut s = sampler(params(1.0));
        s.add_processor(Box::new(Ban {
            banned: HashSet::from([0, 2]),
            accepted: accepted.clone(),
        }));
        let counts = histogram(&mut s, &[5.0, 0.0, 5.0, 0.0], 300);
        assert_eq!(counts[0] + counts[2], 0);
        // Banning everything is the masked error, and nothing is accepted.
        s.add_processor(Box::new(Ban {
            banned: HashSet::from([1, 3]),
            accepted: accepted.clone(),
        }));
        let before = accepted.borrow().len();
        assert_eq!(
            s.sample(&mut [5.0, 0.0, 5.0, 0.0], &[]).unwrap_err().code(),
            "ALL_TOKENS_MASKED"
        );
        assert_eq!(accepted.borrow().len(), before);
    }
}
