"""memagent: a local-first coding agent for the terminal with file-based memory."""

__version__ = "0.1.0"
