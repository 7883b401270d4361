"""Texts into vectors, offline: the all-MiniLM-L6-v2 sentence embedder and what it needs.

- ``embedders``: the :class:`~memagent.embedding.embedders.Embedder` protocol, the backends (an
  int8-quantized ONNX graph, the fp32 graph, numpy, lexical-only) and the chain that picks one;
- ``handle``: the per-process :class:`~memagent.embedding.handle.EmbedderHandle`, which loads the
  embedder on first use or borrows a lent one;
- ``shared``: one embedder lent by a long-lived process (``memagent mcp serve``) to the user's
  other memagent processes over a local socket;
- ``model_files``: the model's files located in their package and verified by pinned sha256
  hashes before anything is loaded;
- ``onnx_graph``: the BERT forward pass built as an ONNX graph from those weights, and its int8
  variant;
- ``mapped_graph``: a graph optimised once and saved with its weights in a file of their own,
  which a session maps instead of copying (half the session's memory);
- ``numpy_bert``: the same forward pass in numpy, the reference;
- ``vector_cache``: vectors kept by content hash in text files, so a text is embedded once.

The package knows nothing of memory cards or stores (``memagent.memory`` uses it, never the
other way round). Importing it, or any module of it, loads no numpy, onnx or tokenizer: the heavy
runtimes are imported inside the functions that need them.
"""
