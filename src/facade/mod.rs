//! The wasm-bindgen facade: JavaScript values in, core calls, JavaScript values and coded errors out.
//! `pkg-templates/index.js` is the public API built on it.

mod agent;
#[cfg(feature = "webgpu")]
mod graph;
mod model;

use js_sys::Reflect;
use wasm_bindgen::prelude::*;

use crate::error::WispError;

// Links wasm-bindgen-rayon, which exports the threaded module's `initThreadPool(n)`: it starts `n` Web
// Workers sharing this module's memory as rayon's global pool (once per module instance).
#[cfg(feature = "threads")]
use wasm_bindgen_rayon as _;

#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}

/// A JS `Error` whose `name` is "WispError" and whose `code` is the variant's stable code.
pub(crate) fn to_js(error: WispError) -> JsValue {
    let js = js_sys::Error::new(&error.to_string());
    js.set_name("WispError");
    // Setting a property on a fresh Error object cannot fail.
    let _ = Reflect::set(&js, &"code".into(), &error.code().into());
    js.into()
}

pub(crate) fn to_js_value<T: serde::Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| {
            to_js(WispError::Internal(format!(
                "cannot convert a result for JS: {e}"
            )))
        })
}

/// Parses and checks a bundle manifest (`manifest.json` text); rejects with `INVALID_MANIFEST`.
#[wasm_bindgen(js_name = parseManifest)]
pub fn parse_manifest(text: &str) -> Result<JsValue, JsValue> {
    let manifest = crate::bundle::Manifest::parse(text).map_err(to_js)?;
    to_js_value(&manifest)
}

/// Describes the WebGPU adapter, or rejects with `WEBGPU_UNAVAILABLE` saying why there is none.
#[cfg(feature = "webgpu")]
#[wasm_bindgen(js_name = adapterInfo)]
pub async fn adapter_info() -> Result<JsValue, JsValue> {
    let info = crate::backend::adapter_info().await.map_err(to_js)?;
    to_js_value(&info)
}

/// `{ devices, buffers, bytes }`: the GPU devices Wisp holds and their buffers still alive (leak checks).
#[cfg(feature = "webgpu")]
#[wasm_bindgen(js_name = gpuResources)]
pub fn gpu_resources() -> JsValue {
    crate::backend::gpu_resources()
}
