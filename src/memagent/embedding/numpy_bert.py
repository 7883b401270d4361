"""The reference forward pass of MiniLM (BERT) in numpy: the embedder of last resort before
lexical-only, and the yardstick the ONNX graphs are checked against (see ``embedding.embedders``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memagent.embedding.embedders import (
    EMBEDDING_DIM,
    HEAD_DIM,
    LAYER_NORM_EPS,
    MAX_TOKENS,
    MODEL_ID,
    NUM_HEADS,
    NUM_LAYERS,
    ModelFiles,
    TransformerEmbedder,
)

if TYPE_CHECKING:
    import numpy as np


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    import numpy as np

    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LAYER_NORM_EPS) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, as BERT uses."""
    import numpy as np

    return 0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))


def _erf(x: np.ndarray) -> np.ndarray:
    """erf for arrays (numpy has none): Numerical Recipes' erfc fit, fractional error < 1.2e-7,
    which keeps the numpy backend within 1e-6 of onnxruntime's Erf."""
    import numpy as np

    sign = np.sign(x)
    a = np.abs(x).astype(np.float64)
    t = 1.0 / (1.0 + 0.5 * a)
    coefficients = (
        -1.26551223,
        1.00002368,
        0.37409196,
        0.09678418,
        -0.18628806,
        0.27886807,
        -1.13520398,
        1.48851587,
        -0.82215223,
        0.17087277,
    )
    poly = np.zeros_like(a)
    for c in reversed(coefficients[1:]):
        poly = (poly + c) * t
    erfc = t * np.exp(-a * a + coefficients[0] + poly)
    return (sign * (1.0 - erfc)).astype(np.float32)


class NumpyEmbedder(TransformerEmbedder):
    """The reference forward pass of BERT in numpy."""

    name = f"{MODEL_ID}/numpy"

    def __init__(self, files: ModelFiles, max_tokens: int = MAX_TOKENS) -> None:
        from safetensors.numpy import load_file

        super().__init__(files, max_tokens)
        self._w = load_file(str(files.weights))

    def _hidden_states(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        import numpy as np

        w = self._w
        batch, seq = ids.shape
        h = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:seq][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        h = _layer_norm(h, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((1.0 - mask.astype(np.float32)) * np.float32(-1e9))[:, None, None, :]
        for layer in range(NUM_LAYERS):
            h = self._layer(h, bias, f"encoder.layer.{layer}.")
        return h

    def _layer(self, h: np.ndarray, bias: np.ndarray, prefix: str) -> np.ndarray:
        import numpy as np

        w = self._w
        batch, seq, _ = h.shape

        def dense(x, name):
            return x @ w[prefix + name + ".weight"].T + w[prefix + name + ".bias"]

        def heads(x):
            return x.reshape(batch, seq, NUM_HEADS, HEAD_DIM).transpose(0, 2, 1, 3)

        q = heads(dense(h, "attention.self.query"))
        k = heads(dense(h, "attention.self.key"))
        v = heads(dense(h, "attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(HEAD_DIM)) + bias
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, EMBEDDING_DIM)
        h = _layer_norm(
            dense(context, "attention.output.dense") + h,
            w[prefix + "attention.output.LayerNorm.weight"],
            w[prefix + "attention.output.LayerNorm.bias"],
        )
        inner = _gelu(dense(h, "intermediate.dense"))
        return _layer_norm(
            dense(inner, "output.dense") + h,
            w[prefix + "output.LayerNorm.weight"],
            w[prefix + "output.LayerNorm.bias"],
        ).astype(np.float32)


__all__ = ["NumpyEmbedder"]
