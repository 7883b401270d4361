"""Long-term memory: cards in a local Chroma store, hybrid retrieval, citable injection.

Entry point: :class:`memagent.memory.service.MemoryService` (imported from its module, so that
importing this package stays free of chromadb, numpy and onnxruntime).
"""
