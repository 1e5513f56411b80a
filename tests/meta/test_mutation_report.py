"""The mutation report's classification (benchmarks/mutation_report.py): what it calls
harmless must be harmless, and anything else must stay visible as unclassified."""

import ast

from benchmarks import mutation_report as report

SOURCE = '''
def f(a, b, real):
    tokens = {"b": b} if real else {}
    checks.check_same_device(a=a, **tokens)
    if a.dim() != 1:
        raise ValueError("a must be 1-D")
    out = torch.arange(3, device=a.device)
    return out + 1
'''


def test_only_checks_and_what_feeds_them_count_as_validation():
    lines = report.check_lines(ast.parse(SOURCE), all_checks=False)["f"]
    assert {3, 4, 5, 6} <= lines  # the dict only the check reads, the check, the if-raise
    assert not {7, 8} & lines


def test_a_lost_device_is_cuda_only_and_a_changed_value_is_unclassified():
    line = "out = torch.arange(3, device=a.device)"
    assert report.classify("f", line, "out = torch.arange(3, device=None)", False)[0] == "cuda-only"
    assert report.classify("f", line, "out = torch.arange(3, )", False)[0] == "cuda-only"
    assert report.classify("f", line, "out = torch.arange(4, device=a.device)", False)[0] == "unclassified"
    assert report.classify("f", "return out + 1", "return out - 1", False)[0] == "unclassified"
    assert report.classify("f", "return out + 1", "return out - 1", True)[0] == "validation"


def test_the_change_is_the_differing_tokens():
    assert report.token_change("x.to(out.dtype)", "x.to(None)") == "out.dtype->None"
    assert report.token_change("a == b", "a != b") == "==->!="
