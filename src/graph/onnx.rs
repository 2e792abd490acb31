//! A small ONNX graph writer for wonnx: it tracks every value's static shape (wonnx does no shape
//! inference, so each intermediate value needs a `value_info`) and refuses, with a named error, the
//! shapes that wonnx 0.5.1 computes wrongly.

use protobuf::RepeatedField;
use wonnx::onnx::{ModelProto, NodeProto, TensorProto, TensorProto_DataType, ValueInfoProto};
use wonnx::utils::{
    attribute, initializer, initializer_int64, model_with_opset, node, tensor, tensor_of_type,
};

use crate::error::{Result, WispError};

/// A value in the graph: its name and static shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub name: String,
    pub dims: Vec<i64>,
}

#[derive(Default)]
pub struct GraphWriter {
    nodes: Vec<NodeProto>,
    initializers: Vec<TensorProto>,
    infos: Vec<ValueInfoProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    count: usize,
}

fn invalid(what: String) -> WispError {
    WispError::InvalidModel(what)
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn numel(dims: &[i64]) -> i64 {
    dims.iter().product()
}

/// numpy-style broadcast of two shapes.
fn broadcast(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let rank = a.len().max(b.len());
    let at = |d: &[i64], i: usize| {
        if i + d.len() < rank {
            1
        } else {
            d[i + d.len() - rank]
        }
    };
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

impl GraphWriter {
    fn fresh(&mut self, hint: &str) -> String {
        self.count += 1;
        format!("{hint}_{}", self.count)
    }

    pub fn input(&mut self, name: &str, dims: &[i64], ty: TensorProto_DataType) -> Value {
        self.inputs.push(tensor_of_type(name, dims, ty));
        Value {
            name: name.into(),
            dims: dims.to_vec(),
        }
    }

    pub fn weight(&mut self, hint: &str, dims: &[i64], data: Vec<f32>) -> Result<Value> {
        if numel(dims) as usize != data.len() {
            return Err(invalid(format!(
                "weight '{hint}' has {} values, its shape {dims:?} needs {}",
                data.len(),
                numel(dims)
            )));
        }
        let name = self.fresh(hint);
        self.initializers
            .push(initializer(&name, data, dims.to_vec()));
        Ok(Value {
            name,
            dims: dims.to_vec(),
        })
    }

    /// An int64 constant. wonnx reads int64 `raw_data` as zeros; `initializer_int64` writes `int64_data`.
    pub fn ints(&mut self, hint: &str, data: Vec<i64>) -> Value {
        let name = self.fresh(hint);
        let dims = vec![data.len() as i64];
        self.initializers
            .push(initializer_int64(&name, data, dims.clone()));
        Value { name, dims }
    }

    pub fn scalar(&mut self, hint: &str, v: f32) -> Result<Value> {
        self.weight(hint, &[1], vec![v])
    }

    fn emit(
        &mut self,
        op: &str,
        inputs: &[&Value],
        attrs: Vec<wonnx::onnx::AttributeProto>,
        dims: Vec<i64>,
        out_name: Option<&str>,
    ) -> Value {
        let name = match out_name {
            Some(n) => n.to_string(),
            None => self.fresh(&op.to_ascii_lowercase()),
        };
        let names: Vec<&str> = inputs.iter().map(|v| v.name.as_str()).collect();
        let node_name = self.fresh(op);
        self.nodes
            .push(node(names, vec![&name], &node_name, op, attrs));
        if out_name.is_none() {
            self.infos.push(tensor(&name, &dims));
        }
        Value { name, dims }
    }

    /// Declares `v` a graph output. Outputs are named by the op that makes them (`out` arguments): an
    /// Identity node would be optimized away by wonnx.
    pub fn output(&mut self, v: &Value) {
        self.outputs.push(tensor(&v.name, &v.dims));
    }

    fn elementwise(&mut self, op: &str, a: &Value, b: &Value, out: Option<&str>) -> Result<Value> {
        let dims = broadcast(&a.dims, &b.dims).ok_or_else(|| {
            invalid(format!(
                "{op}: shapes {:?} and {:?} do not broadcast",
                a.dims, b.dims
            ))
        })?;
        Ok(self.emit(op, &[a, b], vec![], dims, out))
    }

    pub fn add(&mut self, a: &Value, b: &Value) -> Result<Value> {
        self.elementwise("Add", a, b, None)
    }
    pub fn add_named(&mut self, a: &Value, b: &Value, out: &str) -> Result<Value> {
        self.elementwise("Add", a, b, Some(out))
    }
    pub fn sub(&mut self, a: &Value, b: &Value) -> Result<Value> {
        self.elementwise("Sub", a, b, None)
    }
    pub fn mul(&mut self, a: &Value, b: &Value) -> Result<Value> {
        self.elementwise("Mul", a, b, None)
    }
    pub fn div(&mut self, a: &Value, b: &Value) -> Result<Value> {
        self.elementwise("Div", a, b, None)
    }

    pub fn unary(&mut self, op: &str, a: &Value) -> Value {
        self.emit(op, &[a], vec![], a.dims.clone(), None)
    }

    /// A reduction over the last axis of a rank-2 value, keeping the axis: wonnx 0.5.1 indexes
    /// reductions over rank-3 inputs wrongly, so only rank 2 is offered.
    pub fn reduce_last(&mut self, op: &str, a: &Value) -> Result<Value> {
        if a.dims.len() != 2 {
            return Err(invalid(format!(
                "{op} is only reliable on rank-2 values, got {:?}",
                a.dims
            )));
        }
        let dims = vec![a.dims[0], 1];
        Ok(self.emit(
            op,
            &[a],
            vec![attribute("axes", vec![1i64]), attribute("keepdims", 1i64)],
            dims,
            None,
        ))
    }

    /// 2-D `[M,K] x [K,N]` or stacked `[B,M,K] x [B,K,N]`, within wonnx's limits: its kernels need
    /// gcd(M,K,N) >= 2 unless M == 1, and its stacked kernel computes only column 0 when M == 1.
    pub fn matmul(&mut self, a: &Value, b: &Value, out: Option<&str>) -> Result<Value> {
        let (ra, rb) = (a.dims.len(), b.dims.len());
        let bad = || {
            invalid(format!(
                "MatMul of {:?} and {:?} is not supported by wonnx",
                a.dims, b.dims
            ))
        };
        if ra != rb || !(2..=3).contains(&ra) || a.dims[..ra - 2] != b.dims[..rb - 2] {
            return Err(bad());
        }
        let (m, k, n) = (a.dims[ra - 2], a.dims[ra - 1], b.dims[rb - 1]);
        if b.dims[rb - 2] != k {
            return Err(bad());
        }
        let stacked = ra == 3;
        if (stacked && m == 1) || (m != 1 && gcd(m, gcd(k, n)) < 2) {
            return Err(bad());
        }
        let mut dims = a.dims[..ra - 2].to_vec();
        dims.extend([m, n]);
        Ok(self.emit("MatMul", &[a, b], vec![], dims, out))
    }

    pub fn reshape(&mut self, a: &Value, dims: &[i64]) -> Result<Value> {
        if numel(dims) != numel(&a.dims) {
            return Err(invalid(format!("cannot reshape {:?} to {dims:?}", a.dims)));
        }
        let shape = self.ints("shape", dims.to_vec());
        Ok(self.emit("Reshape", &[a, &shape], vec![], dims.to_vec(), None))
    }

    pub fn transpose(&mut self, a: &Value, perm: &[usize]) -> Value {
        let dims = perm.iter().map(|&p| a.dims[p]).collect();
        let perm: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
        self.emit("Transpose", &[a], vec![attribute("perm", perm)], dims, None)
    }

    /// Gather along axis 0 (the only axis wonnx supports).
    pub fn gather0(&mut self, data: &Value, indices: &Value) -> Value {
        let mut dims = indices.dims.clone();
        dims.extend_from_slice(&data.dims[1..]);
        self.emit(
            "Gather",
            &[data, indices],
            vec![attribute("axis", 0i64)],
            dims,
            None,
        )
    }

    /// Concatenation along axis 0 (wonnx ignores the axis attribute and copies flat, which is right
    /// only for axis 0).
    pub fn concat0(&mut self, a: &Value, b: &Value) -> Result<Value> {
        if a.dims[1..] != b.dims[1..] {
            return Err(invalid(format!(
                "cannot concatenate {:?} and {:?}",
                a.dims, b.dims
            )));
        }
        let mut dims = a.dims.clone();
        dims[0] += b.dims[0];
        Ok(self.emit("Concat", &[a, b], vec![attribute("axis", 0i64)], dims, None))
    }

    pub fn finish(self) -> ModelProto {
        let mut graph = wonnx::onnx::GraphProto::new();
        graph.set_name("wisp-decoder".into());
        graph.set_node(RepeatedField::from_vec(self.nodes));
        graph.set_input(RepeatedField::from_vec(self.inputs));
        graph.set_output(RepeatedField::from_vec(self.outputs));
        graph.set_value_info(RepeatedField::from_vec(self.infos));
        graph.set_initializer(RepeatedField::from_vec(self.initializers));
        model_with_opset(graph, 13)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast(&[4, 8], &[8]), Some(vec![4, 8]));
        assert_eq!(broadcast(&[4, 1], &[1]), Some(vec![4, 1]));
        assert_eq!(broadcast(&[4, 8], &[4, 1]), Some(vec![4, 8]));
        assert_eq!(broadcast(&[4, 8], &[3]), None);
    }

    #[test]
    fn matmul_shapes_wonnx_gets_wrong_are_refused() {
        let mut g = GraphWriter::default();
        let a = g.input("a", &[3, 8], TensorProto_DataType::FLOAT);
        let b = g.input("b", &[8, 6], TensorProto_DataType::FLOAT);
        assert_eq!(
            g.matmul(&a, &b, None).err().map(|e| e.code()),
            Some("INVALID_MODEL")
        );
        let s1 = g.input("s1", &[4, 1, 8], TensorProto_DataType::FLOAT);
        let s2 = g.input("s2", &[4, 8, 6], TensorProto_DataType::FLOAT);
        assert!(g.matmul(&s1, &s2, None).is_err());
        let one = g.input("one", &[1, 8], TensorProto_DataType::FLOAT);
        assert_eq!(
            g.matmul(&one, &b, None).map(|v| v.dims).ok(),
            Some(vec![1, 6])
        );
    }
}
