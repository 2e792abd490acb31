//! A model and its turns exactly as users get them: weights, tokenizer, chat template, end-of-turn tokens
//! and backend put together (`AssembledModel::load`), and the start of a generation or an agent turn on it
//! (prompt, constraint, cache). The wasm facade converts values around this; the native tests and tools
//! use it directly, so that they run what pages run.

mod turn;

use std::cell::{Cell, OnceCell, RefCell};

use serde::{Deserialize, Serialize};

use crate::agent::{Conversation, ToolCallFormat};
use crate::backend::{BackendKind, Decoder};
use crate::bundle;
use crate::error::{Result, WispError};
use crate::generate::{self, GenerateOptions, LogitsProcessor, SamplingParams};
use crate::grammar::{response_constraint, GrammarEnv, ResponseFormat};
use crate::model::{ModelConfig, ModelWeights};
use crate::text::{ChatTemplate, Tokenizer};
use crate::weights::FileBytes;

pub use turn::turn_constraint;

#[cfg(feature = "webgpu")]
const DEFAULT_CHUNK: usize = 4;
const DEFAULT_CONTEXT: usize = 512;

/// How to put a model together (the facade reads them from `Model.load`'s options).
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoadOptions {
    /// `config.json` text (required with safetensors weights).
    pub config: Option<String>,
    pub chat_template: Option<String>,
    pub chunk_len: Option<usize>,
    pub context_len: Option<usize>,
    /// "auto" (default), "webgpu" or "cpu".
    pub backend: Option<String>,
    /// Why the caller chose `backend` (the package's JS says so when it picks the threaded CPU module).
    pub reason: Option<String>,
    /// Strings that end the model's turn (a bundle's `stop`).
    #[serde(default)]
    pub stop: Vec<String>,
    /// LoRA adapters (GGUF bytes and scale); the facade passes their bytes beside the options.
    #[serde(skip)]
    pub adapters: Vec<(Vec<u8>, f32)>,
    /// Earlier measurements of `backend: "auto"` (the package keeps them): one for this device and model
    /// is used instead of measuring again.
    #[serde(default)]
    pub measured: Vec<Measured>,
}

/// What `backend: "auto"` measured on a hardware adapter, for one device and model: building and timing
/// both backends costs a load about twice its time and memory, so the package keeps this and later
/// loads build only the faster backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Measured {
    /// The adapter, the model's shape and bytes, the context and graph chunk, and this version of Wisp
    /// (see [`measure_key`]): a change of any of them measures again.
    pub key: String,
    /// The faster backend.
    pub kind: BackendKind,
    /// Both figures, as the reason of the measuring load gave them.
    pub figures: String,
    /// When it was measured (the package's clock), absent on the measuring load itself.
    #[serde(default)]
    pub at: Option<String>,
}

/// The key of a [`Measured`]: what decides which backend is faster.
#[cfg(feature = "webgpu")]
pub fn measure_key(
    config: &ModelConfig,
    adapter: &crate::backend::AdapterInfo,
    shape: crate::graph::DecoderShape,
    file_bytes: usize,
) -> String {
    let c = config;
    format!(
        "wisp {}; {} / {} / {} / {}; {:?} hidden {} ffn {} heads {}/{}x{} layers {} vocab {}; context {}, chunks of {}; {file_bytes} bytes",
        env!("CARGO_PKG_VERSION"),
        adapter.vendor,
        adapter.architecture,
        adapter.device,
        adapter.description,
        c.family,
        c.hidden_size,
        c.intermediate_size,
        c.num_heads,
        c.num_kv_heads,
        c.head_dim,
        c.num_layers,
        c.vocab_size,
        shape.cache_len,
        shape.chunk_len,
    )
}

/// One generation's options, as `generate()` and agent turns send them.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GenerateRequest {
    #[serde(default)]
    pub sampling: SamplingParams,
    pub max_tokens: usize,
    #[serde(default)]
    pub stop: Vec<String>,
    /// Draft tokens verified per pass (prompt lookup); absent: the backend's choice, 0: off.
    #[serde(default)]
    pub draft_tokens: Option<usize>,
    /// Fresh entropy, used when `sampling.seed` is not set.
    pub seed: u64,
    /// What the answer must be (OpenAI's `response_format`); absent: free text.
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
}

pub struct AssembledModel {
    pub decoder: RefCell<Decoder>,
    pub tokenizer: Option<Tokenizer>,
    pub template: Option<ChatTemplate>,
    pub config: ModelConfig,
    /// Tokens that end the model's turn (from GGUF metadata and single-token stop strings).
    pub eos_token_ids: Vec<u32>,
    /// Stop strings of the bundle that are not single tokens.
    pub stop: Vec<String>,
    /// Bumped by every call that changes the cache; a generation only steps while it is unchanged.
    pub epoch: Cell<u64>,
    /// Why this backend was chosen.
    pub backend_reason: String,
    /// What `backend: "auto"` measured on this load, for the package to keep.
    pub backend_measured: Option<Measured>,
    /// The vocabulary for constrained decoding (tool calls, `responseFormat`), built on first use and
    /// shared by every agent of the model.
    grammar: OnceCell<GrammarEnv>,
}

/// The error for a call that needs the model while another holds it.
pub fn busy() -> WispError {
    WispError::Busy("the model is running a forward pass; await it first".into())
}

impl AssembledModel {
    /// Puts a model together from GGUF or safetensors bytes in memory and an optional `tokenizer.json`;
    /// GGUF files bring their own configuration, tokenizer and template.
    pub async fn load(
        weights: &[u8],
        tokenizer: Option<&[u8]>,
        options: LoadOptions,
    ) -> Result<Self> {
        Self::open(FileBytes::Memory(weights), tokenizer, options).await
    }

    /// As [`Self::load`], with the weights read a range at a time from `weights` (a page's file).
    pub async fn open(
        weights: FileBytes<'_>,
        tokenizer: Option<&[u8]>,
        mut options: LoadOptions,
    ) -> Result<Self> {
        let header = weights.header()?;
        let file_bytes =
            weights.len() + options.adapters.iter().map(|(a, _)| a.len()).sum::<usize>();
        let (config, mut source) = ModelWeights::open(&header, weights, options.config.as_deref())?;
        if !options.adapters.is_empty() {
            source.set_adapters(&config, &options.adapters)?;
        }
        let tokenizer = match (tokenizer, source.metadata()) {
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
        for s in std::mem::take(&mut options.stop) {
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
        let (decoder, reason, measured) =
            open_decoder(&config, &mut source, &options, context_len, file_bytes).await?;
        Ok(AssembledModel {
            decoder: RefCell::new(decoder),
            tokenizer,
            template,
            config,
            eos_token_ids,
            stop,
            epoch: Cell::new(0),
            backend_reason: reason,
            backend_measured: measured,
            grammar: OnceCell::new(),
        })
    }

    /// A bundle from a folder on disk (its `manifest.json` and the files it names), as `Model.load({
    /// bundle })` puts it together, on `backend` (native tests and tools).
    #[cfg(not(target_arch = "wasm32"))]
    pub async fn load_bundle(dir: &std::path::Path, backend: &str) -> Result<Self> {
        let read = |name: &str| {
            std::fs::read(dir.join(name)).map_err(|e| {
                WispError::InvalidManifest(format!("{}: {e}", dir.join(name).display()))
            })
        };
        let text = |name: &str| {
            read(name).and_then(|bytes| {
                String::from_utf8(bytes)
                    .map_err(|_| WispError::InvalidModel(format!("{name} is not UTF-8 text")))
            })
        };
        let manifest = bundle::Manifest::parse(&text("manifest.json")?)?;
        let files = &manifest.files;
        let weights = read(&files.weights.path)?;
        let tokenizer = files
            .tokenizer
            .as_ref()
            .map(|f| read(&f.path))
            .transpose()?;
        let adapters = files
            .adapters
            .iter()
            .map(|a| Ok((read(&a.path)?, a.scale.unwrap_or(1.0))))
            .collect::<Result<Vec<_>>>()?;
        let options = LoadOptions {
            adapters,
            config: files.config.as_ref().map(|f| text(&f.path)).transpose()?,
            chat_template: files
                .chat_template
                .as_ref()
                .map(|f| text(&f.path))
                .transpose()?,
            context_len: manifest.context_length,
            backend: Some(backend.into()),
            stop: manifest.stop.clone(),
            ..LoadOptions::default()
        };
        Self::load(&weights, tokenizer.as_deref(), options).await
    }

    pub fn tokenizer(&self) -> Result<&Tokenizer> {
        self.tokenizer.as_ref().ok_or_else(|| {
            WispError::InvalidModel("this model was loaded without a tokenizer".into())
        })
    }

    pub fn template(&self) -> Result<&ChatTemplate> {
        self.template
            .as_ref()
            .ok_or_else(|| WispError::InvalidModel("this model has no chat template".into()))
    }

    pub fn grammar_env(&self) -> Result<&GrammarEnv> {
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

    /// A conversation for an agent on this model: the tool-call format the template can show (a template
    /// without a tools section gets the tools Hermes style, and its model calls that way).
    pub fn conversation(
        &self,
        system: Option<String>,
        format: Option<bundle::ToolCallFormat>,
        max_result_chars: usize,
    ) -> Result<Conversation> {
        let template = self.template().map_err(|_| {
            WispError::InvalidModel("an agent needs a model with a chat template".into())
        })?;
        let format = match format {
            Some(bundle::ToolCallFormat::Llama3Json) if template.renders_tools() => {
                ToolCallFormat::Llama3Json
            }
            _ => ToolCallFormat::Hermes,
        };
        Ok(Conversation::new(system, format, max_result_chars))
    }

    /// Starts a generation after `prompt`, constrained by the request's `responseFormat` (checked before
    /// the prefill, so that a bad schema fails without touching the cache).
    pub async fn start_generation(
        &self,
        prompt: &[u32],
        request: GenerateRequest,
    ) -> Result<(generate::Generation, u64)> {
        let constraint: Option<Box<dyn LogitsProcessor>> = match &request.response_format {
            Some(format) => response_constraint(self.grammar_env()?, format, true)?
                .map(|c| Box::new(c) as Box<dyn LogitsProcessor>),
            None => None,
        };
        self.start(prompt, request, constraint).await
    }

    /// Starts a generation on the model, constrained by `constraint` from its first token, marking the
    /// cache as taken by it: returns the state and the epoch.
    pub(crate) async fn start(
        &self,
        prompt: &[u32],
        request: GenerateRequest,
        constraint: Option<Box<dyn LogitsProcessor>>,
    ) -> Result<(generate::Generation, u64)> {
        let mut decoder = self.decoder.try_borrow_mut().map_err(|_| busy())?;
        let epoch = self.epoch.get() + 1;
        self.epoch.set(epoch);
        let mut stop = self.stop.clone();
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
            &self.eos_token_ids,
            options,
            request.seed,
        )
        .await?;
        if let Some(constraint) = constraint {
            state.add_processor(constraint);
        }
        Ok((state, epoch))
    }

    /// The system + tools prefix of `conversation`'s prompts (`Conversation::prefix_ids`), and whether the
    /// cache begins with it.
    pub fn prefix(&self, conversation: &Conversation) -> Result<(Vec<u32>, bool)> {
        let ids = conversation.prefix_ids(self.template()?, self.tokenizer()?)?;
        let decoder = self.decoder.try_borrow().map_err(|_| busy())?;
        let cached = decoder.tokens().starts_with(&ids);
        Ok((ids, cached))
    }

    /// The cached system + tools prefix of `conversation` as bytes ([`Decoder::save_cache`]), for a later
    /// page to restore; `None` when the cache does not begin with it.
    pub fn save_prefix(&self, conversation: &Conversation) -> Result<Option<Vec<u8>>> {
        let (ids, cached) = self.prefix(conversation)?;
        if !cached {
            return Ok(None);
        }
        let decoder = self.decoder.try_borrow().map_err(|_| busy())?;
        decoder.save_cache(ids.len()).map(Some)
    }

    /// Replaces the cache by bytes of [`Decoder::save_cache`] (see there for what is refused) and returns
    /// how many tokens they hold. A generation or turn in progress on the model stops, as after any call
    /// that changes the cache.
    pub fn restore_cache(&self, bytes: &[u8]) -> Result<usize> {
        let mut decoder = self.decoder.try_borrow_mut().map_err(|_| busy())?;
        let tokens = decoder.restore_cache(bytes)?;
        self.epoch.set(self.epoch.get() + 1);
        Ok(tokens.len())
    }

    /// Runs `drop_drafts` on the model's decoder when the generation (or turn) of `epoch` is still the
    /// model's latest use; a later call has already replaced or reused its cache otherwise.
    pub fn release_drafts(&self, epoch: u64, drop_drafts: impl FnOnce(&mut Decoder) -> Result<()>) {
        if self.epoch.get() != epoch {
            return;
        }
        if let Ok(mut decoder) = self.decoder.try_borrow_mut() {
            // Cannot fail: the drafts are the newest cached tokens.
            let _ = drop_drafts(&mut decoder);
        }
    }
}

/// Both backends on a hardware adapter, each timed over one decode step (after one untimed step, so that
/// shader compilation and first touches are not counted), and the faster one kept with both figures in
/// its reason: which is faster depends on the GPU, the CPU and the model's shape and quant types, so it is
/// measured rather than guessed. A model the GPU cannot hold runs on the CPU, saying why. Returns the
/// measurement under `key` too (none when WebGPU failed: that may pass).
#[cfg(feature = "webgpu")]
pub async fn faster_decoder(
    config: &ModelConfig,
    source: &mut ModelWeights<'_>,
    shape: crate::graph::DecoderShape,
    adapter: &str,
    key: String,
) -> Result<(Decoder, String, Option<Measured>)> {
    let mut cpu = Decoder::cpu(config, source, shape.cache_len)?;
    let cpu_ms = step_ms(&mut cpu).await?;
    let mut gpu = match Decoder::new(config, source, shape).await {
        Ok(gpu) => gpu,
        Err(e) => {
            return Ok((
                cpu,
                format!("auto: the CPU; WebGPU ({adapter}) failed: {e}"),
                None,
            ))
        }
    };
    let gpu_ms = step_ms(&mut gpu).await?;
    let figures = format!(
        "a decode step took {gpu_ms:.1} ms on WebGPU ({adapter}), {cpu_ms:.1} ms on the CPU"
    );
    let (decoder, kind) = if gpu_ms <= cpu_ms {
        (gpu, BackendKind::Webgpu)
    } else {
        (cpu, BackendKind::Cpu)
    };
    let measured = Measured {
        key,
        kind,
        figures,
        at: None,
    };
    Ok((decoder, measured_reason(&measured), Some(measured)))
}

/// The backend an earlier measurement found faster, built alone; a GPU that now fails leaves the CPU.
#[cfg(feature = "webgpu")]
pub async fn measured_decoder(
    config: &ModelConfig,
    source: &mut ModelWeights<'_>,
    shape: crate::graph::DecoderShape,
    measured: &Measured,
) -> Result<(Decoder, String)> {
    let reason = measured_reason(measured);
    if measured.kind == BackendKind::Cpu {
        return Ok((Decoder::cpu(config, source, shape.cache_len)?, reason));
    }
    match Decoder::new(config, source, shape).await {
        Ok(gpu) => Ok((gpu, reason)),
        Err(e) => Ok((
            Decoder::cpu(config, source, shape.cache_len)?,
            format!("auto: the CPU; WebGPU, {reason}, failed now: {e}"),
        )),
    }
}

#[cfg(feature = "webgpu")]
fn measured_reason(m: &Measured) -> String {
    let kind = match m.kind {
        BackendKind::Webgpu => "WebGPU",
        BackendKind::Cpu => "the CPU",
    };
    match &m.at {
        None => format!("auto: {kind}, measured faster: {}", m.figures),
        Some(at) => format!(
            "auto: {kind}, measured faster on this device and model at {at}: {}",
            m.figures
        ),
    }
}

/// Milliseconds of the second of two one-token steps from an empty cache, which is then emptied again.
#[cfg(feature = "webgpu")]
async fn step_ms(decoder: &mut Decoder) -> Result<f64> {
    decoder.forward_last(&[0]).await?;
    let start = crate::profile::now_ms();
    decoder.forward_last(&[0]).await?;
    let ms = crate::profile::now_ms() - start;
    decoder.seek(0)?;
    decoder.profile_mut().reset();
    Ok(ms)
}

/// The decoder on the backend that `options.backend` names ("auto" when absent), why it was chosen, and
/// what "auto" measured.
async fn open_decoder(
    config: &ModelConfig,
    source: &mut ModelWeights<'_>,
    options: &LoadOptions,
    context_len: usize,
    file_bytes: usize,
) -> Result<(Decoder, String, Option<Measured>)> {
    // Graph chunks are a GPU matter: the CPU backend runs chunks of its own size. Checked on every
    // backend, so that a page learns of a bad value before it meets a GPU.
    if let Some(chunk_len) = options.chunk_len {
        crate::graph::check_chunk_len(chunk_len)?;
    }
    #[cfg(feature = "webgpu")]
    let shape = crate::graph::DecoderShape {
        chunk_len: options.chunk_len.unwrap_or(DEFAULT_CHUNK),
        cache_len: context_len,
    };
    #[cfg(not(feature = "webgpu"))]
    let _ = file_bytes;
    let reason = options.reason.clone();
    let (gpu, why) = match options.backend.as_deref().unwrap_or("auto") {
        "cpu" => (false, reason.unwrap_or_else(|| "asked for".into())),
        "webgpu" => (true, "asked for".into()),
        #[cfg(feature = "webgpu")]
        "auto" => match crate::backend::adapter_info().await {
            Ok(adapter) if !adapter.is_fallback_adapter => {
                let key = measure_key(config, &adapter, shape, file_bytes);
                if let Some(m) = options.measured.iter().find(|m| m.key == key) {
                    let (decoder, why) = measured_decoder(config, source, shape, m).await?;
                    return Ok((decoder, why, None));
                }
                return faster_decoder(config, source, shape, &adapter.description, key).await;
            }
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
        return Ok((Decoder::cpu(config, source, context_len)?, why, None));
    }
    #[cfg(feature = "webgpu")]
    {
        Ok((Decoder::new(config, source, shape).await?, why, None))
    }
    #[cfg(not(feature = "webgpu"))]
    {
        Err(WispError::GpuUnavailable(
            "this is Wisp's CPU-only (threaded) module; WebGPU models load with the main one"
                .into(),
        ))
    }
}
