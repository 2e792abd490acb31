//! safetensors files: the header parsed and checked by the `safetensors` crate (`Metadata`), each tensor
//! read from the file when asked for, so that a file outside our memory is never copied whole; F32,
//! F16 and BF16 tensors converted to f32.

use super::quant::{self, GgmlType};
use super::FileBytes;
use crate::{Result, WispError};
use safetensors::tensor::{Metadata, TensorInfo};
use safetensors::Dtype;

/// Bytes before the JSON header: its length, a little-endian u64.
const LENGTH_BYTES: usize = 8;

/// A safetensors file: its header parsed, its tensors read from `file`.
#[derive(Debug)]
pub struct SafetensorsFile<'a> {
    file: FileBytes<'a>,
    metadata: Metadata,
    /// Where the tensors' bytes start: after the length and the header.
    data_start: usize,
    /// Sorted, so the order does not depend on the crate's hash map.
    names: Vec<String>,
}

/// How many bytes of a file [`SafetensorsFile::open`] needs: the length field and the JSON header it
/// announces, or only the length field when the header would not fit in the file (`open` then says so).
pub fn header_len(first: &[u8], file_len: usize) -> usize {
    let fits = |n: u64| n <= (file_len as u64).saturating_sub(LENGTH_BYTES as u64);
    match announced(first) {
        // Fits in the file, so in a usize.
        Some(n) if fits(n) => LENGTH_BYTES + n as usize,
        _ => LENGTH_BYTES.min(file_len),
    }
}

/// The header length the first eight bytes announce, if they are there.
fn announced(first: &[u8]) -> Option<u64> {
    let length: [u8; LENGTH_BYTES] = first.get(..LENGTH_BYTES)?.try_into().ok()?;
    Some(u64::from_le_bytes(length))
}

impl<'a> SafetensorsFile<'a> {
    /// Parses `header` (the file's first [`header_len`] bytes or more): the crate checks that the
    /// tensors' byte ranges follow each other and match their shapes and dtypes, and here they must end
    /// where the file does (the check the crate makes when it holds the whole file).
    pub fn open(header: &[u8], file: FileBytes<'a>) -> Result<Self> {
        let invalid =
            |m: String| WispError::InvalidWeights(format!("not a valid safetensors file: {m}"));
        let n = announced(header)
            .ok_or_else(|| invalid(format!("{} bytes, too short for its header", file.len())))?;
        let json = usize::try_from(n)
            .ok()
            .and_then(|n| header.get(LENGTH_BYTES..)?.get(..n))
            .ok_or_else(|| {
                invalid(format!(
                    "its header of {n} bytes does not fit in the {}-byte file",
                    file.len()
                ))
            })?;
        let metadata: Metadata =
            serde_json::from_slice(json).map_err(|e| invalid(format!("its header: {e}")))?;
        let data_start = LENGTH_BYTES + json.len();
        let data_len = file.len().saturating_sub(data_start);
        if metadata.data_len() != data_len {
            return Err(invalid(format!(
                "its header describes {} bytes of tensors, and the file holds {data_len} after it",
                metadata.data_len()
            )));
        }
        let mut names = metadata.offset_keys();
        names.sort_unstable();
        Ok(SafetensorsFile {
            file,
            metadata,
            data_start,
            names,
        })
    }

    /// Tensor names, sorted.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    fn info(&self, name: &str) -> Result<&TensorInfo> {
        self.metadata.info(name).ok_or_else(|| {
            WispError::InvalidWeights(format!("safetensors file has no tensor '{name}'"))
        })
    }

    /// Outermost first, as stored.
    pub fn shape(&self, name: &str) -> Result<Vec<usize>> {
        Ok(self.info(name)?.shape.clone())
    }

    /// Reads an F32, F16 or BF16 tensor from the file and converts it to f32, row-major.
    pub fn to_f32(&self, name: &str) -> Result<Vec<f32>> {
        let info = self.info(name)?;
        // These dtypes have the same little-endian encoding as the ggml types of the same name.
        let ty = match info.dtype {
            Dtype::F32 => GgmlType::F32,
            Dtype::F16 => GgmlType::F16,
            Dtype::BF16 => GgmlType::BF16,
            other => {
                return Err(WispError::UnsupportedWeights(format!(
                    "safetensors tensor '{name}' has dtype {other:?}; only F32, F16 and BF16 are supported"
                )))
            }
        };
        let (start, end) = info.data_offsets;
        let bytes = self
            .file
            .read(self.data_start + start..self.data_start + end)?;
        quant::dequantize(name, ty, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weights::test_outside::Outside;
    use crate::weights::Weights;
    use safetensors::tensor::TensorView;
    use std::ops::Range;

    /// A file of an f16 `[rows, cols]` tensor "a" and an f32 `[cols]` tensor "b", by the crate's writer.
    fn file(rows: usize, cols: usize) -> (Vec<u8>, Vec<f32>, Vec<f32>) {
        let a: Vec<f32> = (0..rows * cols)
            .map(|i| (i % 97) as f32 * 0.25 - 8.0)
            .collect();
        let b: Vec<f32> = (0..cols).map(|i| i as f32 * -0.5).collect();
        let a16: Vec<u8> = a
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
            .collect();
        let b32: Vec<u8> = b.iter().flat_map(|v| v.to_le_bytes()).collect();
        let views = [
            (
                "a",
                TensorView::new(Dtype::F16, vec![rows, cols], &a16).unwrap(),
            ),
            ("b", TensorView::new(Dtype::F32, vec![cols], &b32).unwrap()),
        ];
        (safetensors::serialize(views, None).unwrap(), a, b)
    }

    #[test]
    fn a_file_outside_memory_is_read_a_tensor_at_a_time() {
        let (bytes, a, b) = file(300, 64);
        let outside = Outside::new(bytes);
        let file = FileBytes::Outside(&outside);
        let header = file.header().unwrap();
        assert!(header.len() < 200, "{} header bytes", header.len());
        let weights = Weights::open(&header, file).unwrap();
        assert_eq!(weights.tensor_names(), ["a", "b"]);
        assert_eq!(weights.shape("a").unwrap(), [300, 64]);
        outside.reads.lock().unwrap().clear();
        assert_eq!(weights.to_f32("a").unwrap(), a);
        assert_eq!(weights.to_f32("b").unwrap(), b);
        let reads = outside.reads.lock().unwrap();
        assert_eq!(
            reads.iter().map(Range::len).collect::<Vec<_>>(),
            [300 * 64 * 2, 64 * 4]
        );
        // The same file in memory gives the same values.
        let memory = Weights::parse(&outside.bytes).unwrap();
        assert_eq!(memory.to_f32("a").unwrap(), a);
    }

    #[test]
    fn a_cut_or_padded_file_or_a_header_longer_than_the_file_is_invalid() {
        let (bytes, ..) = file(4, 8);
        let mut long_header = bytes.clone();
        long_header[..8].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        let mut huge_header = bytes.clone();
        huge_header[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        let mut padded = bytes.clone();
        padded.push(0);
        for (case, bad) in [
            ("cut", bytes[..bytes.len() - 1].to_vec()),
            ("padded", padded),
            ("long header", long_header),
            ("huge header", huge_header),
            ("empty", Vec::new()),
            ("seven bytes", bytes[..7].to_vec()),
        ] {
            for outside in [false, true] {
                let source = Outside::new(bad.clone());
                let file = if outside {
                    FileBytes::Outside(&source)
                } else {
                    FileBytes::Memory(&bad)
                };
                let err = file
                    .header()
                    .and_then(|h| Weights::open(&h, file).map(|_| ()))
                    .unwrap_err();
                assert!(
                    matches!(&err, WispError::InvalidWeights(m) if m.contains("not a valid safetensors file")),
                    "{case}, outside {outside}: {err:?}"
                );
                let reads = source.reads.lock().unwrap();
                assert!(reads.iter().all(|r| r.len() < 200), "{case}: {reads:?}");
            }
        }
    }
}
