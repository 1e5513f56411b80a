"""The fixed id against the served model's tokenizer (``--tokenizer``), with tokenizers built
here in code, nothing downloaded: a byte-level BPE in GPT-2's order (ids 0-93 the printable
ASCII bytes, so 64 is ``a``; 94-187 bytes above 127, so 100 is a lone byte) with
``<|endoftext|>`` at 256, and a word-level one where 100 is a word. The property calls no
implementation, so it runs in this process; one check shows the option reaching the session.
"""

import sys
import types

import pytest

from simacc import strategies as sx
from simacc.commands import cli
from simacc.harness.call import impl
from simacc.harness.config import settings as opts
from simacc.harness.config import tokenizer
from simacc.harness.config.status import Status
from simacc.harness.sessions import inprocess
from simacc.properties import test_tokenizer as tok

tokenizers = pytest.importorskip("tokenizers", reason="needs the tokenizers package: pip install -e '.[tokenizers]'")
PROPERTY = tok.test_fixed_token_id_decodes_to_visible_text.simacc_property
WORDS = ["[UNK]", "[SEP]", *(f"word{i}" for i in range(2, 100)), "apple", "the", "answer", "is", "42", "."]


def byte_level_bpe():
    """GPT-2's byte order: the bytes that print as themselves first, then the rest, each
    spelled as the ByteLevel pre-tokenizer spells it."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    others = [b for b in range(256) if b not in printable]
    spelled = {b: chr(b) for b in printable} | {b: chr(256 + i) for i, b in enumerate(others)}
    assert set(spelled.values()) == set(tokenizers.pre_tokenizers.ByteLevel.alphabet())
    built = tokenizers.Tokenizer(tokenizers.models.BPE(vocab={spelled[b]: i for i, b in enumerate(printable + others)},
                                                       merges=[]))
    built.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    built.decoder = tokenizers.decoders.ByteLevel()
    built.add_special_tokens(["<|endoftext|>"])
    return built


def word_level():
    built = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab={w: i for i, w in enumerate(WORDS)},
                                                             unk_token="[UNK]"))
    built.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    built.add_special_tokens(["[UNK]", "[SEP]"])
    return built


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tokenizers")
    paths = {"bpe": folder / "bpe" / "tokenizer.json", "words": folder / "words" / "tokenizer.json"}
    for kind, built in (("bpe", byte_level_bpe()), ("words", word_level())):
        paths[kind].parent.mkdir()
        built.save(str(paths[kind]))
    return paths


def judged(path, fixed_token_id=None):
    """The property's result for the eagle reference writing ``fixed_token_id``."""
    reference = impl.reference(sx.EAGLE, fixed_token_id=fixed_token_id)
    (test,) = PROPERTY.tests(["cpu"], ["inference"], opts.Settings(tokenizer=path))
    return inprocess.run_one(PROPERTY, test, reference, inprocess.Options("cpu", timeout=30))


def test_on_a_byte_level_bpe_the_default_id_is_a_lone_byte_and_the_failure_names_printable_ids_nearest_first(files):
    result = judged(files["bpe"])
    assert result.status == Status.FAIL
    assert result.message == (
        "AssertionError: fixed token id 100 in tokenizer.json='\ufffd' alone (U+FFFD, the replacement character: bytes "
        "that are no whole character), but should be visible text; ids it decodes to one visible character, the "
        "nearest first: 93 ('~'), 92 ('}'), 91 ('|'), 90 ('{'), 89 ('z')")


@pytest.mark.parametrize("kind, fixed", [("bpe", 64), ("bpe", 32), ("words", 100)])  # FlashInfer's a, sglang-jax's A
def test_an_id_that_prints_passes(files, kind, fixed):
    assert judged(files[kind], fixed).status == Status.PASS


@pytest.mark.parametrize("kind, fixed, said", [
    ("bpe", 256, "=the special token '<|endoftext|>' (a server may leave it out of the text, or stop at it)"),
    ("bpe", 220, "=' ' alone (whitespace only)"),  # byte 32
    ("bpe", 188, "='\\x00' alone (a control character, U+0000)"),  # byte 0
    ("words", 1, "=the special token '[SEP]'"),
    ("words", 200, "=no token of this tokenizer (106 ids)"),
])
def test_an_id_that_prints_nothing_fails_with_the_reason(files, kind, fixed, said):
    result = judged(files[kind], fixed)
    assert result.status == Status.FAIL and said in result.message, result.message


class AfterText:
    """A tokenizer whose id 7 prints alone but, after the ordinary text, adds only a zero-width
    space (or, with ``rewrites``, changes the text before it)."""

    def __init__(self, rewrites=False):
        self.rewrites = rewrites

    def id_to_token(self, i):
        return "x"

    def get_added_tokens_decoder(self):
        return {}

    def get_vocab_size(self, with_added_tokens=True):
        return 8

    def encode(self, text, add_special_tokens=True):
        return types.SimpleNamespace(ids=[1, 2])

    def decode(self, ids):
        if ids == [7]:
            return "x"
        if ids[-1:] == [7]:
            return "The answr is 42.x" if self.rewrites else "The answer is 42.\u200b"
        return "The answer is 42."


@pytest.mark.parametrize("rewrites, said", [  # the repr of an invisible character escapes it
    (False, "'\\u200b' after 'The answer is 42.' (an invisible format character, U+200B)"),
    (True, "'The answr is 42.x' after 'The answer is 42.', which changes the text before it"),
])
def test_what_the_id_adds_after_ordinary_text_is_judged_too(rewrites, said):
    assert tok.problem(AfterText(rewrites), 7) == said


def test_without_a_tokenizer_it_does_not_apply_and_says_how_to_run_it():
    (result,) = inprocess.run(impl.reference(sx.EAGLE), "cpu", [PROPERTY])
    assert (result.status, result.message) == (Status.NOT_APPLICABLE, tok.NO_TOKENIZER)
    assert "--tokenizer PATH" in result.message


@pytest.mark.parametrize("text, said", [
    (None, "no such file"),
    ("{not json", "not a tokenizer.json the tokenizers package can read"),
    ('{"version": "1.0"}', "not a tokenizer.json the tokenizers package can read"),
])
def test_a_missing_or_malformed_tokenizer_file_is_a_one_line_usage_error(tmp_path, capsys, text, said):
    path = tmp_path / "tokenizer.json"
    if text is not None:
        path.write_text(text)
    assert cli.main(["check", "simacc:generate_simulated_accept_index", "--tokenizer", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"simacc check: error: tokenizer file {path}: ") and said in err.lower() and err.count("\n") == 1
    with pytest.raises(opts.SettingsError, match="tokenizer file"):  # the plugin's variable, resolved the same way
        opts.resolve({}, environ={"SIMACC_TOKENIZER": str(path)})


def test_without_the_tokenizers_package_a_tokenizer_is_a_usage_error_that_says_what_to_install(files, monkeypatch):
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    tokenizer.load.cache_clear()
    try:
        with pytest.raises(opts.SettingsError) as raised:
            opts.resolve({"tokenizer": files["bpe"]})
    finally:
        tokenizer.load.cache_clear()
    assert str(raised.value) == (f"tokenizer file {files['bpe']}: reading it needs the tokenizers package, which is "
                                 "not installed (pip install tokenizers)")


def test_a_check_with_a_tokenizer_shows_it_in_the_header_and_fails_a_lone_byte(files, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = cli.main(["check", "simacc:generate_simulated_accept_index", "--tokenizer", str(files["bpe"]), "--property",
                     PROPERTY.id, "--device", "cpu", "-n", "0"])
    out = capsys.readouterr().out
    assert code == 1 and f"  tokenizer: {files['bpe']}\n" in out
    assert f"FAIL {PROPERTY.id}\n  fixed token id 100 in tokenizer.json='\ufffd' alone" in out, out
    assert f"  replay: simacc check simacc:generate_simulated_accept_index --property '{PROPERTY.id}[tokenizer-cpu]' -n 0 " \
           f"--tokenizer {files['bpe']}\n" in out
