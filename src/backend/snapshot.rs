//! The key/value cache as bytes: the first tokens of a decoder's cache with the keys and values of every
//! layer, so that a page can keep an agent's system + tools prefix (Cache API) and a later page load skips
//! its prefill. Layout, little-endian: `MAGIC`, a u32 length and that many bytes of JSON [`Header`], the
//! tokens (u32 each), then per layer the keys and the values of those tokens (f32, `[token][kv_heads *
//! head_dim]`, both backends' layout). The values are f32 as the backends keep them, so a restored cache
//! gives the very logits its prefill gave.

use serde::{Deserialize, Serialize};

use super::BackendKind;
use crate::error::{Result, WispError};

const MAGIC: &[u8; 8] = b"wisp-kv1";

/// What the bytes were made by and for: a cache restores only into the same version, backend and shape
/// (the weights themselves are the caller's key: the package keys snapshots by the bundle's sha256s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Header {
    pub version: String,
    pub backend: BackendKind,
    pub layers: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub tokens: usize,
}

impl Header {
    fn row(&self) -> usize {
        self.kv_heads * self.head_dim
    }
}

/// Cached tokens with their keys and values, per layer `tokens.len() * row` values each.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    pub tokens: Vec<u32>,
    pub keys: Vec<Vec<f32>>,
    pub values: Vec<Vec<f32>>,
}

/// The bytes of `header.tokens` tokens of `tokens`, `keys` and `values` (each layer's slices may hold
/// more rows than that: only the first are written).
pub fn write(header: &Header, tokens: &[u32], keys: &[Vec<f32>], values: &[Vec<f32>]) -> Vec<u8> {
    let n = header.tokens;
    let rows = n * header.row();
    // Serializing a struct of strings and numbers cannot fail.
    let json = serde_json::to_vec(header).unwrap_or_default();
    let mut out =
        Vec::with_capacity(MAGIC.len() + 4 + json.len() + 4 * n + 8 * rows * header.layers);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    for id in &tokens[..n] {
        out.extend_from_slice(&id.to_le_bytes());
    }
    for (k, v) in keys.iter().zip(values) {
        for x in k[..rows].iter().chain(&v[..rows]) {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out
}

fn bad(what: impl std::fmt::Display) -> WispError {
    WispError::InvalidInput(format!("not a key/value cache of this model: {what}"))
}

/// Reads bytes from [`write`], refusing any that were not made for `expected` (all but its `tokens`,
/// which the bytes give) or whose length does not match their header.
pub fn read(bytes: &[u8], expected: &Header) -> Result<Snapshot> {
    let rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| bad("its first bytes are not a Wisp cache's"))?;
    let (len, rest) = rest
        .split_at_checked(4)
        .ok_or_else(|| bad("it ends early"))?;
    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
    let (json, body) = rest
        .split_at_checked(len)
        .ok_or_else(|| bad("it ends early"))?;
    let header: Header = serde_json::from_slice(json).map_err(bad)?;
    let wanted = Header {
        tokens: header.tokens,
        ..expected.clone()
    };
    if header != wanted {
        return Err(bad(format_args!(
            "it was made by Wisp {} for the {:?} backend and a model of {} layers x {} x {}; this is \
             Wisp {} on {:?} with {} layers x {} x {}",
            header.version,
            header.backend,
            header.layers,
            header.kv_heads,
            header.head_dim,
            wanted.version,
            wanted.backend,
            wanted.layers,
            wanted.kv_heads,
            wanted.head_dim
        )));
    }
    let n = header.tokens;
    let rows = n.checked_mul(header.row());
    // In u128, where no header can overflow it.
    let size = 4 * n as u128 + 8 * header.layers as u128 * rows.unwrap_or(usize::MAX) as u128;
    if rows.is_none() || body.len() as u128 != size {
        return Err(bad(format_args!(
            "{n} tokens need {size} bytes after the header; it has {}",
            body.len()
        )));
    }
    let rows = rows.unwrap_or(0);
    let (ids, mut data) = body.split_at(4 * n);
    let tokens = ids
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let mut next = || {
        let (layer, rest) = data.split_at(4 * rows);
        data = rest;
        layer
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect::<Vec<f32>>()
    };
    let (mut keys, mut values) = (Vec::new(), Vec::new());
    for _ in 0..header.layers {
        keys.push(next());
        values.push(next());
    }
    Ok(Snapshot {
        tokens,
        keys,
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(tokens: usize) -> Header {
        Header {
            version: "1.2.3".into(),
            backend: BackendKind::Cpu,
            layers: 2,
            kv_heads: 1,
            head_dim: 2,
            tokens,
        }
    }

    fn sample() -> Vec<u8> {
        // Three tokens cached, two saved: the third row of each layer is left out.
        let keys = vec![vec![1.0, 2.0, 3.0, 4.0, 9.0, 9.0], vec![5.0; 6]];
        let values = vec![vec![-1.0; 6], vec![0.5, 0.25, 0.0, -0.0, 7.0, 7.0]];
        write(&header(2), &[7, 8, 9], &keys, &values)
    }

    #[test]
    fn reads_what_it_wrote() {
        let snap = read(&sample(), &header(0)).unwrap();
        assert_eq!(snap.tokens, [7, 8]);
        assert_eq!(snap.keys, [vec![1.0, 2.0, 3.0, 4.0], vec![5.0; 4]]);
        assert_eq!(snap.values, [vec![-1.0; 4], vec![0.5, 0.25, 0.0, -0.0]]);
    }

    #[test]
    fn refuses_other_models_and_damaged_bytes() {
        let bytes = sample();
        let other = |f: fn(&mut Header)| {
            let mut h = header(0);
            f(&mut h);
            read(&bytes, &h).unwrap_err().code()
        };
        assert_eq!(other(|h| h.version = "1.2.4".into()), "INVALID_INPUT");
        assert_eq!(other(|h| h.backend = BackendKind::Webgpu), "INVALID_INPUT");
        assert_eq!(other(|h| h.layers = 3), "INVALID_INPUT");
        assert_eq!(other(|h| h.head_dim = 4), "INVALID_INPUT");
        for cut in [0, 5, 12, 40, bytes.len() - 1] {
            assert!(read(&bytes[..cut], &header(0)).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(read(&longer, &header(0)).is_err());
        let mut magic = bytes.clone();
        magic[0] = b'W';
        assert!(read(&magic, &header(0)).is_err());
        // A header claiming more tokens than the bytes hold, even absurdly many.
        let json = br#"{"version":"1.2.3","backend":"cpu","layers":2,"kvHeads":1,"headDim":2,"tokens":4611686018427387904}"#;
        let mut huge = MAGIC.to_vec();
        huge.extend_from_slice(&(json.len() as u32).to_le_bytes());
        huge.extend_from_slice(json);
        assert!(read(&huge, &header(0)).is_err());
    }
}
