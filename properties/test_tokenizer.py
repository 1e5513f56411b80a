"""The fixed id prints in the served model's tokenizer (CONTRACT.md §5.2), given its
``tokenizer.json`` (``--tokenizer``).

Fixed mode writes one id into every slot, and a benchmark streams the text of those ids. On a
byte-level BPE tokenizer (GPT-2's family) the default, 100, is a single byte that is no whole
UTF-8 character: it decodes to U+FFFD, the streamed text stays empty, and a detokenizer that
waits for a complete character never moves on. So the id must decode, alone and after ordinary
text, to visible text: not empty, no U+FFFD, not a special token (a server may drop it from the
text or stop at it), not only whitespace or invisible characters. A failure names ids this
tokenizer decodes to one visible character, the nearest first, for
``SGLANG_SIMULATE_ACC_TOKEN_ID``.

This judges a setting against a model, not the implementation's code, so it calls nothing;
without a tokenizer it does not apply, and the reason says how to run it.
"""

import unicodedata
from pathlib import Path

import pytest

from simacc import strategies as sx
from simacc.harness.config import tokenizer as tokenizers
from simacc.harness.judging.assertions import check
from simacc.harness.judging.catalogue import claim

TEXT = "The answer is 42."  # the ordinary text the fixed id follows in a stream
SUGGESTED = 5  # ids a failure names
NO_TOKENIZER = ("no tokenizer given: --tokenizer PATH (the served model's tokenizer.json) checks that the fixed id "
                "decodes to visible text")
INVISIBLE = {"Cc": "a control character", "Cf": "an invisible format character", "Co": "a private-use character",
             "Cn": "an unassigned code point", "Cs": "a lone surrogate"}


FIXED_ID = tuple(c for c in sx.CONTRACTS if c.writes_a_fixed_id)  # vLLM's write none


def tokenizer_given(settings):
    """``{"tokenizer": [path or None]}``: the session's tokenizer file, if it names one."""
    path = settings.tokenizer if settings is not None else None
    return {"tokenizer": [pytest.param(path, id="tokenizer" if path else "no-tokenizer")]}


def unprintable(text):
    """Why ``text`` shows nothing a reader sees (None when it does)."""
    if not text:
        return "nothing"
    if "\ufffd" in text:
        return "U+FFFD, the replacement character: bytes that are no whole character"
    for ch in text:
        kind = unicodedata.category(ch)
        if kind in INVISIBLE and not ch.isspace():
            return f"{INVISIBLE[kind]}, U+{ord(ch):04X}"
    if text.isspace():
        return "whitespace only"
    return None


def problem(loaded, token_id):
    """Why ``token_id`` does not print in the tokenizer ``loaded`` (one phrase), or None."""
    if loaded.id_to_token(token_id) is None:
        return f"no token of this tokenizer ({loaded.get_vocab_size(with_added_tokens=True)} ids)"
    special = loaded.get_added_tokens_decoder().get(token_id)
    if special is not None and special.special:
        return f"the special token {special.content!r} (a server may leave it out of the text, or stop at it)"
    alone = loaded.decode([token_id])
    why = unprintable(alone)
    if why:
        return f"{alone!r} alone ({why})"
    before = loaded.encode(TEXT, add_special_tokens=False).ids
    shown, after = loaded.decode(before), loaded.decode([*before, token_id])
    if not after.startswith(shown):
        return f"{after!r} after {TEXT!r}, which changes the text before it"
    why = unprintable(after[len(shown):])
    return f"{after[len(shown):]!r} after {TEXT!r} ({why})" if why else None


def printable_ids(loaded, near, count=SUGGESTED):
    """Up to ``count`` ids that print and decode alone to one visible character, the nearest
    to ``near`` first: ``[(id, text)]``."""
    size = loaded.get_vocab_size(with_added_tokens=True)
    found = []
    for token_id in sorted(range(size), key=lambda i: (abs(i - near), i)):
        text = loaded.decode([token_id])
        if len(text.strip()) == 1 and problem(loaded, token_id) is None:
            found.append((token_id, text.strip()))
            if len(found) == count:
                break
    return found


def _needs_a_tokenizer(tokenizer):
    return None if tokenizer else NO_TOKENIZER


@claim(*FIXED_ID, params=tokenizer_given, applies_when=_needs_a_tokenizer)
def test_fixed_token_id_decodes_to_visible_text(simacc, tokenizer):
    """The fixed id decodes, alone and after ordinary text, to visible text in the served model's tokenizer (§5.2)."""
    loaded = tokenizers.load(tokenizer)
    fixed = simacc.impl.fixed_token_id
    why = problem(loaded, fixed)
    if why is None:
        return
    near = printable_ids(loaded, fixed)
    named = ", ".join(f"{i} ({text!r})" for i, text in near) or "none in this tokenizer"
    check(False, f"fixed token id {fixed} in {Path(tokenizer).name}", why,
          f"visible text; ids it decodes to one visible character, the nearest first: {named}", None)
