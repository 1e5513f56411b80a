"""Where an implementation's outputs differ from the reference's on one case, element by
element: what ``simacc repro`` prints under a failure."""

import torch

from simacc.harness.model.explain import MAX_SHOWN

MAX_LISTED = 20


def _tensor_diff(name, expected, produced):
    if isinstance(expected, tuple) and isinstance(produced, tuple) and len(expected) == len(produced):
        return [line for k, (e, p) in enumerate(zip(expected, produced)) for line in _tensor_diff(f"{name}[{k}]", e, p)]
    if not isinstance(expected, torch.Tensor) or not isinstance(produced, torch.Tensor):
        if type(expected) is type(produced) and not isinstance(expected, torch.Tensor) and expected == produced:
            return []
        return [f"{name}: expected {_short(expected)}, produced {_short(produced)}"]
    lines = []
    for attr in ("dtype", "device"):
        if getattr(expected, attr) != getattr(produced, attr):
            lines.append(f"{name}.{attr}: expected {getattr(expected, attr)}, produced {getattr(produced, attr)}")
    if expected.shape != produced.shape:
        return lines + [f"{name}.shape: expected {tuple(expected.shape)}, produced {tuple(produced.shape)}"]
    e, p = expected.cpu(), produced.cpu()
    wrong = (e != p) & ~(e.isnan() & p.isnan()) if e.is_floating_point() else e != p
    where = wrong.nonzero().tolist()
    if where:
        lines.append(f"{name}: {len(where)} of {e.numel()} elements differ")
        if e.numel() <= MAX_SHOWN:
            lines.append(f"  expected {e.tolist()}, produced {p.tolist()}")
        for index in where[:MAX_LISTED]:
            at = ", ".join(map(str, index))
            lines.append(f"  {name}[{at}]: expected {e[tuple(index)].item()}, produced {p[tuple(index)].item()}")
        if len(where) > MAX_LISTED:
            lines.append(f"  ... and {len(where) - MAX_LISTED} more")
    return lines


def _short(x):
    if isinstance(x, torch.Tensor):
        return f"Tensor[size={tuple(x.shape)}, dtype={str(x.dtype)[6:]}]"
    return repr(x)[:200]


def differences(expected, produced):
    """Lines saying where ``produced`` (an :class:`~simacc.harness.call.runner.Outcome`) differs from
    ``expected``: errors, the return value, every tensor argument after the call, and the
    generator state."""
    if expected.error is not None or produced.error is not None:
        said = lambda o: "returned" if o.error is None else f"raised {type(o.error).__name__}: {o.error}"[:500]  # noqa: E731
        if type(expected.error) is not type(produced.error):
            return [f"the reference {said(expected)}; the implementation {said(produced)}".splitlines()[0]]
    lines = _tensor_diff("returned", expected.returned, produced.returned)
    same = []
    for name, value in expected.args.items():
        found = _tensor_diff(name, value, produced.args[name])
        lines += found
        if not found and isinstance(value, torch.Tensor):
            same.append(name)
    if not torch.equal(expected.rng_after, produced.rng_after):
        lines.append("CPU generator state after the call differs (not the documented draws)")
    if not lines:
        lines.append("every output equals the reference's; the property checks more than values (see FAIL)")
    if same:
        lines.append(f"equal to the reference: {', '.join(same)}")
    return lines
