"""The matrix products of one engine step: counted, recorded, timed alone; and the matmul peak.

    step_flops        the step's matrix-multiply FLOPs, by hand
    step_products     the products the engine issues (operation, shapes, strides), recorded
    products_floor    each recorded product timed alone on fresh operands, summed: the floor
    gemm_peak_gflops  the best rate of a large float32 matmul: the machine's practical peak
                      (on a GPU also with TF32 products allowed)

FLOP count (``step_flops``): only matrix products are counted (elementwise work is ignored),
2 FLOPs per multiply-add, as computed (the decay-matrix GEMM includes its zero upper triangle).
Forward, per step with R = B T rows: input gating 2 (2n)(d+1) R, scan 2 n T^2 B, output gating
2 (2m) n R, readout 2 d_out m R. Backward: two GEMMs of the same size per forward GEMM (gradient
of both operands), except the input gating, whose input x needs no gradient (one GEMM).

The floor (``products_floor``): the matrix products of one engine step (forward + backward),
each recorded as the engine issues it and then timed alone, fastest of many: the time of a step
in which everything else (elementwise work, data, optimiser) were free.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from gated_attention.engine import resolve_device, stack_students
from gated_attention.models.gated_rnn import GatedRNN
from lab.bench_timing import best_seconds

__all__ = ["step_flops", "step_products", "products_floor", "gemm_peak_gflops"]


def step_flops(d: int, n: int, m: int, T: int, B: int, d_out: int | None = None) -> dict:
    """Matrix-multiply FLOPs of one training step (forward + backward); see the module docstring."""
    d_out = d if d_out is None else d_out
    R = B * T
    fwd = {
        "input_gating": 2 * (2 * n) * (d + 1) * R,
        "scan": 2 * n * T * T * B,
        "output_gating": 2 * (2 * m) * n * R,
        "readout": 2 * d_out * m * R,
    }
    bwd = {k: (1 if k == "input_gating" else 2) * v for k, v in fwd.items()}
    forward, backward = sum(fwd.values()), sum(bwd.values())
    return {"forward": forward, "backward": backward, "total": forward + backward, "parts": fwd}


#: the matrix-product operations a step can issue (``torch.matmul`` of batched 4-d tensors
#: reaches the dispatcher as ``bmm``)
_PRODUCTS = {
    torch.ops.aten.mm.default,
    torch.ops.aten.addmm.default,
    torch.ops.aten.bmm.default,
    torch.ops.aten.baddbmm.default,
}


class _RecordProducts(TorchDispatchMode):
    """Records every matrix product run under it: (operation, [(shape, stride) or value])."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in _PRODUCTS:
            spec = [(tuple(a.shape), a.stride()) if torch.is_tensor(a) else a for a in args]
            self.calls.append((func, spec, dict(kwargs or {})))
        return func(*args, **(kwargs or {}))


def step_products(
    d: int, n: int, m: int, T: int, B: int, d_out: int | None = None, seed: int = 0, E: int = 1
) -> list[tuple]:
    """The matrix products of one engine step (``fast_path.fused_loss``, forward and backward)
    of a random student: a list of (operation, operand specs, keyword arguments), an operand
    spec being (shape, stride) as the engine passes it (transposed views included)."""
    from gated_attention.models.fast_path import fused_loss, inputs_neuron_major, pack_params

    d_out = d if d_out is None else d_out
    g = torch.Generator().manual_seed(seed)
    students = [GatedRNN(d, n, m, d_out, seed=seed + e) for e in range(E)]
    params, _ = stack_students(students)
    P = {k: v.float().clone().requires_grad_(True) for k, v in pack_params(params).items()}
    X = inputs_neuron_major(torch.randn(E, B, T, d, generator=g))
    Y = torch.randn(E, d_out, T * B, generator=g)
    with _RecordProducts() as rec:
        fused_loss(X, P, Y, T, None).sum().backward()
    return rec.calls


def _is_operand(spec) -> bool:
    """An operand spec of ``step_products``: (shape tuple, stride tuple)."""
    return isinstance(spec, tuple) and isinstance(spec[0], tuple)


def product_flops(spec: list) -> int:
    """2 x the multiply-adds of one recorded product (its last two operands are the factors:
    (batch, M, K) x (batch, K, N), or (M, K) x (K, N))."""
    a, b = [s[0] for s in spec if _is_operand(s)][-2:]
    batch = a[0] if len(a) == 3 else 1
    return 2 * batch * a[-2] * a[-1] * b[-1]


def products_floor(
    d: int,
    n: int,
    m: int,
    T: int,
    B: int,
    repeats: int = 20,
    device: str | None = None,
    E: int = 1,
) -> dict:
    """Milliseconds of the step's matrix products (``step_products``), each timed alone on
    random operands with the engine's shapes and strides (on ``device``, default the CPU): the
    fastest of ``repeats`` runs of each, summed.

    Returns {"ms": total, "gflop": total GFLOP, "products": [(shapes, GFLOP, ms), ...]}."""
    dev = torch.device("cpu") if device is None else resolve_device(device)
    g = torch.Generator().manual_seed(0)
    rows = []
    for func, spec, kwargs in step_products(d, n, m, T, B, E=E):
        args = [
            torch.empty_strided(*s, device=dev).copy_(torch.randn(s[0], generator=g))
            if _is_operand(s)
            else s
            for s in spec
        ]
        best = best_seconds(lambda f=func, a=args, kw=kwargs: f(*a, **kw), repeats, dev)
        shapes = " x ".join(str(list(s[0])) for s in spec if _is_operand(s))
        rows.append((shapes, product_flops(spec) / 1e9, 1e3 * best))
    return {
        "ms": sum(r[2] for r in rows),
        "gflop": sum(r[1] for r in rows),
        "products": rows,
    }


def gemm_peak_gflops(
    size: int = 2048, repeats: int = 5, device: str | None = None, tf32: bool = False
) -> float:
    """The best GFLOP/s of ``repeats`` timed (size x size) @ (size x size) float32 products on
    ``device`` (default: the CPU). ``tf32``: with a CUDA device's TF32 products allowed for
    them (off again after; the engine trains with them off, torch's default); a CPU has no such
    mode, and asking for it there is an error."""
    dev = torch.device("cpu") if device is None else resolve_device(device)
    if tf32 and dev.type != "cuda":
        raise ValueError(f"TF32 products are a CUDA device's mode; {dev} has none")
    g = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=g).to(dev)
    b = torch.randn(size, size, generator=g).to(dev)
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        return 2 * size**3 / best_seconds(lambda: a @ b, repeats, dev) / 1e9
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
