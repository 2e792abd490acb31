//! `Model`: a decoder language model on the GPU with its tokenizer and chat template.

use std::cell::{Cell, OnceCell, RefCell};
use std::rc::Rc;

use js_sys::{Float32Array, Promise, Uint32Array};
use serde::Deserialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::{to_js, to_js_value};
use crate::error::{Result, WispError};
use crate::generate::{
    self, BackendKind, Decoder, GenerateOptions, LogitsProcessor, SamplingParams,
};
use crate::grammar::{response_constraint, GrammarEnv, ResponseFormat};
use crate::model::{ModelConfig, ModelWeights};
use crate::text::{ChatTemplate, Message, Tokenizer};

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LoadOptions {
    /// `config.json` text (required with safetensors weights).
    config: Option<String>,
    chat_template: Option<String>,
    chunk_len: Option<usize>,
    context_len: Option<usize>,
    /// "auto" (default), "webgpu" or "cpu".
    backend: Option<String>,
    /// Why the caller chose `backend` (the package's JS says so when it picks the threaded CPU module).
    reason: Option<String>,
    /// Strings that end the model's turn (a bundle's `stop`).
    #[serde(default)]
    stop: Vec<String>,
}

pub(super) struct Inner {
    pub(super) decoder: RefCell<Decoder>,
    pub(super) tokenizer: Option<Tokenizer>,
    pub(super) template: Option<ChatTemplate>,
    pub(super) config: ModelConfig,
    /// Tokens that end the model's turn (from GGUF metadata and single-token stop strings).
    pub(super) eos_token_ids: Vec<u32>,
    /// Stop strings of the bundle that are not single tokens.
    pub(super) stop: Vec<String>,
    /// Bumped by every call that changes the cache; a generation only steps while it is unchanged.
    pub(super) epoch: Cell<u64>,
    /// Why this backend was chosen.
    pub(super) backend_reason: String,
    /// The vocabulary for constrained decoding (tool calls, `responseFormat`), built on first use and
    /// shared by every agent of the model.
    grammar: OnceCell<GrammarEnv>,
}

impl Inner {
    pub(super) fn tokenizer(&self) -> Result<&Tokenizer> {
        self.tokenizer.as_ref().ok_or_else(|| {
            WispError::InvalidModel("this model was loaded without a tokenizer".into())
        })
    }

    pub(super) fn grammar_env(&self) -> Result<&GrammarEnv> {
        if let Some(env) = self.grammar.get() {
            return Ok(env);
        }
        let env = GrammarEnv::new(
            self.tokenizer()?,
            self.config.vocab_size,
            &self.eos_token_ids,
        )?;
        Ok(self.grammar.get_or_init(|| env))
    }
}

#[wasm_bindgen]
pub struct Model {
    pub(super) inner: Rc<Inner>,
}

#[cfg(feature = "webgpu")]
const DEFAULT_CHUNK: usize = 4;
const DEFAULT_CONTEXT: usize = 512;

#[wasm_bindgen]
impl Model {
    /// Builds and compiles a model from GGUF or safetensors bytes, with an optional `tokenizer.json`.
    /// `options`: `{ config, chatTemplate, chunkLen, contextLen }`; GGUF files bring their own
    /// configuration, tokenizer and template.
    pub async fn load(
        weights: Vec<u8>,
        tokenizer: Option<Vec<u8>>,
        options: JsValue,
    ) -> std::result::Result<Model, JsValue> {
        let options: LoadOptions = if options.is_undefined() || options.is_null() {
            LoadOptions::default()
        } else {
            serde_wasm_bindgen::from_value(options).map_err(|e| {
                to_js(WispError::InvalidRequest(format!(
                    "Model.load options: {e}"
                )))
            })?
        };
        Self::build(weights, tokenizer, options)
            .await
            .map_err(to_js)
    }

    async fn build(
        weights: Vec<u8>,
        tokenizer: Option<Vec<u8>>,
        options: LoadOptions,
    ) -> Result<Model> {
        let (config, mut source) = ModelWeights::load(&weights, options.config.as_deref())?;
        let tokenizer = match (&tokenizer, source.metadata()) {
            (Some(json), _) => Some(Tokenizer::from_json(json)?),
            (None, Some(meta)) if meta.get("tokenizer.ggml.tokens").is_some() => {
                Some(Tokenizer::from_gguf(meta)?)
            }
            _ => None,
        };
        let template_text = options.chat_template.clone().or_else(|| {
            source
                .metadata()
                .and_then(|m| m.get_str("tokenizer.chat_template").ok())
                .map(str::to_string)
        });
        // Checked before any backend is touched: a tokenizer made for other weights fails here.
        if let Some(tokenizer) = &tokenizer {
            tokenizer.check_fits(config.vocab_size)?;
        }
        let template = template_text
            .as_deref()
            .map(ChatTemplate::new)
            .transpose()?
            .map(|template| match &tokenizer {
                Some(tokenizer) => template.protect(tokenizer.added_tokens()),
                None => template,
            });
        let context_len = options
            .context_len
            .unwrap_or(DEFAULT_CONTEXT.min(config.max_position_embeddings));
        let mut eos_token_ids: Vec<u32> = source
            .metadata()
            .and_then(|m| m.get_u32("tokenizer.ggml.eos_token_id").ok())
            .into_iter()
            .collect();
        let mut stop = Vec::new();
        for s in options.stop {
            match tokenizer.as_ref().and_then(|t| t.token_id(&s)) {
                Some(id) => eos_token_ids.push(id),
                None => stop.push(s),
            }
        }
        if let Some(id) = eos_token_ids
            .iter()
            .find(|&&id| id as usize >= config.vocab_size)
        {
            return Err(WispError::InvalidModel(format!(
                "the end-of-turn token {id} is outside the vocabulary of {} tokens",
                config.vocab_size
            )));
        }
        let (decoder, reason) = open_decoder(
            &config,
            &mut source,
            options.backend.as_deref(),
            options.chunk_len,
            context_len,
            options.reason,
        )
        .await?;
        Ok(Model {
            inner: Rc::new(Inner {
                decoder: RefCell::new(decoder),
                tokenizer,
                template,
                config,
                eos_token_ids,
                stop,
                epoch: Cell::new(0),
                backend_reason: reason,
                grammar: OnceCell::new(),
            }),
        })
    }

    /// Destroys the model's GPU device as a driver reset would, so that apps (and tests) can exercise
    /// their recovery: later calls fail with `GPU_DEVICE_LOST`. Returns false on the CPU backend.
    #[wasm_bindgen(js_name = loseDevice)]
    pub fn lose_device(&self) -> std::result::Result<bool, JsValue> {
        let decoder = self.inner.decoder.try_borrow().map_err(|_| to_js(busy()))?;
        Ok(decoder.lose_device())
    }

    /// `{ kind: "webgpu" | "cpu", reason }`, and on the CPU `threads` (how many threads its products
    /// use) and `simd`: "relaxed" in the relaxed-SIMD build (fused multiply-adds), "simd128" otherwise.
    #[wasm_bindgen(getter)]
    pub fn backend(&self) -> std::result::Result<JsValue, JsValue> {
        let decoder = self.inner.decoder.try_borrow().map_err(|_| to_js(busy()))?;
        let mut info =
            serde_json::json!({ "kind": decoder.kind(), "reason": self.inner.backend_reason });
        if decoder.kind() == BackendKind::Cpu {
            info["threads"] = crate::backend::cpu::threads().into();
            info["simd"] = crate::backend::cpu::SIMD.into();
        }
        to_js_value(&info)
    }

    #[wasm_bindgen(getter)]
    pub fn config(&self) -> std::result::Result<JsValue, JsValue> {
        to_js_value(&self.inner.config)
    }

    /// Tokens in the cache: the position the next token gets.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> std::result::Result<usize, JsValue> {
        let decoder = self.inner.decoder.try_borrow().map_err(|_| to_js(busy()))?;
        Ok(decoder.len())
    }

    #[wasm_bindgen(getter, js_name = contextLength)]
    pub fn context_length(&self) -> std::result::Result<usize, JsValue> {
        let decoder = self.inner.decoder.try_borrow().map_err(|_| to_js(busy()))?;
        Ok(decoder.capacity())
    }

    pub fn encode(&self, text: &str) -> std::result::Result<Uint32Array, JsValue> {
        let ids = self
            .inner
            .tokenizer()
            .and_then(|t| t.encode(text))
            .map_err(to_js)?;
        Ok(Uint32Array::from(ids.as_slice()))
    }

    pub fn decode(&self, ids: Vec<u32>) -> std::result::Result<String, JsValue> {
        self.inner
            .tokenizer()
            .and_then(|t| t.decode(&ids))
            .map_err(to_js)
    }

    /// Renders `[{ role, content }]` (and OpenAI-style tool definitions) with the model's chat template;
    /// tools go into the system message, Hermes style, when the template has no tools section.
    #[wasm_bindgen(js_name = renderChat)]
    pub fn render_chat(
        &self,
        messages: JsValue,
        tools: JsValue,
        add_generation_prompt: bool,
    ) -> std::result::Result<String, JsValue> {
        let messages: Vec<Message> = serde_wasm_bindgen::from_value(messages)
            .map_err(|e| to_js(WispError::InvalidRequest(format!("messages: {e}"))))?;
        let tools: Option<serde_json::Value> = if tools.is_undefined() || tools.is_null() {
            None
        } else {
            Some(
                serde_wasm_bindgen::from_value(tools)
                    .map_err(|e| to_js(WispError::InvalidRequest(format!("tools: {e}"))))?,
            )
        };
        let template = self.inner.template.as_ref().ok_or_else(|| {
            to_js(WispError::InvalidModel(
                "this model has no chat template".into(),
            ))
        })?;
        crate::agent::render_chat(template, &messages, tools.as_ref(), add_generation_prompt)
            .map_err(to_js)
    }

    /// Appends `ids` to the cache; resolves to their logits, `ids.length` rows of `vocabSize` values.
    pub fn forward(&self, ids: Vec<u32>) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let mut decoder = inner.decoder.try_borrow_mut().map_err(|_| to_js(busy()))?;
            inner.epoch.set(inner.epoch.get() + 1);
            let rows = decoder.forward(&ids).await.map_err(to_js)?;
            let flat: Vec<f32> = rows.concat();
            Ok(Float32Array::from(flat.as_slice()).into())
        })
    }

    /// Time per stage (`{ stages: { name: { ms, calls } }, tokensRun, tokensSampled }`) since the load or
    /// the last `resetProfile()`.
    pub fn profile(&self) -> std::result::Result<JsValue, JsValue> {
        let mut decoder = self
            .inner
            .decoder
            .try_borrow_mut()
            .map_err(|_| to_js(busy()))?;
        to_js_value(decoder.profile_mut())
    }

    #[wasm_bindgen(js_name = resetProfile)]
    pub fn reset_profile(&self) -> std::result::Result<(), JsValue> {
        let mut decoder = self
            .inner
            .decoder
            .try_borrow_mut()
            .map_err(|_| to_js(busy()))?;
        decoder.profile_mut().reset();
        Ok(())
    }

    /// Drops cached tokens from `position` on.
    pub fn seek(&self, position: usize) -> std::result::Result<(), JsValue> {
        let mut decoder = self
            .inner
            .decoder
            .try_borrow_mut()
            .map_err(|_| to_js(busy()))?;
        decoder.seek(position).map_err(to_js)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct GenerateRequest {
    #[serde(default)]
    sampling: SamplingParams,
    max_tokens: usize,
    #[serde(default)]
    stop: Vec<String>,
    /// Draft tokens verified per pass (prompt lookup); absent: the backend's choice, 0: off.
    #[serde(default)]
    draft_tokens: Option<usize>,
    /// Fresh entropy from JS, used when `sampling.seed` is not set.
    seed: u64,
    /// What the answer must be (OpenAI's `response_format`); absent: free text.
    #[serde(default)]
    pub(super) response_format: Option<ResponseFormat>,
}

impl GenerateRequest {
    pub(super) fn from_js(request: JsValue) -> Result<Self> {
        serde_wasm_bindgen::from_value(request)
            .map_err(|e| WispError::InvalidRequest(format!("generation options: {e}")))
    }
}

#[wasm_bindgen]
impl Model {
    /// Starts a generation after `prompt`: prefills what the cache lacks and resolves to a `Generation`.
    #[wasm_bindgen(js_name = startGeneration)]
    pub fn start_generation(&self, prompt: Vec<u32>, request: JsValue) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let request = GenerateRequest::from_js(request).map_err(to_js)?;
            // Checked before the prefill, so that a bad schema fails without touching the cache.
            let constraint: Option<Box<dyn LogitsProcessor>> = match &request.response_format {
                Some(format) => {
                    response_constraint(inner.grammar_env().map_err(to_js)?, format, true)
                        .map_err(to_js)?
                        .map(|c| Box::new(c) as Box<dyn LogitsProcessor>)
                }
                None => None,
            };
            let (state, epoch) = start(&inner, &prompt, request, constraint)
                .await
                .map_err(to_js)?;
            let generation = Generation {
                inner: Rc::clone(&inner),
                state: Rc::new(RefCell::new(state)),
                epoch,
            };
            Ok(generation.into())
        })
    }
}

/// Starts a generation on the model, constrained by `constraint` from its first token, marking the cache
/// as taken by it: returns the state and the epoch.
pub(super) async fn start(
    inner: &Inner,
    prompt: &[u32],
    request: GenerateRequest,
    constraint: Option<Box<dyn LogitsProcessor>>,
) -> Result<(generate::Generation, u64)> {
    let mut decoder = inner.decoder.try_borrow_mut().map_err(|_| busy())?;
    let epoch = inner.epoch.get() + 1;
    inner.epoch.set(epoch);
    let mut stop = inner.stop.clone();
    stop.extend(request.stop);
    let options = GenerateOptions {
        sampling: request.sampling,
        max_new_tokens: request.max_tokens,
        stop,
        draft_len: request.draft_tokens,
    };
    let mut state = generate::Generation::start(
        &mut decoder,
        prompt,
        &inner.eos_token_ids,
        options,
        request.seed,
    )
    .await?;
    if let Some(constraint) = constraint {
        state.add_processor(constraint);
    }
    Ok((state, epoch))
}

/// A generation in progress; `step()` yields one token at a time.
#[wasm_bindgen]
pub struct Generation {
    inner: Rc<Inner>,
    state: Rc<RefCell<generate::Generation>>,
    epoch: u64,
}

#[wasm_bindgen]
impl Generation {
    /// Resolves to `{ token, text, finish }`; `finish` is null until the last step ("stop", "length" or
    /// "eos_token").
    pub fn step(&self) -> Promise {
        let inner = Rc::clone(&self.inner);
        let state = Rc::clone(&self.state);
        let epoch = self.epoch;
        future_to_promise(async move {
            if inner.epoch.get() != epoch {
                return Err(to_js(WispError::Busy(
                    "the model was used by another call since this generation started".into(),
                )));
            }
            let tokenizer = inner.tokenizer().map_err(to_js)?;
            let mut decoder = inner.decoder.try_borrow_mut().map_err(|_| to_js(busy()))?;
            let mut state = state.try_borrow_mut().map_err(|_| to_js(busy()))?;
            let step = state.step(&mut decoder, tokenizer).await.map_err(to_js)?;
            to_js_value(&step)
        })
    }

    /// `{ promptTokens, cachedTokens, completionTokens, draftTokens, acceptedDraftTokens, passes }`.
    #[wasm_bindgen(getter)]
    pub fn usage(&self) -> std::result::Result<JsValue, JsValue> {
        let state = self.state.try_borrow().map_err(|_| to_js(busy()))?;
        to_js_value(&state.usage())
    }
}

impl Drop for Generation {
    /// A generation freed before its end (abort, early exit) may leave draft tokens it never confirmed in
    /// the cache: they go, so the cache holds exactly the prompt and the tokens produced.
    fn drop(&mut self) {
        if let Ok(mut state) = self.state.try_borrow_mut() {
            release_drafts(&self.inner, self.epoch, |decoder| {
                state.drop_drafts(decoder)
            });
        }
    }
}

/// Runs `drop_drafts` on the model's decoder when the generation (or turn) of `epoch` is still the
/// model's latest use; a later call has already replaced or reused its cache otherwise.
pub(super) fn release_drafts(
    inner: &Inner,
    epoch: u64,
    drop_drafts: impl FnOnce(&mut Decoder) -> Result<()>,
) {
    if inner.epoch.get() != epoch {
        return;
    }
    if let Ok(mut decoder) = inner.decoder.try_borrow_mut() {
        // Cannot fail: the drafts are the newest cached tokens.
        let _ = drop_drafts(&mut decoder);
    }
}

pub(super) fn busy() -> WispError {
    WispError::Busy("the model is running a forward pass; await it first".into())
}

/// The decoder on the backend that `backend` names ("auto" when absent), and why it was chosen.
async fn open_decoder(
    config: &ModelConfig,
    source: &mut ModelWeights<'_>,
    backend: Option<&str>,
    // Graph chunks are a GPU matter: the CPU backend runs chunks of its own size.
    chunk_len: Option<usize>,
    context_len: usize,
    reason: Option<String>,
) -> Result<(Decoder, String)> {
    // Checked on every backend, so that a page learns of a bad value before it meets a GPU.
    if let Some(chunk_len) = chunk_len {
        crate::graph::check_chunk_len(chunk_len)?;
    }
    let (gpu, why) = match backend.unwrap_or("auto") {
        "cpu" => (false, reason.unwrap_or_else(|| "asked for".into())),
        "webgpu" => (true, "asked for".into()),
        #[cfg(feature = "webgpu")]
        "auto" => match crate::backend::adapter_info().await {
            Ok(adapter) if !adapter.is_fallback_adapter => (
                true,
                format!("auto: a hardware WebGPU adapter ({})", adapter.description),
            ),
            Ok(_) => (
                false,
                "auto: the WebGPU adapter is a software fallback, slower than the CPU kernels"
                    .into(),
            ),
            Err(e) => (false, format!("auto: {e}")),
        },
        #[cfg(not(feature = "webgpu"))]
        "auto" => (
            false,
            reason.unwrap_or_else(|| "auto: this module has the CPU backend only".into()),
        ),
        other => {
            return Err(WispError::InvalidRequest(format!(
                "backend is '{other}'; use \"auto\", \"webgpu\" or \"cpu\""
            )))
        }
    };
    if !gpu {
        return Ok((Decoder::cpu(config, source, context_len)?, why));
    }
    #[cfg(feature = "webgpu")]
    {
        let shape = crate::graph::DecoderShape {
            chunk_len: chunk_len.unwrap_or(DEFAULT_CHUNK),
            cache_len: context_len,
        };
        Ok((Decoder::new(config, source, shape).await?, why))
    }
    #[cfg(not(feature = "webgpu"))]
    {
        Err(WispError::GpuUnavailable(
            "this is Wisp's CPU-only (threaded) module; WebGPU models load with the main one"
                .into(),
        ))
    }
}
