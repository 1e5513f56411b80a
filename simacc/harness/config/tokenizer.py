"""The served model's tokenizer (``--tokenizer PATH``): a Hugging Face ``tokenizer.json``, read
from the file alone with the optional ``tokenizers`` package; nothing is fetched from a hub.

It is read once where the settings are resolved, so that a missing file, a file that is no
tokenizer or a missing package is a usage error (one line) before anything runs, and again,
from the same path, where the property that judges the fixed id runs
(``simacc.properties.test_tokenizer``).
"""

import functools
from pathlib import Path

INSTALL = "pip install tokenizers"


class TokenizerError(ValueError):
    """A tokenizer file that cannot be used: one line."""


@functools.lru_cache(maxsize=4)
def load(path):
    """The ``tokenizers.Tokenizer`` in the file ``path``; :class:`TokenizerError` if there is
    no such file, it is no tokenizer, or the ``tokenizers`` package is missing."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise TokenizerError(f"tokenizer file {path}: reading it needs the tokenizers package, which is not "
                             f"installed ({INSTALL})") from None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TokenizerError(f"tokenizer file {path}: {getattr(e, 'strerror', None) or e}") from None
    try:
        return Tokenizer.from_str(text)
    except Exception as e:  # noqa: BLE001 - the Rust side raises a bare Exception for any bad file
        said = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise TokenizerError(f"tokenizer file {path}: not a tokenizer.json the tokenizers package can read "
                             f"({said})") from None
