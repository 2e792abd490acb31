//! safetensors files, parsed by the `safetensors` crate (zero-copy), with F32, F16 and BF16 tensors
//! converted to f32.

use super::quant::{self, GgmlType};
use crate::{Result, WispError};
use safetensors::{Dtype, SafeTensors};

/// A parsed safetensors file borrowing from its bytes.
#[derive(Debug)]
pub struct SafetensorsFile<'a> {
    inner: SafeTensors<'a>,
    /// Sorted, so the order does not depend on the crate's hash map.
    names: Vec<String>,
}

impl<'a> SafetensorsFile<'a> {
    /// Parses the header; the crate checks that every tensor's bytes lie inside `bytes` and match its
    /// shape and dtype.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let inner = SafeTensors::deserialize(bytes)
            .map_err(|e| WispError::InvalidWeights(format!("not a valid safetensors file: {e}")))?;
        let mut names: Vec<String> = inner.names().into_iter().map(str::to_owned).collect();
        names.sort_unstable();
        Ok(SafetensorsFile { inner, names })
    }

    /// Tensor names, sorted.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    fn view(&self, name: &str) -> Result<safetensors::tensor::TensorView<'a>> {
        self.inner.tensor(name).map_err(|_| {
            WispError::InvalidWeights(format!("safetensors file has no tensor '{name}'"))
        })
    }

    /// Outermost first, as stored.
    pub fn shape(&self, name: &str) -> Result<Vec<usize>> {
        Ok(self.view(name)?.shape().to_vec())
    }

    pub fn dtype(&self, name: &str) -> Result<Dtype> {
        Ok(self.view(name)?.dtype())
    }

    /// The tensor's raw little-endian bytes, borrowed from the input.
    pub fn data(&self, name: &str) -> Result<&'a [u8]> {
        Ok(self.view(name)?.data())
    }

    /// Converts an F32, F16 or BF16 tensor to f32, row-major.
    pub fn to_f32(&self, name: &str) -> Result<Vec<f32>> {
        let view = self.view(name)?;
        // These dtypes have the same little-endian encoding as the ggml types of the same name.
        let ty = match view.dtype() {
            Dtype::F32 => GgmlType::F32,
            Dtype::F16 => GgmlType::F16,
            Dtype::BF16 => GgmlType::BF16,
            other => {
                return Err(WispError::UnsupportedWeights(format!(
                    "safetensors tensor '{name}' has dtype {other:?}; only F32, F16 and BF16 are supported"
                )))
            }
        };
        quant::dequantize(name, ty, view.data())
    }
}
