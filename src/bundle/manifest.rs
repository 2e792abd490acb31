//! The bundle manifest (`manifest.json`), documented in docs/guide.md ("Models and bundles").
//!
//! Strict on purpose: an unknown field is an error, not ignored, so a typo cannot silently drop a setting.

use serde::{Deserialize, Serialize};

use crate::error::{Result, WispError};

pub const FORMAT: &str = "wisp-bundle/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleFile {
    /// Relative to the manifest's URL; no `..`, no scheme, no leading `/`.
    pub path: String,
    /// Lowercase hex sha256 of the file's bytes; checked after download when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleFiles {
    /// GGUF or safetensors.
    pub weights: BundleFile,
    /// Hugging Face `config.json`; required with safetensors weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<BundleFile>,
    /// Hugging Face `tokenizer.json`; GGUF files may carry their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<BundleFile>,
    /// A Jinja chat template; GGUF files may carry their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<BundleFile>,
    /// LoRA adapters (llama.cpp's GGUF format) applied to `weights`: one cached base file serves every
    /// bundle that names it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adapters: Vec<AdapterFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterFile {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The adapter's strength (llama.cpp's `--lora-scaled`); 1 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<f32>,
}

impl AdapterFile {
    pub fn file(&self) -> BundleFile {
        BundleFile {
            path: self.path.clone(),
            sha256: self.sha256.clone(),
            size: self.size,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallFormat {
    /// `<tool_call>{"name": ..., "arguments": ...}</tool_call>` (Qwen, Hermes, the bundled model).
    Hermes,
    /// A bare `{"name": ..., "parameters": ...}` message (Llama 3.x).
    Llama3Json,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always "wisp-bundle/1".
    pub format: String,
    pub name: String,
    pub files: BundleFiles,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_format: Option<ToolCallFormat>,
    /// Strings that end the model's turn (e.g. `<|im_end|>`).
    #[serde(default)]
    pub stop: Vec<String>,
    /// Suggested cache size in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_length: Option<usize>,
}

fn invalid(why: String) -> WispError {
    WispError::InvalidManifest(why)
}

/// `Number.MAX_SAFE_INTEGER`: the manifest goes to JavaScript, where larger integers are not exact.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why `path` would not name a file inside the bundle once the page resolves it against the manifest's URL
/// (`new URL(path, manifestUrl)`, WHATWG URL rules), if it would not.
fn unsafe_path(p: &str) -> Option<&'static str> {
    if p.starts_with('/') {
        return Some("it starts with '/'");
    }
    // The URL parser strips spaces from both ends (" ../x" would become "../x").
    if p.starts_with(' ') || p.ends_with(' ') {
        return Some("it starts or ends with a space");
    }
    // It removes tabs and newlines anywhere, so that ".\t./x" is "../x"; a colon may start a scheme
    // ("data:", "javascript:"); "%2e%2e" is "..", and backslashes are slashes; "?" and "#" start the query
    // and the fragment.
    if let Some(c) = p
        .chars()
        .find(|c| c.is_ascii_control() || ":%\\?#".contains(*c))
    {
        return Some(match c {
            ':' => "it contains ':' (a scheme)",
            '%' => "it contains '%' (percent-encoding)",
            '\\' => "it contains a backslash",
            '?' | '#' => "it contains '?' or '#'",
            _ => "it contains a control character",
        });
    }
    if p.split('/').any(|s| s == "..") {
        return Some("it has a '..' segment");
    }
    match p.rsplit('/').next() {
        Some("" | ".") | None => Some("it does not end with a file name"),
        Some(_) => None,
    }
}

fn check_file(role: &str, file: &BundleFile) -> Result<()> {
    let p = &file.path;
    if p.is_empty() {
        return Err(invalid(format!("files.{role}.path is empty")));
    }
    if let Some(why) = unsafe_path(p) {
        return Err(invalid(format!(
            "files.{role}.path {p:?} must be a relative path inside the bundle: {why}"
        )));
    }
    if let Some(h) = &file.sha256 {
        if h.len() != 64
            || !h
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(invalid(format!(
                "files.{role}.sha256 '{h}' is not 64 lowercase hex digits"
            )));
        }
    }
    if let Some(size) = file.size.filter(|&s| s > MAX_SAFE_INTEGER) {
        return Err(invalid(format!(
            "files.{role}.size {size} is larger than 2^53 - 1 bytes"
        )));
    }
    Ok(())
}

impl Manifest {
    pub fn parse(text: &str) -> Result<Self> {
        let manifest: Manifest =
            serde_json::from_str(text).map_err(|e| invalid(format!("manifest.json: {e}")))?;
        if manifest.format != FORMAT {
            return Err(invalid(format!(
                "format is '{}'; this version reads '{FORMAT}'",
                manifest.format
            )));
        }
        if manifest.name.trim().is_empty() {
            return Err(invalid("name is empty".into()));
        }
        let f = &manifest.files;
        check_file("weights", &f.weights)?;
        for (role, file) in [
            ("config", &f.config),
            ("tokenizer", &f.tokenizer),
            ("chat_template", &f.chat_template),
        ] {
            if let Some(file) = file {
                check_file(role, file)?;
            }
        }
        for (i, a) in f.adapters.iter().enumerate() {
            check_file(&format!("adapters[{i}]"), &a.file())?;
            if let Some(s) = a.scale.filter(|s| !s.is_finite()) {
                return Err(invalid(format!(
                    "files.adapters[{i}].scale {s} is not finite"
                )));
            }
        }
        match manifest.context_length {
            Some(0) => return Err(invalid("context_length must be positive".into())),
            Some(n) if n as u64 > MAX_SAFE_INTEGER => {
                return Err(invalid(format!(
                    "context_length {n} is larger than 2^53 - 1"
                )))
            }
            _ => {}
        }
        if let Some(i) = manifest.stop.iter().position(String::is_empty) {
            return Err(invalid(format!(
                "stop[{i}] is empty; a stop string needs at least one character"
            )));
        }
        Ok(manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"format": "wisp-bundle/1", "name": "tiny",
        "files": {"weights": {"path": "model.safetensors", "sha256": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "size": 9},
                  "config": {"path": "config.json"}, "tokenizer": {"path": "tokenizer.json"}},
        "tool_call_format": "hermes", "stop": ["<|im_end|>"], "context_length": 512}"#;

    #[test]
    fn reads_a_manifest() {
        let m = Manifest::parse(GOOD).unwrap();
        assert_eq!(m.files.weights.path, "model.safetensors");
        assert_eq!(m.tool_call_format, Some(ToolCallFormat::Hermes));
        assert_eq!(m.context_length, Some(512));
    }

    #[test]
    fn problems_are_named() {
        let err = |text: &str| Manifest::parse(text).unwrap_err();
        assert_eq!(err("{").code(), "INVALID_MANIFEST");
        assert!(err(&GOOD.replace("\"name\": \"tiny\",", ""))
            .to_string()
            .contains("missing field `name`"));
        assert!(
            err(&GOOD.replace(r#"["<|im_end|>"]"#, r#"["<|im_end|>", ""]"#))
                .to_string()
                .contains("stop[1] is empty")
        );
        assert!(err(&GOOD.replace("\"stop\"", "\"stops\""))
            .to_string()
            .contains("unknown field `stops`"));
        assert!(err(&GOOD.replace("wisp-bundle/1", "wisp-bundle/9"))
            .to_string()
            .contains("'wisp-bundle/9'"));
        assert!(err(&GOOD.replace("config.json", "../config.json"))
            .to_string()
            .contains("files.config.path"));
        assert!(err(&GOOD.replace("00112233", "zz112233"))
            .to_string()
            .contains("files.weights.sha256"));
        assert!(
            err(&GOOD.replace("\"size\": 9", "\"size\": 9007199254740992"))
                .to_string()
                .contains("files.weights.size 9007199254740992")
        );
        assert!(err(&GOOD.replace("512", "9007199254740992"))
            .to_string()
            .contains("context_length"));
        assert!(err(&GOOD.replace("\"hermes\"", "\"xml\""))
            .to_string()
            .contains("unknown variant"));
    }

    /// Paths that look relative but that the browser's URL parser (`new URL(path, manifestUrl)`) resolves
    /// outside the bundle's folder, or to another scheme: the `manifest` fuzz target's property (it found
    /// "llam:.config.json", a scheme, within seconds).
    #[test]
    fn paths_the_url_parser_resolves_elsewhere_are_refused() {
        for path in [
            "llam:.config.json",
            "%2e%2e/secret.gguf",
            ".%2E/secret.gguf",
            ".\t./secret.gguf",
            ".\n./secret.gguf",
            " ../secret.gguf",
            "data:application/octet-stream,GGUF",
            "javascript:alert(1)",
            "a\\..\\..\\secret.gguf",
            "model.gguf?../../x",
            "model.gguf#x",
            "weights/..",
            "weights/",
            ".",
        ] {
            let text = GOOD.replace(
                "model.safetensors",
                &path
                    .replace('\\', "\\\\")
                    .replace('\t', "\\t")
                    .replace('\n', "\\n"),
            );
            let e = Manifest::parse(&text).expect_err(path);
            assert_eq!(e.code(), "INVALID_MANIFEST");
            assert!(e.to_string().contains("files.weights.path"), "{e}");
        }
        for path in [
            "model.gguf",
            "./weights/SmolLM2 135M.Q4_1.gguf",
            "a/b/c-d_e.f",
        ] {
            let text = GOOD.replace("model.safetensors", path);
            assert_eq!(Manifest::parse(&text).unwrap().files.weights.path, path);
        }
    }
}
