"""What the DSpark property modules share (CONTRACT.md §19-§21): each row of an accept case as
the contract sees it, and the roles of the accept's outputs for failure messages.

The oracles read a case the plain way, a row at a time in Python, never through the reference.
"""

from dataclasses import dataclass

ACCEPT_INPUTS = ("candidates", "target_predict", "seq_lens", "verify_lens", "gate", "simulated_correct_len",
                 "bonus_in")
ACCEPT_OUTPUTS = ("correct_len_out", "bonus_out", "cap_trim_lens_out", "commit_lens_out", "new_seq_lens_out",
                  "out_tokens_out", "gated_commit_lens_out")


@dataclass(frozen=True)
class Row:
    """Row ``index`` of an accept case: its drafts, its real greedy count ``real`` (the leading
    drafts that match the target; None without ``target_predict``), the count it commits
    (``correct``: the simulated one, else ``real``), the bonus the contract requires and where
    it comes from, and the tokens of ``out_tokens_out`` (§21.2)."""

    index: int
    drafts: tuple
    real: int | None
    correct: int
    bonus: int
    source: str

    @property
    def tokens(self):
        """``d_1 .. d_gamma, 0`` with the bonus at column ``correct``."""
        tokens = [*self.drafts, 0]
        tokens[self.correct] = self.bonus
        return tokens

    def token_role(self, j):
        if j < self.correct:
            return f"row {self.index}, j={j}: draft {j + 1}, committed (j < the correct count {self.correct})"
        if j == self.correct:
            return f"row {self.index}, j={j}: the bonus, {self.source}"
        if j < len(self.drafts):
            return f"row {self.index}, j={j}: draft {j + 1}, past the bonus, kept (not committed)"
        return f"row {self.index}, j={j}: the last column past the bonus, 0"


def rows(case):
    """The :class:`Row` of each of the case's ``bs`` rows."""
    width = case.max_len
    candidates = case.candidates.values.tolist()
    target = None if case.target_predict is None else case.target_predict.values.reshape(-1, width).tolist()
    found = []
    for i, row in enumerate(candidates):
        drafts = tuple(row[1:])
        real = None
        if target is not None:
            real = 0
            while real < len(drafts) and drafts[real] == target[i][real]:
                real += 1
        correct = case.simulated if case.simulated is not None else real
        if case.bonus_source == "bonus_parts":
            values, indices = case.part_val.values[i].tolist(), case.part_idx.values[i].tolist()
            top = max(values)
            bonus = min(index for value, index in zip(values, indices) if value == top)
            source = f"the index of the largest part_val[{i}] ({top}), ties to the lowest (bonus_parts)"
        elif case.bonus_source == "bonus_in":
            bonus, source = int(case.bonus_in.values[i]), f"bonus_in[{i}], supplied"
        else:
            bonus = target[i][correct]
            at = "the simulated position" if case.simulated is not None else "the first mismatch"
            source = f"the target's token at {at}, target_predict[{i} * T + {correct}] (§21.3)"
            if real != correct:
                source += f", not the one where the real greedy accept stops, target_predict[{i} * T + {real}]"
        found.append(Row(i, drafts, real, correct, bonus, source))
    return found
