"""Networks of one family at several widths as one ensemble: each zero-padded to the largest
width, with 0/1 masks that say where the padding is (``engine.train(..., masks=...)``).

A parameter axis either does not depend on the width or holds ``a`` blocks of ``width`` units
(``a`` = 1; the LSTM's 4 and the GRU's 3 gates, stacked as torch stacks them). Padding puts a
narrower member's units first in each block of the wider layout, zeros after them:

    width 2, a = 2 (gates [i, f]):   [i1 i2 f1 f2]  ->  width 3:  [i1 i2 0 f1 f2 0]

The padding is inert: a padded unit's weights in and out are zero, so each member computes
exactly what it computes alone, and every gradient into a padded weight is an exact zero, which
AdamW (weight decay included) keeps; so the padding stays zero in training even without masks.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .shell import Params


def _blocks(size: int, wide: int, width: int, wide_width: int, where: str) -> int:
    """``a`` of an axis of ``size`` at ``width`` and ``wide`` at ``wide_width`` (0: no width)."""
    if size == wide:
        return 0
    if size % width or wide % wide_width or size // width != wide // wide_width:
        raise ValueError(
            f"{where}: an axis of {size} at width {width} and of {wide} at width {wide_width} "
            "is not a stack of blocks of units; this family cannot be padded"
        )
    return size // width


def _layout(shape, wide_shape, width: int, wide_width: int, where: str):
    """(view, inner, index): the wide tensor viewed with each blocked axis as (a, wide_width), the
    member's as (a, width), and where the member sits in the view."""
    view, inner, index = [wide_shape[0]], [shape[0]], [slice(None)]
    for size, wide in zip(shape[1:], wide_shape[1:], strict=True):
        a = _blocks(size, wide, width, wide_width, where)
        if a == 0:
            view, inner, index = view + [size], inner + [size], index + [slice(None)]
        else:
            view, inner = view + [a, wide_width], inner + [a, width]
            index += [slice(None), slice(0, width)]
    return view, inner, tuple(index)


def pad_members(members: Sequence[Params], widths: Sequence[int]) -> tuple[Params, Params]:
    """(params, masks): ``members`` (dicts of (E_i, ...) tensors of one family at width
    ``widths[i]``) as one ensemble of sum E_i members at the largest width, in order; masks 1
    exactly on each member's own entries. Groups of other names or an axis that is not blocks of
    units are a ValueError."""
    if not members or len(members) != len(widths):
        raise ValueError(f"{len(members)} groups of members for {len(widths)} widths")
    wide = max(range(len(widths)), key=lambda i: widths[i])
    W, names = widths[wide], list(members[wide])
    params, masks = {}, {}
    for name in names:
        parts, flags = [], []
        for group, w in zip(members, widths, strict=True):
            if set(group) != set(names):
                raise ValueError(f"groups name different parameters: {sorted(group)}, {names}")
            v = group[name]
            shape = (v.shape[0], *members[wide][name].shape[1:])
            view, inner, index = _layout(v.shape, shape, w, W, f"parameter {name!r}")
            p, m = v.new_zeros(shape), v.new_zeros(shape)  # v padded to ``shape``, its mask
            p.view(view)[index] = v.reshape(inner)
            m.view(view)[index] = 1.0
            parts.append(p)
            flags.append(m)
        params[name], masks[name] = torch.cat(parts), torch.cat(flags)
    return params, masks


def split_members(params: Params, members: Sequence[Params], widths: Sequence[int]) -> list[Params]:
    """The inverse of ``pad_members``: ``params`` (an ensemble it made, trained or not) cut
    back into its groups, each at its own width and with the shapes of ``members``."""
    W = max(widths)
    out, start = [], 0
    for group, w in zip(members, widths, strict=True):
        E = next(iter(group.values())).shape[0]
        one = {}
        for name, v in params.items():
            part, shape = v[start : start + E], group[name].shape
            view, _, index = _layout(shape, part.shape, w, W, f"parameter {name!r}")
            one[name] = part.reshape(view)[index].reshape(shape).clone()
        out.append(one)
        start += E
    return out
