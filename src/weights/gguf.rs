//! GGUF (versions 2 and 3, little-endian): the header parsed from its bytes, each tensor read from the
//! file when asked for (see [`FileBytes`]).
//!
//! Layout: magic `GGUF`, `u32` version, `u64` tensor count, `u64` metadata count, the metadata key/values,
//! the tensor infos, padding to `general.alignment` (default 32), then the tensor data. Everything read
//! from the file is bounds-checked and every count is weighed against the bytes that remain before
//! anything is allocated for it, so a corrupt or hostile file gives `INVALID_WEIGHTS`, never a panic or a
//! huge allocation. Strings are borrowed from the header; tensor data is borrowed from a file in memory.

use super::quant::{self, GgmlType};
use super::FileBytes;
use crate::{Result, WispError};
use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

const MAGIC: &[u8; 4] = b"GGUF";
const DEFAULT_ALIGNMENT: usize = 32;
/// ggml's `GGML_MAX_DIMS`: no ggml tool writes more.
const MAX_DIMS: usize = 4;
/// Arrays of arrays are parsed recursively; a crafted file could otherwise nest deep enough to overflow
/// the stack. Real files nest at most once.
const MAX_ARRAY_DEPTH: usize = 8;
/// Smallest possible tensor info: empty name (8), `n_dims` (4), type (4), offset (8).
const MIN_TENSOR_INFO: usize = 24;
/// Smallest possible key/value: empty key (8), value type (4), one-byte value.
const MIN_KV: usize = 13;

// GGUF metadata value type ids.
const T_U8: u32 = 0;
const T_I8: u32 = 1;
const T_U16: u32 = 2;
const T_I16: u32 = 3;
const T_U32: u32 = 4;
const T_I32: u32 = 5;
const T_F32: u32 = 6;
const T_BOOL: u32 = 7;
const T_STRING: u32 = 8;
const T_ARRAY: u32 = 9;
const T_U64: u32 = 10;
const T_I64: u32 = 11;
const T_F64: u32 = 12;

fn invalid(msg: impl Into<String>) -> WispError {
    WispError::InvalidWeights(msg.into())
}

/// Prefixes an `INVALID_WEIGHTS` message with where in the file it happened.
fn context<T>(r: Result<T>, place: impl FnOnce() -> String) -> Result<T> {
    r.map_err(|e| match e {
        WispError::InvalidWeights(m) => invalid(format!("GGUF {}: {m}", place())),
        other => other,
    })
}

/// One metadata value. Arrays keep their elements in the file's encoding (see [`Array`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(&'a str),
    Array(Array<'a>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl<'a> Value<'a> {
    /// Any integer type, if the value is non-negative.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            _ => self.as_i64().and_then(|v| u64::try_from(v).ok()),
        }
    }

    /// Any integer type, if the value fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::I8(v) => Some(v.into()),
            Value::I16(v) => Some(v.into()),
            Value::I32(v) => Some(v.into()),
            Value::I64(v) => Some(v),
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => i64::try_from(v).ok(),
            _ => None,
        }
    }

    /// `F32` or `F64`.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v.into()),
            Value::F64(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Value::Str(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Array<'a>> {
        match self {
            Value::Array(v) => Some(v),
            _ => None,
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Value::U8(_) => "u8",
            Value::I8(_) => "i8",
            Value::U16(_) => "u16",
            Value::I16(_) => "i16",
            Value::U32(_) => "u32",
            Value::I32(_) => "i32",
            Value::F32(_) => "f32",
            Value::Bool(_) => "bool",
            Value::Str(_) => "string",
            Value::Array(_) => "array",
            Value::U64(_) => "u64",
            Value::I64(_) => "i64",
            Value::F64(_) => "f64",
        }
    }
}

/// A metadata array. Numbers stay as borrowed little-endian bytes (decoded on access), so even a huge
/// array costs no allocation; strings are borrowed; arrays of arrays hold their parsed children.
#[derive(Debug, Clone, PartialEq)]
pub enum Array<'a> {
    /// Fixed-size elements of GGUF value type `ty` (never string or array).
    Scalars {
        ty: u32,
        bytes: &'a [u8],
    },
    Strings(Vec<&'a str>),
    Arrays(Vec<Array<'a>>),
}

impl<'a> Array<'a> {
    pub fn len(&self) -> usize {
        match self {
            Array::Scalars { ty, bytes } => bytes.len() / scalar_size(*ty).unwrap_or(1),
            Array::Strings(v) => v.len(),
            Array::Arrays(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements of a numeric or bool array; `None` for arrays of strings or arrays.
    pub fn scalars(&self) -> Option<impl Iterator<Item = Value<'a>> + '_> {
        match self {
            Array::Scalars { ty, bytes } => {
                let size = scalar_size(*ty)?;
                Some(bytes.chunks_exact(size).map(|b| decode_scalar(*ty, b)))
            }
            _ => None,
        }
    }

    pub fn strings(&self) -> Option<&[&'a str]> {
        match self {
            Array::Strings(v) => Some(v),
            _ => None,
        }
    }

    pub fn arrays(&self) -> Option<&[Array<'a>]> {
        match self {
            Array::Arrays(v) => Some(v),
            _ => None,
        }
    }
}

/// Byte size of a fixed-size GGUF value type; `None` for string, array and unknown types.
fn scalar_size(ty: u32) -> Option<usize> {
    match ty {
        T_U8 | T_I8 | T_BOOL => Some(1),
        T_U16 | T_I16 => Some(2),
        T_U32 | T_I32 | T_F32 => Some(4),
        T_U64 | T_I64 | T_F64 => Some(8),
        _ => None,
    }
}

/// Decodes one scalar; `b` is exactly `scalar_size(ty)` bytes (callers slice it so).
fn decode_scalar<'a>(ty: u32, b: &[u8]) -> Value<'a> {
    let b8 = |n: usize| {
        let mut a = [0u8; 8];
        a[..n].copy_from_slice(&b[..n]);
        a
    };
    match ty {
        T_U8 => Value::U8(b[0]),
        T_I8 => Value::I8(b[0] as i8),
        T_U16 => Value::U16(u16::from_le_bytes([b[0], b[1]])),
        T_I16 => Value::I16(i16::from_le_bytes([b[0], b[1]])),
        T_U32 => Value::U32(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        T_I32 => Value::I32(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        T_F32 => Value::F32(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        // Like the reference readers, any non-zero byte is true.
        T_BOOL => Value::Bool(b[0] != 0),
        T_U64 => Value::U64(u64::from_le_bytes(b8(8))),
        T_I64 => Value::I64(i64::from_le_bytes(b8(8))),
        _ => Value::F64(f64::from_le_bytes(b8(8))),
    }
}

/// The metadata key/values, in file order, with lookup by key.
#[derive(Debug, Clone, Default)]
pub struct Metadata<'a> {
    entries: Vec<(&'a str, Value<'a>)>,
    index: HashMap<&'a str, usize>,
}

impl<'a> Metadata<'a> {
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        self.index.get(key).map(|&i| &self.entries[i].1)
    }

    /// Key/values in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &Value<'a>)> {
        self.entries.iter().map(|(k, v)| (*k, v))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Looks `key` up and converts it with `convert`; a missing key or a value `convert` rejects is
    /// `INVALID_WEIGHTS` naming the key, what it holds and what was expected.
    fn typed<'s, T>(
        &'s self,
        key: &str,
        want: &str,
        convert: impl FnOnce(&'s Value<'a>) -> Option<T>,
    ) -> Result<T> {
        let value = self.get(key).ok_or_else(|| {
            invalid(format!(
                "GGUF metadata has no key '{key}' ({want} expected)"
            ))
        })?;
        convert(value).ok_or_else(|| {
            invalid(format!(
                "GGUF metadata key '{key}' holds a {} that is not a {want}",
                value.type_name()
            ))
        })
    }

    pub fn get_str(&self, key: &str) -> Result<&'a str> {
        self.typed(key, "string", Value::as_str)
    }

    /// Any integer type whose value fits a `u32`.
    pub fn get_u32(&self, key: &str) -> Result<u32> {
        self.typed(key, "u32", |v| {
            v.as_u64().and_then(|v| u32::try_from(v).ok())
        })
    }

    /// Any integer type whose value is non-negative.
    pub fn get_u64(&self, key: &str) -> Result<u64> {
        self.typed(key, "u64", Value::as_u64)
    }

    /// Any integer type whose value fits an `i64`.
    pub fn get_i64(&self, key: &str) -> Result<i64> {
        self.typed(key, "i64", Value::as_i64)
    }

    /// `F32`, or `F64` narrowed.
    pub fn get_f32(&self, key: &str) -> Result<f32> {
        self.typed(key, "f32", |v| v.as_f64().map(|v| v as f32))
    }

    pub fn get_bool(&self, key: &str) -> Result<bool> {
        self.typed(key, "bool", Value::as_bool)
    }

    pub fn get_array(&self, key: &str) -> Result<&Array<'a>> {
        self.typed(key, "array", Value::as_array)
    }

    /// An array of strings, e.g. `tokenizer.ggml.tokens`.
    pub fn get_str_array(&self, key: &str) -> Result<&[&'a str]> {
        self.typed(key, "string array", |v| v.as_array()?.strings())
    }

    /// An array of any integer type (e.g. `tokenizer.ggml.token_type`, stored as i32).
    pub fn get_i64_array(&self, key: &str) -> Result<Vec<i64>> {
        self.typed(key, "integer array", |v| {
            v.as_array()?.scalars()?.map(|x| x.as_i64()).collect()
        })
    }

    /// An array of f32 or f64 (e.g. `tokenizer.ggml.scores`).
    pub fn get_f32_array(&self, key: &str) -> Result<Vec<f32>> {
        self.typed(key, "float array", |v| {
            v.as_array()?
                .scalars()?
                .map(|x| x.as_f64().map(|x| x as f32))
                .collect()
        })
    }
}

/// One tensor: where it lies and how it is encoded.
#[derive(Debug, Clone)]
pub struct TensorInfo<'a> {
    name: &'a str,
    dims: Vec<usize>,
    ty: GgmlType,
    offset: usize,
    /// Its bytes in the file, checked to lie inside it.
    bytes: Range<usize>,
    file: FileBytes<'a>,
}

impl<'a> TensorInfo<'a> {
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// Dimensions as GGUF stores them, innermost first: `ggml_dims()[0]` is the row length (ggml's `ne`).
    pub fn ggml_dims(&self) -> &[usize] {
        &self.dims
    }

    /// Dimensions outermost first, as PyTorch and safetensors give them: the reverse of [`Self::ggml_dims`].
    /// A GGUF `[2048, 32000]` token embedding is `[32000, 2048]` here.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().copied().collect()
    }

    pub fn n_elements(&self) -> usize {
        // Checked when parsing.
        self.dims.iter().product()
    }

    pub fn ggml_type(&self) -> GgmlType {
        self.ty
    }

    /// Offset of the tensor's bytes from the start of the data section.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The tensor's raw bytes: borrowed from a file in memory, read from one outside it.
    pub fn data(&self) -> Result<Cow<'a, [u8]>> {
        self.read(0..self.bytes.len())
    }

    /// How many bytes the tensor takes in the file.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// Bytes `part` of the tensor's (`0..byte_len()` is all of them), as [`Self::data`] gives them.
    pub fn read(&self, part: Range<usize>) -> Result<Cow<'a, [u8]>> {
        if part.start > part.end || part.end > self.bytes.len() {
            return Err(invalid(format!(
                "GGUF tensor '{}' has {} bytes; bytes {part:?} were asked for",
                self.name,
                self.bytes.len()
            )));
        }
        self.file
            .read(self.bytes.start + part.start..self.bytes.start + part.end)
    }

    /// Dequantizes to f32, row-major in [`Self::shape`] order.
    pub fn to_f32(&self) -> Result<Vec<f32>> {
        quant::dequantize(self.name, self.ty, &self.data()?)
    }
}

/// A parsed GGUF file: its header borrowed, its tensors read when asked for.
#[derive(Debug, Clone)]
pub struct GgufFile<'a> {
    version: u32,
    metadata: Metadata<'a>,
    tensors: Vec<TensorInfo<'a>>,
    index: HashMap<&'a str, usize>,
    alignment: usize,
    data_offset: usize,
}

impl<'a> GgufFile<'a> {
    /// A whole file in memory. Tensor data is not decoded until asked for.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        Self::open(bytes, FileBytes::Memory(bytes))
    }

    /// Parses the header, metadata and tensor infos from `header` (the start of `file`) and checks that
    /// every tensor's bytes lie inside `file`.
    pub fn open(header: &'a [u8], file: FileBytes<'a>) -> Result<Self> {
        let mut r = Reader {
            bytes: header,
            pos: 0,
        };
        let magic = context(r.take(4), || "header".into())?;
        if magic != MAGIC {
            return Err(invalid(format!(
                "not a GGUF file: it starts with {magic:02x?}, not the magic 'GGUF'"
            )));
        }
        let version = context(r.u32(), || "header".into())?;
        match version {
            2 | 3 => {}
            1 => return Err(invalid("GGUF version 1 is not supported (only 2 and 3); convert the model again with a recent llama.cpp")),
            v if v.swap_bytes() == 2 || v.swap_bytes() == 3 => {
                return Err(invalid("big-endian GGUF files are not supported"))
            }
            v => return Err(invalid(format!("unknown GGUF version {v} (only 2 and 3 are supported)"))),
        }
        let tensor_count = context(r.count(MIN_TENSOR_INFO), || "tensor count".into())?;
        let kv_count = context(r.count(MIN_KV), || "metadata count".into())?;

        let mut metadata = Metadata {
            entries: Vec::with_capacity(kv_count),
            index: HashMap::with_capacity(kv_count),
        };
        for i in 0..kv_count {
            let (key, value) = context(r.key_value(), || format!("metadata entry {i}"))?;
            if metadata.index.insert(key, i).is_some() {
                return Err(invalid(format!("GGUF metadata key '{key}' appears twice")));
            }
            metadata.entries.push((key, value));
        }

        let alignment = match metadata.get("general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some(v) => v
                .as_u64()
                .and_then(|a| usize::try_from(a).ok())
                .filter(|a| a.is_power_of_two())
                .ok_or_else(|| {
                    invalid(format!(
                        "GGUF general.alignment {v:?} is not a power of two"
                    ))
                })?,
        };

        let mut raw = Vec::with_capacity(tensor_count);
        for i in 0..tensor_count {
            raw.push(context(r.tensor_info(), || format!("tensor info {i}"))?);
        }
        // The data section starts at the next multiple of the alignment after the tensor infos.
        let data_offset = r
            .pos
            .checked_next_multiple_of(alignment)
            .ok_or_else(|| invalid("GGUF data offset overflows"))?;

        let mut tensors = Vec::with_capacity(tensor_count);
        let mut index = HashMap::with_capacity(tensor_count);
        for (name, dims, ty, offset) in raw {
            let tensor = locate(file, data_offset, name, dims, ty, offset)?;
            if index.insert(name, tensors.len()).is_some() {
                return Err(invalid(format!("GGUF tensor '{name}' appears twice")));
            }
            tensors.push(tensor);
        }
        Ok(GgufFile {
            version,
            metadata,
            tensors,
            index,
            alignment,
            data_offset,
        })
    }

    pub fn version(&self) -> u32 {
        self.version
    }

    pub fn metadata(&self) -> &Metadata<'a> {
        &self.metadata
    }

    /// Tensors in file order.
    pub fn tensors(&self) -> &[TensorInfo<'a>] {
        &self.tensors
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo<'a>> {
        self.index.get(name).map(|&i| &self.tensors[i])
    }

    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// Where the data section starts in the file.
    pub fn data_offset(&self) -> usize {
        self.data_offset
    }
}

/// Checks a tensor's dims and type against the file's length.
fn locate<'a>(
    file: FileBytes<'a>,
    data_offset: usize,
    name: &'a str,
    dims: Vec<usize>,
    ty: GgmlType,
    offset: u64,
) -> Result<TensorInfo<'a>> {
    let bad = |what: String| invalid(format!("GGUF tensor '{name}': {what}"));
    let n_elements = dims
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| bad(format!("dims {dims:?} overflow")))?;
    let (block_len, block_bytes) = ty.block_layout();
    let row = dims.first().copied().unwrap_or(1);
    if !row.is_multiple_of(block_len) {
        return Err(bad(format!(
            "row length {row} is not a multiple of the {ty:?} block size {block_len}"
        )));
    }
    let size = (n_elements / block_len)
        .checked_mul(block_bytes)
        .ok_or_else(|| bad("byte size overflows".into()))?;
    let located = usize::try_from(offset).ok().and_then(|rel| {
        let start = data_offset.checked_add(rel)?;
        let end = start.checked_add(size).filter(|&end| end <= file.len())?;
        Some((rel, start..end))
    });
    let Some((offset, bytes)) = located else {
        return Err(bad(format!(
            "its {size} bytes at data offset {offset} (file offset {}) end past the end of the \
             {}-byte file (truncated?)",
            data_offset as u128 + u128::from(offset),
            file.len()
        )));
    };
    Ok(TensorInfo {
        name,
        dims,
        ty,
        offset,
        bytes,
        file,
    })
}

/// A cursor over the file; every read is bounds-checked.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(invalid(format!(
                "needs {n} bytes at offset {} but the file has only {} (truncated?)",
                self.pos,
                self.bytes.len()
            )));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
        ]))
    }

    /// A `u64` count of items that each take at least `min_size` bytes, checked against what remains so
    /// that it is safe to allocate for.
    fn count(&mut self, min_size: usize) -> Result<usize> {
        let n = self.u64()?;
        let fits = usize::try_from(n).ok().filter(|&n| {
            n.checked_mul(min_size)
                .is_some_and(|b| b <= self.remaining())
        });
        fits.ok_or_else(|| {
            invalid(format!(
                "declares {n} items of at least {min_size} bytes each but only {} bytes follow",
                self.remaining()
            ))
        })
    }

    fn string(&mut self) -> Result<&'a str> {
        let len = self.u64()?;
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= self.remaining())
            .ok_or_else(|| {
                invalid(format!(
                    "string of {len} bytes at offset {} is longer than the rest of the file",
                    self.pos
                ))
            })?;
        let at = self.pos;
        std::str::from_utf8(self.take(len)?)
            .map_err(|e| invalid(format!("string at offset {at} is not UTF-8: {e}")))
    }

    fn key_value(&mut self) -> Result<(&'a str, Value<'a>)> {
        let key = self.string()?;
        let ty = self.u32()?;
        let value = context(self.value(ty, 0), || format!("key '{key}'"))?;
        Ok((key, value))
    }

    fn value(&mut self, ty: u32, depth: usize) -> Result<Value<'a>> {
        match ty {
            T_STRING => Ok(Value::Str(self.string()?)),
            T_ARRAY => Ok(Value::Array(self.array(depth)?)),
            _ => {
                let size =
                    scalar_size(ty).ok_or_else(|| invalid(format!("unknown value type {ty}")))?;
                Ok(decode_scalar(ty, self.take(size)?))
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Array<'a>> {
        if depth >= MAX_ARRAY_DEPTH {
            return Err(invalid(format!(
                "arrays nested deeper than {MAX_ARRAY_DEPTH}"
            )));
        }
        let ty = self.u32()?;
        match ty {
            T_STRING => {
                let n = self.count(8)?;
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(self.string()?);
                }
                Ok(Array::Strings(v))
            }
            T_ARRAY => {
                // An empty inner array still has its type (4) and count (8).
                let n = self.count(12)?;
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(self.array(depth + 1)?);
                }
                Ok(Array::Arrays(v))
            }
            _ => {
                let size = scalar_size(ty)
                    .ok_or_else(|| invalid(format!("unknown array element type {ty}")))?;
                let n = self.count(size)?;
                // `count` checked n * size against the remaining bytes.
                Ok(Array::Scalars {
                    ty,
                    bytes: self.take(n * size)?,
                })
            }
        }
    }

    /// Name, ggml dims, type and data offset of one tensor.
    fn tensor_info(&mut self) -> Result<(&'a str, Vec<usize>, GgmlType, u64)> {
        let name = self.string()?;
        let n_dims = self.u32()?;
        let n_dims = usize::try_from(n_dims)
            .ok()
            .filter(|&n| n <= MAX_DIMS)
            .ok_or_else(|| {
                invalid(format!(
                    "tensor '{name}' has {n_dims} dims (at most {MAX_DIMS})"
                ))
            })?;
        let mut dims = Vec::with_capacity(n_dims);
        for _ in 0..n_dims {
            let d = self.u64()?;
            dims.push(
                usize::try_from(d)
                    .map_err(|_| invalid(format!("tensor '{name}' has a dimension of {d}")))?,
            );
        }
        let ty_id = self.u32()?;
        let ty = GgmlType::from_id(ty_id).ok_or_else(|| {
            WispError::UnsupportedWeights(format!(
                "GGUF tensor '{name}' has ggml type id {ty_id}, which this reader does not know"
            ))
        })?;
        let offset = self.u64()?;
        Ok((name, dims, ty, offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(version: u32, n_tensors: u64, n_kv: u64) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend(version.to_le_bytes());
        b.extend(n_tensors.to_le_bytes());
        b.extend(n_kv.to_le_bytes());
        b
    }

    fn put_str(b: &mut Vec<u8>, s: &str) {
        b.extend((s.len() as u64).to_le_bytes());
        b.extend(s.as_bytes());
    }

    fn put_tensor(b: &mut Vec<u8>, name: &str, dims: &[u64], ty: u32, offset: u64) {
        put_str(b, name);
        b.extend((dims.len() as u32).to_le_bytes());
        dims.iter().for_each(|d| b.extend(d.to_le_bytes()));
        b.extend(ty.to_le_bytes());
        b.extend(offset.to_le_bytes());
    }

    /// One F32 tensor of `n` elements at data offset `offset`, with `data_len` data bytes after padding.
    fn one_tensor(n: u64, ty: u32, offset: u64, data_len: usize) -> Vec<u8> {
        let mut b = header(3, 1, 0);
        put_tensor(&mut b, "w", &[n], ty, offset);
        b.resize(b.len().next_multiple_of(DEFAULT_ALIGNMENT) + data_len, 0);
        b
    }

    fn code(bytes: &[u8]) -> &'static str {
        GgufFile::parse(bytes).unwrap_err().code()
    }

    #[test]
    fn minimal_file_uses_default_alignment() {
        let b = one_tensor(4, 0, 0, 16);
        let f = GgufFile::parse(&b).unwrap();
        assert_eq!(f.alignment(), 32);
        assert_eq!(f.data_offset(), 64);
        assert_eq!(f.tensor("w").unwrap().to_f32().unwrap(), vec![0.0; 4]);
        // No tensors: the data section may be absent altogether.
        assert!(GgufFile::parse(&header(3, 0, 0))
            .unwrap()
            .tensors()
            .is_empty());
    }

    #[test]
    fn empty_and_wrong_magic() {
        assert_eq!(code(b""), "INVALID_WEIGHTS");
        let mut b = one_tensor(4, 0, 0, 16);
        b[0] = b'X';
        let err = GgufFile::parse(&b).unwrap_err();
        assert_eq!(err.code(), "INVALID_WEIGHTS");
        assert!(err.to_string().contains("magic"), "{err}");
    }

    #[test]
    fn versions() {
        for (v, needle) in [
            (1, "version 1"),
            (4, "version 4"),
            (0x0300_0000, "big-endian"),
        ] {
            let err = GgufFile::parse(&header(v, 0, 0)).unwrap_err();
            assert_eq!(err.code(), "INVALID_WEIGHTS");
            assert!(err.to_string().contains(needle), "{err}");
        }
    }

    #[test]
    fn truncated_header() {
        let b = header(3, 0, 0);
        for len in [3, 4, 7, 8, 15, 23] {
            assert_eq!(code(&b[..len]), "INVALID_WEIGHTS", "{len}");
        }
    }

    #[test]
    fn huge_counts_fail_before_allocating() {
        let err = GgufFile::parse(&header(3, 1 << 60, 0)).unwrap_err();
        assert_eq!(err.code(), "INVALID_WEIGHTS");
        assert!(err.to_string().contains("tensor count"), "{err}");
        assert_eq!(code(&header(3, 0, u64::MAX)), "INVALID_WEIGHTS");

        // A key whose declared length is far beyond the file.
        let mut b = header(3, 0, 1);
        b.extend((1u64 << 62).to_le_bytes());
        b.extend([0; 16]);
        let err = GgufFile::parse(&b).unwrap_err();
        assert!(err.to_string().contains("longer than the rest"), "{err}");

        // Arrays claiming 2^61 strings, numbers or arrays.
        for elem in [T_STRING, T_U64, T_ARRAY] {
            let mut b = header(3, 0, 1);
            put_str(&mut b, "k");
            b.extend(T_ARRAY.to_le_bytes());
            b.extend(elem.to_le_bytes());
            b.extend((1u64 << 61).to_le_bytes());
            b.extend([0; 32]);
            assert_eq!(code(&b), "INVALID_WEIGHTS", "{elem}");
        }
    }

    #[test]
    fn deeply_nested_arrays_are_refused() {
        let mut b = header(3, 0, 1);
        put_str(&mut b, "k");
        b.extend(T_ARRAY.to_le_bytes());
        for _ in 0..10_000 {
            b.extend(T_ARRAY.to_le_bytes());
            b.extend(1u64.to_le_bytes());
        }
        let err = GgufFile::parse(&b).unwrap_err();
        assert!(err.to_string().contains("nested"), "{err}");
    }

    #[test]
    fn tensor_data_out_of_bounds() {
        // 4 f32 need 16 bytes; only 15 follow.
        assert_eq!(code(&one_tensor(4, 0, 0, 15)), "INVALID_WEIGHTS");
        // Offset past the end, and offsets/dims whose arithmetic would overflow.
        assert_eq!(code(&one_tensor(4, 0, 32, 16)), "INVALID_WEIGHTS");
        assert_eq!(code(&one_tensor(4, 0, u64::MAX, 16)), "INVALID_WEIGHTS");
        assert_eq!(code(&one_tensor(u64::MAX, 0, 0, 16)), "INVALID_WEIGHTS");
        let mut b = header(3, 1, 0);
        put_tensor(&mut b, "w", &[1 << 32, 1 << 32, 1 << 32], 0, 0);
        assert_eq!(code(&b), "INVALID_WEIGHTS");
        // A Q8_0 row must hold whole blocks of 32.
        let err = GgufFile::parse(&one_tensor(16, 8, 0, 34)).unwrap_err();
        assert!(err.to_string().contains("block size"), "{err}");
        // More than 4 dims.
        let mut b = header(3, 1, 0);
        put_tensor(&mut b, "w", &[1; 5], 0, 0);
        assert_eq!(code(&b), "INVALID_WEIGHTS");
    }

    #[test]
    fn unknown_ggml_type_names_tensor_and_id() {
        let err = GgufFile::parse(&one_tensor(4, 99, 0, 16)).unwrap_err();
        assert_eq!(err.code(), "UNSUPPORTED_WEIGHTS");
        assert!(
            err.to_string().contains("'w'") && err.to_string().contains("99"),
            "{err}"
        );
    }

    #[test]
    fn bad_metadata() {
        // Unknown value type.
        let mut b = header(3, 0, 1);
        put_str(&mut b, "k");
        b.extend(13u32.to_le_bytes());
        b.extend([0; 8]);
        assert_eq!(code(&b), "INVALID_WEIGHTS");
        // Duplicate key.
        let mut b = header(3, 0, 2);
        for _ in 0..2 {
            put_str(&mut b, "k");
            b.extend(T_U8.to_le_bytes());
            b.push(1);
        }
        assert!(GgufFile::parse(&b)
            .unwrap_err()
            .to_string()
            .contains("twice"));
        // Alignment that is not a power of two.
        let mut b = header(3, 0, 1);
        put_str(&mut b, "general.alignment");
        b.extend(T_U32.to_le_bytes());
        b.extend(48u32.to_le_bytes());
        assert_eq!(code(&b), "INVALID_WEIGHTS");
        // Invalid UTF-8 in a key.
        let mut b = header(3, 0, 1);
        b.extend(1u64.to_le_bytes());
        b.push(0xFF);
        b.extend(T_U8.to_le_bytes());
        b.push(1);
        assert!(GgufFile::parse(&b)
            .unwrap_err()
            .to_string()
            .contains("UTF-8"));
    }
}
