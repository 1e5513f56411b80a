"""Score and classify mutmut's surviving mutants of the contract's reference.

Run it after ``OMP_NUM_THREADS=1 mutmut run`` (configured in pyproject.toml's
``[tool.mutmut]``): it reads mutmut's results under ``mutants/``, works out what each
surviving mutant changed, sorts it into a class with the reason it is harmless to the
contract, prints the raw and in-contract scores and rewrites ``mutation_survivors.txt`` next
to this file. A survivor no rule explains is listed as *unclassified* and the script exits 1:
kill it with a property or add a rule that says why it cannot matter. The committed file
makes any new or vanished survivor show as a diff.

    python benchmarks/mutation_report.py [--mutants DIR] [--out FILE]
"""

import argparse
import ast
import difflib
import json
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("simacc/contract/reference.py", "simacc/contract/sampling.py", "simacc/contract/validation.py")
# mutmut's exit codes for a mutant's pytest run. Anything but killed or survived (a timeout
# can be a libgomp deadlock, see the README) is listed as unclassified for a person to look at.
STATUS = {1: "killed", 3: "killed", 0: "survived", None: "not checked", 5: "no tests", 33: "no tests",
          34: "skipped", 36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout",
          -11: "segfault", -9: "segfault"}

VALIDATION = (
    "outside the contract: the reference's own argument checks and messages. properties/ only "
    "pass valid arguments, apart from an unknown method and a non-positive length, which they "
    "require to raise before any write; tests/contract/test_reference*.py test the checks"
)
CLASSES = {
    "equivalent": "the same result for every input",
    "cuda-only": "a device argument lost: the same tensor on a CPU; benchmarks/gpu_check.sh runs properties/ on CUDA",
    "outside": "behaviour the contract leaves open",
}
# Per class, (reason, function or None for any, pattern on the original line, pattern on the
# change: the differing tokens as "old->new", spaces dropped). A rule that claims a killed
# mutant is reported as an error, so a rule cannot quietly hide a real gap.
RULES = {
    "equivalent": [
        ("a cache miss on every call (_ROWS only saves work)",
         "_row_template", r"_ROWS\.get\(key\)", r"->None$"),
        ("the int32 template is cast or re-cast to int32 by the addcmul with int32 roots",
         "_row_template", r"int32", r"^(torch\.int32->None|,?dtype=torch\.int32,?->)$"),
        ("the value is cast to the destination's dtype where it is stored",
         None, r"\.to\((out_tokens|accept_index)\.dtype\)", r"^\w+\.dtype->None$"),
        ("argmax over dim 1 of a 2-D tensor is argmax over dim -1",
         None, r"argmax\(.*dim=-1", r"^-->\+$"),
    ],
    "outside": [
        ("accept_index is int32 in the contract; the branch differs only for other index dtypes",
         "_simulated_index", r"roots\.dtype == torch\.int32", r"(andFalse|orTrue)$|^==->!=$|^torch\.int32->None$"),
        ("torch's default device: the harness never changes it, and the contract draws on the CPU",
         "sample_simulated_acc_len", r'device="cpu"', r'^(,?device="cpu",?->|"cpu"->None)$'),
    ],
    "cuda-only": [
        ("made on the default device instead of the input's",
         None, r"device", r"^(\w+\.)?device->None$|^,?device=[\w.]+,?->$"),
    ],
}


def differing_span(a, b):
    """``(i1, i2, j1, j2)``: ``a[i1:i2]`` and ``b[j1:j2]`` cover every difference of two sequences."""
    ops = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not ops:
        return 0, 0, 0, 0
    return ops[0][1], ops[-1][2], ops[0][3], ops[-1][4]


def token_change(old, new):
    """The differing tokens of two code fragments, as ``"old->new"`` without spaces."""
    a, b = (re.findall(r"\w+|[=!<>]=|\*\*|\S", text) for text in (old, new))
    i1, i2, j1, j2 = differing_span(a, b)
    return "".join(a[i1:i2]) + "->" + "".join(b[j1:j2])


def changed_lines(orig_src, mutant_src):
    """``(first changed line offset in the function, old text, new text)``."""
    a, b = orig_src.splitlines(), mutant_src.splitlines()
    i1, i2, j1, j2 = differing_span(a, b)
    old = " / ".join(s.strip() for s in a[i1:i2]) or "(nothing)"
    new = " / ".join(s.strip() for s in b[j1:j2]) or "(nothing)"
    return i1, old, new


def check_lines(tree, all_checks):
    """Lines of statements that only validate: raises, check calls, and ifs/fors of them."""
    def is_check_call(node):
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            return False
        func = node.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name.lstrip("_").startswith("check")

    def only_checks(body):
        return all(isinstance(s, ast.Raise) or is_check_call(s) or only_checks_stmt(s) for s in body)

    def only_checks_stmt(s):
        return isinstance(s, (ast.If, ast.For)) and only_checks(s.body) and only_checks(s.orelse)

    lines = {}
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        if all_checks or fn.name.startswith("_check"):
            lines[fn.name] = set(range(fn.lineno, fn.end_lineno + 1))
            continue
        marked = set()
        for s in ast.walk(fn):
            if isinstance(s, ast.Raise) or is_check_call(s) or only_checks_stmt(s):
                marked.update(range(s.lineno, s.end_lineno + 1))
        for s in ast.walk(fn):  # a variable made only to be handed to checks
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                uses = [n.lineno for n in ast.walk(fn)
                        if isinstance(n, ast.Name) and n.id == s.targets[0].id and isinstance(n.ctx, ast.Load)]
                if uses and all(line in marked for line in uses):
                    marked.update(range(s.lineno, s.end_lineno + 1))
        lines[fn.name] = marked
    return lines


def classify(fn, old, new, in_check):
    if in_check:
        return "validation", ""
    change = token_change(old, new)
    for cls, rules in RULES.items():
        for reason, function, line, pattern in rules:
            if function in (None, fn) and re.search(line, old) and re.search(pattern, change):
                return cls, reason
    return "unclassified", "kill it with a property, or add a rule with the reason it cannot matter"


def mutants(mutants_dir):
    """Yield ``(file, function, mutant, status, class, reason, old, new)`` for every mutant of FILES."""
    for rel in FILES:
        meta_path = mutants_dir / (rel + ".meta")
        if not meta_path.is_file():
            raise SystemExit(f"error: {meta_path} not found: run `OMP_NUM_THREADS=1 mutmut run` first")
        codes = json.loads(meta_path.read_text())["exit_code_by_key"]
        original = (ROOT / rel).read_text()
        tree = ast.parse(original)
        defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        current = {name: ast.get_source_segment(original, node) for name, node in defs.items()}
        in_check = check_lines(tree, rel.endswith("validation.py"))
        mutated = (mutants_dir / rel).read_text()
        sources = {n.name: ast.get_source_segment(mutated, n) for n in ast.parse(mutated).body
                   if isinstance(n, ast.FunctionDef)}
        for key, code in sorted(codes.items(), key=lambda kv: natural(kv[0])):
            short = key.rsplit(".", 1)[1]  # x_<function>__mutmut_<n>
            fn = re.fullmatch(r"x_(.+)__mutmut_\d+", short).group(1)
            status = STATUS.get(code, f"suspicious (exit code {code})")
            orig = f"x_{fn}__mutmut_orig"
            if current.get(fn) != sources[orig].replace(orig, fn, 1):
                raise SystemExit(f"error: {rel}:{fn} changed since mutmut ran: run `OMP_NUM_THREADS=1 mutmut run` again")
            offset, old, new = changed_lines(sources[orig], sources[short].replace(short, orig, 1))
            cls, reason = classify(fn, old, new, defs[fn].lineno + offset in in_check[fn])
            yield Path(rel).name, fn, short, status, cls, reason, old, new


def natural(key):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", key)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", type=Path, default=ROOT / "mutants", help="mutmut's folder (default ./mutants)")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("mutation_survivors.txt"))
    args = parser.parse_args(argv)

    total = killed = in_contract = 0
    groups = {cls: [] for cls in ("unclassified", "equivalent", "cuda-only", "outside")}
    validation, contradictions = {}, []
    for file, fn, short, status, cls, reason, old, new in mutants(args.mutants):
        total += 1
        killed += status == "killed"
        if status == "killed" and cls in ("equivalent", "cuda-only", "outside"):
            contradictions.append(f"{short}: killed, yet a rule calls it {cls} ({reason})")
        if status not in ("killed", "survived"):
            cls, reason = "unclassified", status
        in_contract += cls == "unclassified"
        if status == "killed":
            continue
        if cls == "validation":
            validation[(file, fn)] = validation.get((file, fn), 0) + 1
        else:
            groups[cls].append((reason, f"  {file:13} {short:52} `{old}` -> `{new}`"))
    gaps = len(groups["unclassified"])
    lines = [
        "# Surviving mutants of simacc/contract/{reference,sampling,validation}.py with properties/ as",
        "# the suite. Written by benchmarks/mutation_report.py after `mutmut run` (README: Mutation",
        "# testing); a new line here is a new survivor.",
        f"# {total} mutants: {killed} killed, {total - killed} survived; raw score {100 * killed / total:.1f}%",
        f"# in the contract on a CPU (not validation, equivalent, CUDA-only or outside the contract): "
        f"{in_contract - gaps} of {in_contract} killed ({100 * (in_contract - gaps) / max(in_contract, 1):.1f}%)",
        "",
        textwrap.fill(f"## validation ({sum(validation.values())}): {VALIDATION}. Per function:", 96,
                      subsequent_indent="   "),
        *(f"  {file:13} {fn:40} {n}" for (file, fn), n in sorted(validation.items())),
    ]
    for cls, entries in groups.items():
        if entries or cls == "unclassified":
            lines += ["", textwrap.fill(f"## {cls} ({len(entries)}): {CLASSES.get(cls, 'in the contract, not killed')}",
                                        96, subsequent_indent="   ")]
        for reason in dict.fromkeys(reason for reason, _ in entries):
            lines += [f"- {reason}:", *(entry for r, entry in entries if r == reason)]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[3:5]))
    print(f"wrote {args.out}" + (f"; {gaps} unclassified survivors: see its first section" if gaps else ""))
    for line in contradictions:
        print(f"rule error: {line}")
    return 1 if gaps or contradictions else 0


if __name__ == "__main__":
    sys.exit(main())
