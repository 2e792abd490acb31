//! Where a token's time goes: each backend and the generation loop add the time of their stages here,
//! and the page (or a benchmark) reads the totals. The clock is `performance.now()` in the browser
//! (coarsened to 0.1 ms without cross-origin isolation, so only sums over many calls are meaningful) and
//! a monotonic clock natively.

use std::collections::BTreeMap;

use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Stage {
    pub ms: f64,
    pub calls: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    pub stages: BTreeMap<&'static str, Stage>,
    /// Tokens run through the model (prompt, generated and draft tokens).
    pub tokens_run: u64,
    /// Tokens sampled.
    pub tokens_sampled: u64,
}

impl Profile {
    /// Adds the time since `started` (a [`now_ms`] reading) to `stage` and returns the time now, so
    /// that consecutive stages can chain one clock reading.
    pub fn lap(&mut self, stage: &'static str, started: f64) -> f64 {
        let now = now_ms();
        let s = self.stages.entry(stage).or_default();
        s.ms += now - started;
        s.calls += 1;
        now
    }

    pub fn reset(&mut self) {
        *self = Profile::default();
    }
}

/// Milliseconds on a monotonic clock with an arbitrary origin.
#[cfg(not(target_arch = "wasm32"))]
pub fn now_ms() -> f64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

#[cfg(target_arch = "wasm32")]
pub fn now_ms() -> f64 {
    js_clock::now()
}

#[cfg(target_arch = "wasm32")]
mod js_clock {
    use wasm_bindgen::prelude::wasm_bindgen;

    #[wasm_bindgen]
    extern "C" {
        // `performance` exists in windows, workers and Node.
        #[wasm_bindgen(js_namespace = performance)]
        pub fn now() -> f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laps_add_up_per_stage() {
        let mut p = Profile::default();
        let t = now_ms();
        let t = p.lap("a", t);
        let t = p.lap("b", t);
        p.lap("a", t);
        assert_eq!(p.stages["a"].calls, 2);
        assert_eq!(p.stages["b"].calls, 1);
        assert!(p.stages.values().all(|s| s.ms >= 0.0));
        p.reset();
        assert!(p.stages.is_empty());
    }
}
