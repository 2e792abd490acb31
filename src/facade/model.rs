//! `Model`: a decoder language model on the GPU with its tokenizer and chat template.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Float32Array, Promise, Uint32Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::{to_js, to_js_value};
use crate::assembly::{busy, AssembledModel, GenerateRequest, LoadOptions};
use crate::backend::BackendKind;
use crate::error::{Result, WispError};
use crate::generate;
use crate::text::Message;
use crate::weights::{ByteSource, FileBytes};

/// A file in a JS `Uint8Array`.
#[derive(Debug)]
struct JsBytes(js_sys::Uint8Array);

impl ByteSource for JsBytes {
    fn len(&self) -> usize {
        self.0.length() as usize
    }

    fn read(&self, range: std::ops::Range<usize>) -> Result<Vec<u8>> {
        // FileBytes::read checked the range against the length, which is a u32.
        Ok(self
            .0
            .subarray(range.start as u32, range.end as u32)
            .to_vec())
    }
}

#[wasm_bindgen]
pub struct Model {
    pub(super) inner: Rc<AssembledModel>,
}

#[wasm_bindgen]
impl Model {
    /// Builds and compiles a model from GGUF or safetensors bytes, with an optional `tokenizer.json`.
    /// `options`: `{ config, chatTemplate, chunkLen, contextLen }`; GGUF files bring their own
    /// configuration, tokenizer and template. `adapters`: `[{ bytes: Uint8Array, scale: number }]`, LoRA
    /// adapters in llama.cpp's GGUF format. The weights stay in JS memory and are read a range at a
    /// time, so that wasm memory never holds the whole file.
    pub async fn load(
        weights: js_sys::Uint8Array,
        tokenizer: Option<Vec<u8>>,
        options: JsValue,
        adapters: Option<js_sys::Array>,
    ) -> std::result::Result<Model, JsValue> {
        let mut options: LoadOptions = if options.is_undefined() || options.is_null() {
            LoadOptions::default()
        } else {
            serde_wasm_bindgen::from_value(options).map_err(|e| {
                to_js(WispError::InvalidRequest(format!(
                    "Model.load options: {e}"
                )))
            })?
        };
        if let Some(adapters) = adapters {
            options.adapters = adapters
                .iter()
                .map(|a| {
                    let get = |k: &str| js_sys::Reflect::get(&a, &JsValue::from_str(k));
                    let bytes = get("bytes")?.dyn_into::<js_sys::Uint8Array>()?.to_vec();
                    let scale = get("scale")?.as_f64().unwrap_or(1.0) as f32;
                    Ok((bytes, scale))
                })
                .collect::<std::result::Result<Vec<_>, JsValue>>()
                .map_err(|_| {
                    to_js(WispError::InvalidRequest(
                        "adapters must be [{ bytes: Uint8Array, scale: number }]".into(),
                    ))
                })?;
        }
        let weights = JsBytes(weights);
        let inner =
            AssembledModel::open(FileBytes::Outside(&weights), tokenizer.as_deref(), options)
                .await
                .map_err(to_js)?;
        Ok(Model {
            inner: Rc::new(inner),
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
    /// `measured`: what `backend: "auto"` measured on this load (`{ key, kind, figures }`), for the
    /// package to keep.
    #[wasm_bindgen(getter)]
    pub fn backend(&self) -> std::result::Result<JsValue, JsValue> {
        let decoder = self.inner.decoder.try_borrow().map_err(|_| to_js(busy()))?;
        let mut info =
            serde_json::json!({ "kind": decoder.kind(), "reason": self.inner.backend_reason });
        if let Some(measured) = &self.inner.backend_measured {
            info["measured"] = serde_json::to_value(measured).map_err(|e| {
                to_js(WispError::Internal(format!(
                    "the backend's measurement: {e}"
                )))
            })?;
        }
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

pub(super) fn request_from_js(request: JsValue) -> Result<GenerateRequest> {
    serde_wasm_bindgen::from_value(request)
        .map_err(|e| WispError::InvalidRequest(format!("generation options: {e}")))
}

#[wasm_bindgen]
impl Model {
    /// Starts a generation after `prompt`: prefills what the cache lacks and resolves to a `Generation`.
    #[wasm_bindgen(js_name = startGeneration)]
    pub fn start_generation(&self, prompt: Vec<u32>, request: JsValue) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let request = request_from_js(request).map_err(to_js)?;
            let (state, epoch) = inner
                .start_generation(&prompt, request)
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

/// A generation in progress; `step()` yields one token at a time.
#[wasm_bindgen]
pub struct Generation {
    inner: Rc<AssembledModel>,
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
            self.inner
                .release_drafts(self.epoch, |decoder| state.drop_drafts(decoder));
        }
    }
}
