"""Would a run's numbers survive TF32 products on a GPU? An emulation on the CPU.

The plan's floor (``gpu_plan``) is the runs' FLOPs at the recorded float32 matmul peak, with
TF32 off (torch's default, and this engine's). A GPU's TF32 mode multiplies on its tensor cores
with each product's inputs cut to TF32's 10 mantissa bits (float32 keeps 23), accumulating in
float32: several times the float32 peak, at other numbers. Whether a campaign may use it is a
question of those numbers, and that can be asked here: train a run with every matrix product's
inputs cut the same way, and set its held-out losses beside the float32 run's, against the
spread between the run's seeds.

    tf32(x)              x (float32) with its 13 lowest mantissa bits cleared (round toward
                         zero, what tensor cores do with the float32 bits they are handed; a
                         library that first rounds to nearest errs by half as much, unbiased),
                         non-finite values unchanged
    TF32Products()       a dispatch mode in which every matrix product on float32 tensors
                         (``PRODUCTS``: mm, bmm, addmm, baddbmm, ...; the backward's too) gets
                         its factors through ``tf32`` first; sums added to a product stay float32
    compare(name)        the experiment's quick run trained twice in this process, in float32 and
                         in ``TF32Products``, and each member's held-out loss in both
    order_flips(a, b)    how many pairs of rows (sizes, families) the two runs order otherwise
    seed_flips(loss)     the same between the float32 run's seeds, two at a time: the yardstick

Only the eager modes ("fast", "reference") dispatch their products through the mode; a
compiled step calls its products from generated code, which the mode does not see.

    python -m lab.tf32_check architectures-teacher how-many-neurons-A
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = [
    "tf32",
    "TF32Products",
    "PRODUCTS",
    "order_flips",
    "seed_flips",
    "compare",
    "format_compare",
    "main",
]

#: mantissa bits a float32 has beyond TF32's 10
_DROPPED_BITS = 13
_aten = torch.ops.aten
#: the products whose factors are cut, and the positions of those factors in their arguments
PRODUCTS = {
    _aten.mm.default: (0, 1),
    _aten.bmm.default: (0, 1),
    _aten.mv.default: (0, 1),
    _aten.dot.default: (0, 1),
    _aten.addmm.default: (1, 2),
    _aten.baddbmm.default: (1, 2),
    _aten.addmv.default: (1, 2),
    _aten.addbmm.default: (1, 2),
}


def tf32(x: torch.Tensor) -> torch.Tensor:
    """``x`` (float32, any shape) as TF32 holds it: the 13 lowest mantissa bits cleared (round
    toward zero); inf and NaN unchanged. Other dtypes are refused."""
    if x.dtype != torch.float32:
        raise TypeError(f"tf32 takes float32 tensors, got {x.dtype}")
    bits = x.contiguous().view(torch.int32)
    cut = bits & ~((1 << _DROPPED_BITS) - 1)
    return torch.where(torch.isfinite(x), cut.view(torch.float32).view(x.shape), x)


class TF32Products(TorchDispatchMode):
    """Inside ``with TF32Products():`` every float32 matrix product of ``PRODUCTS`` multiplies
    its factors through ``tf32``; everything else runs as it is. ``count`` is how many products
    it cut (a run that dispatches none through it is not emulated: ``compare`` refuses it)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        factors = PRODUCTS.get(func)
        if factors is not None and all(
            isinstance(args[i], torch.Tensor) and args[i].dtype == torch.float32 for i in factors
        ):
            args = tuple(tf32(a) if i in factors else a for i, a in enumerate(args))
            self.count += 1
        return func(*args, **kwargs)


def _held_out(tensors: dict) -> torch.Tensor:
    """The run's held-out loss of every member, flattened (float64)."""
    if "eval_loss" not in tensors:
        raise ValueError(f"the run has no 'eval_loss' to compare (it has {sorted(tensors)})")
    return tensors["eval_loss"].double().flatten()


def order_flips(loss_a: torch.Tensor, loss_b: torch.Tensor) -> tuple[int, int]:
    """(pairs ordered otherwise, pairs) of the rows of two (G,) or (G, S) held-out losses: the
    rows' means over seeds (the last axis, where there is one), compared pair by pair."""
    if loss_a.shape != loss_b.shape:
        raise ValueError(f"losses of shapes {tuple(loss_a.shape)} and {tuple(loss_b.shape)}")
    ma, mb = (x.double().mean(-1) if x.dim() > 1 else x.double() for x in (loss_a, loss_b))
    i, j = torch.triu_indices(len(ma), len(ma), offset=1)
    flipped = torch.sign(ma[i] - ma[j]) != torch.sign(mb[i] - mb[j])
    return int(flipped.sum()), len(i)


def seed_flips(loss: torch.Tensor) -> list[tuple[int, int]]:
    """The yardstick of ``order_flips``: for each pair of seeds of a (G, S) held-out loss, the
    pairs of rows that one seed's losses order otherwise than the other's (none for (G,))."""
    if loss.dim() < 2:
        return []
    S = loss.shape[-1]
    return [order_flips(loss[:, i], loss[:, j]) for i in range(S) for j in range(i + 1, S)]


def compare(name: str, profile: str = "quick") -> dict[str, Any]:
    """Train ``name``'s ``profile`` run in float32 and under ``TF32Products`` (nothing stored) and
    return both held-out losses per member (``float32``, ``tf32``), their relative change
    (``change``), the seeds' spread (the relative standard deviation of each size's members
    over seeds, ``seed_spread``, where the losses have a seeds axis last), the products cut and
    both wall times."""
    from gated_attention.experiments.registry import experiment_config

    config = experiment_config(name, profile)
    if getattr(getattr(config, "train", None), "mode", "fast") == "compiled":
        raise ValueError(f"{name} ({profile}) trains in mode 'compiled': its products are not "
                         "dispatched through the emulation")  # fmt: skip
    t0 = time.perf_counter()
    ref, _ = config.compute(checkpoint=None, progress=False)
    t1 = time.perf_counter()
    with TF32Products() as mode:
        cut, _ = config.compute(checkpoint=None, progress=False)
    t2 = time.perf_counter()
    if mode.count == 0:
        raise ValueError(f"{name}: no matrix product went through the emulation")
    a, b = _held_out(ref), _held_out(cut)
    loss = ref["eval_loss"].double()
    spread = (loss.std(-1) / loss.mean(-1).abs()).median() if loss.dim() > 1 else torch.nan
    return {
        "name": name,
        "profile": profile,
        "float32": a,
        "tf32": b,
        "change": (b - a).abs() / a.abs(),
        "seed_spread": float(spread),
        "order_flips": order_flips(ref["eval_loss"], cut["eval_loss"]),
        "seed_flips": seed_flips(ref["eval_loss"]),
        "products": mode.count,
        "seconds": (t1 - t0, t2 - t1),
    }


def format_compare(r: dict[str, Any]) -> str:
    """A few lines: the median and largest relative change of a member's held-out loss, and the
    seeds' median relative spread beside them."""
    ch, (flips, pairs) = r["change"], r["order_flips"]
    finite = bool(torch.isfinite(r["tf32"]).all())
    return "\n".join(
        [
            f"{r['name']} ({r['profile']}): {ch.numel()} members, {r['products']:,} products cut",
            f"  held-out loss, TF32 against float32: median change {float(ch.median()):.2e},"
            f" largest {float(ch.max()):.2e}" + ("" if finite else " (a member not finite)"),
            f"  the seeds' median spread of a row's loss: {r['seed_spread']:.2e}"
            if r["seed_spread"] == r["seed_spread"]
            else "  the seeds' spread: not computed (no seeds axis)",
            f"  pairs of rows (mean over seeds) ordered otherwise: {flips} of {pairs}",
            "  the same between two seeds in float32: "
            + (", ".join(f"{f}" for f, _ in r["seed_flips"]) or "no seeds axis"),
            f"  {r['seconds'][0]:.0f} s float32, {r['seconds'][1]:.0f} s emulated",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.tf32_check", description=__doc__.splitlines()[0]
    )
    parser.add_argument("names", nargs="+", help="experiments (python -m gated_attention list)")
    parser.add_argument("--profile", default="quick", help="smoke or quick (default quick)")
    parser.add_argument("--out", help="also write every comparison here (JSON)")
    args = parser.parse_args(argv)
    done = []
    for name in args.names:
        r = compare(name, args.profile)
        print(format_compare(r), flush=True)
        done.append({k: v.tolist() if isinstance(v, torch.Tensor) else v for k, v in r.items()})
        if args.out:  # after each run: a later failure loses none of them
            Path(args.out).write_text(json.dumps(done, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
