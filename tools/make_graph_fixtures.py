"""Writes the small ONNX graphs the foundation tests run, with reference outputs from onnxruntime.

Run once (not in CI); the outputs are committed under tests/fixtures/:
    pip install numpy onnx onnxruntime && python3 tools/make_graph_fixtures.py
Each graph gets NAME.onnx and NAME.json ({"inputs": {name: {dims, data}}, "outputs": {...}}).
"""
import json
import pathlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures"
rng = np.random.default_rng(20261202)


def save(name, graph, inputs):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
    # wonnx does no shape inference: every intermediate value needs its shape in value_info.
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model)
    (OUT / f"{name}.onnx").write_bytes(model.SerializeToString())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    results = sess.run(names, inputs)
    doc = {
        "reference": f"onnxruntime {ort.__version__} (CPUExecutionProvider)",
        "inputs": {k: {"dims": list(v.shape), "data": v.ravel().tolist()} for k, v in inputs.items()},
        "outputs": {k: {"dims": list(v.shape), "data": v.ravel().tolist()} for k, v in zip(names, results)},
    }
    (OUT / f"{name}.json").write_text(json.dumps(doc) + "\n")


def f32(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


# A plain MatMul: the smallest graph that proves the GPU path computes.
a = rng.standard_normal((8, 16)).astype(np.float32)
b = rng.standard_normal((16, 12)).astype(np.float32)
save(
    "matmul",
    helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        "matmul",
        [f32("a", [8, 16]), f32("b", [16, 12])],
        [f32("y", [8, 12])],
    ),
    {"a": a, "b": b},
)

# MatMul then Softmax: Chromium's WGSL compiler rejects wonnx 0.5.1's Softmax shader (it takes log(0)),
# which stock wonnx turns into an all-zero output. The tests expect our guard to reject the run instead.
a = rng.standard_normal((2, 4)).astype(np.float32)
b = rng.standard_normal((4, 6)).astype(np.float32)
save(
    "matmul_softmax",
    helper.make_graph(
        [
            helper.make_node("MatMul", ["a", "b"], ["m"]),
            helper.make_node("Softmax", ["m"], ["y"], axis=-1),
        ],
        "matmul_softmax",
        [f32("a", [2, 4]), f32("b", [4, 6])],
        [f32("y", [2, 6])],
    ),
    {"a": a, "b": b},
)
print("wrote", sorted(p.name for p in OUT.iterdir()))
