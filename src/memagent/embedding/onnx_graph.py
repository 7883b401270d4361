"""The MiniLM-L6 BERT forward pass as an ONNX graph, built with the ``onnx`` helper API from the
verified safetensors weights, and its int8 variant made by onnxruntime's own quantizer (see
``embedding.embedders``, which caches both serialized graphs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memagent.embedding.embedders import EMBEDDING_DIM, HEAD_DIM, LAYER_NORM_EPS, NUM_HEADS, NUM_LAYERS, ONNX_OPSET

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    from onnx import NodeProto, TensorProto


class _GraphBuilder:
    """Accumulates ONNX nodes and initializers with generated unique names."""

    def __init__(self) -> None:
        self.nodes: list[NodeProto] = []
        self.initializers: list[TensorProto] = []
        self._counter = 0

    def _fresh(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}_{self._counter}"

    def const(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(array, name=name))
        return name

    def op(self, op_type: str, inputs: Sequence[str], **attrs: object) -> str:
        from onnx import helper

        out = self._fresh(op_type.lower())
        node = helper.make_node(op_type, list(inputs), [out])
        node.attribute.extend(
            helper.make_attribute(key, value) for key, value in sorted(attrs.items()) if value is not None
        )
        self.nodes.append(node)
        return out

    def dense(self, x: str, weights: dict, name: str) -> str:
        w = self.const(name + ".wT", weights[name + ".weight"].T.copy())
        b = self.const(name + ".b", weights[name + ".bias"])
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x: str, weights: dict, name: str) -> str:
        scale = self.const(name + ".w", weights[name + ".weight"])
        bias = self.const(name + ".b", weights[name + ".bias"])
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=LAYER_NORM_EPS)


# Longer than 60 lines: the graph is one linear list of nodes, easier to check against the model in one place.
def build_onnx_graph(weights: dict) -> bytes:  # one linear graph description, kept in one piece
    """Serialize MiniLM as an ONNX model: (input_ids, attention_mask) -> last hidden state."""
    import numpy as np
    from onnx import TensorProto, checker, helper

    g = _GraphBuilder()
    i64 = lambda *values: np.asarray(values, dtype=np.int64)  # noqa: E731
    f32 = lambda value: np.asarray(value, dtype=np.float32)  # noqa: E731

    word = g.op("Gather", [g.const("word_emb", weights["embeddings.word_embeddings.weight"]), "input_ids"])
    # Slice the position table to the batch's length (a 1-D `ends` taken from the input's shape).
    seq_len = g.op("Shape", ["input_ids"], start=1, end=2)
    pos = g.op(
        "Slice",
        [
            g.const("pos_emb", weights["embeddings.position_embeddings.weight"]),
            g.const("zero_1d", i64(0)),
            seq_len,
            g.const("axis0", i64(0)),
        ],
    )
    token_type = g.const("type_emb0", weights["embeddings.token_type_embeddings.weight"][0].copy())
    h = g.op("Add", [g.op("Add", [word, pos]), token_type])
    h = g.layer_norm(h, weights, "embeddings.LayerNorm")

    mask_f = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    inverted = g.op("Sub", [g.const("one_f", f32(1.0)), mask_f])
    mask_bias = g.op(
        "Unsqueeze", [g.op("Mul", [inverted, g.const("neg_big", f32(-1e9))]), g.const("axes_12", i64(1, 2))]
    )
    split_shape = g.const("split_shape", i64(0, 0, NUM_HEADS, HEAD_DIM))
    merge_shape = g.const("merge_shape", i64(0, 0, EMBEDDING_DIM))
    inv_sqrt = g.const("inv_sqrt_d", f32(1.0 / np.sqrt(HEAD_DIM)))
    inv_sqrt2 = g.const("inv_sqrt2", f32(1.0 / np.sqrt(2.0)))
    half = g.const("half", f32(0.5))
    one = g.const("one_gelu", f32(1.0))

    for layer in range(NUM_LAYERS):
        p = f"encoder.layer.{layer}."
        heads = lambda x: g.op("Reshape", [x, split_shape])  # noqa: E731
        q = g.op("Transpose", [heads(g.dense(h, weights, p + "attention.self.query"))], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [heads(g.dense(h, weights, p + "attention.self.key"))], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [heads(g.dense(h, weights, p + "attention.self.value"))], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), inv_sqrt]), mask_bias])
        probs = g.op("Softmax", [scores], axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, merge_shape])
        attn = g.dense(context, weights, p + "attention.output.dense")
        h = g.layer_norm(g.op("Add", [attn, h]), weights, p + "attention.output.LayerNorm")
        inner = g.dense(h, weights, p + "intermediate.dense")
        erf = g.op("Erf", [g.op("Mul", [inner, inv_sqrt2])])
        inner = g.op("Mul", [g.op("Mul", [inner, half]), g.op("Add", [erf, one])])
        out = g.dense(inner, weights, p + "output.dense")
        h = g.layer_norm(g.op("Add", [out, h]), weights, p + "output.LayerNorm")

    g.nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"]))
    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        g.nodes,
        "minilm_l6",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, dims),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, dims),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [EMBEDDING_DIM])],
        initializer=g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)], producer_name="memagent")
    model.ir_version = 8
    checker.check_model(model)
    return model.SerializeToString()


def quantize_graph(source: Path, target: Path) -> None:
    """Write ``source`` with int8 weights to ``target``: dynamic quantization (activations are
    quantized at run time), per output channel, of the MatMul and Gather (embedding table)
    weights, except the feed-forward output projections (their inputs, after GELU, have the
    outliers int8 handles worst: keeping them fp32 halves the distance to fp32 vectors). Per-tensor
    scales cost too much accuracy here (cosine to fp32 ~0.95 instead of ~0.995). The settings are
    versioned by ``embeddings.QUANT_VERSION``."""
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(source))
    for node in model.graph.node:
        node.name = node.name or f"node_{node.output[0]}"  # the quantizer selects nodes by name
    keep_fp32 = [
        node.name
        for node in model.graph.node
        if node.op_type == "MatMul"
        and any(i.endswith(".output.dense.wT") and ".attention." not in i for i in node.input)
    ]
    named = target.with_name(target.name + ".named")
    onnx.save(model, str(named))
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantizer logs advice about pre-processing to the root logger
    try:
        quantize_dynamic(
            str(named),
            str(target),
            per_channel=True,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul", "Gather"],
            nodes_to_exclude=keep_fp32,
        )
    finally:
        root.setLevel(level)
        named.unlink(missing_ok=True)


__all__ = ["build_onnx_graph", "quantize_graph"]
