"""The REPL's input history on disk, with secrets redacted and the file private (0600).

What the user typed stays as typed for the rest of the session (up-arrow recalls it); only the
copy written to ``$MEMAGENT_HOME/history`` has each secret replaced by a placeholder naming its
kind. An entry longer than :data:`MAX_SAVED_CHARS` (a pasted log) is recalled in this session but
not written to the file, which every later start reads.
"""

from __future__ import annotations

import os
from pathlib import Path

from prompt_toolkit.history import FileHistory

from memagent.decoding import scrub
from memagent.fsutil import PRIVATE_FILE_MODE, open_private_append, private_dir
from memagent.redact import redact

MAX_SAVED_CHARS = 100_000


class RedactingFileHistory(FileHistory):
    """prompt_toolkit's file history; what it writes is redacted, the file is created 0600."""

    def __init__(self, path: Path) -> None:
        private_dir(path.parent)
        if path.exists() and path.stat().st_mode & 0o077:
            os.chmod(path, PRIVATE_FILE_MODE)  # written by an older version
        super().__init__(str(path))

    def store_string(self, string: str) -> None:
        if len(string) > MAX_SAVED_CHARS:
            return
        open_private_append(Path(self.filename)).close()  # create it 0600 before the first write
        super().store_string(redact(scrub(string)))


__all__ = ["RedactingFileHistory"]
