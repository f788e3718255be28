"""The three profiles every experiment has, and the seeds of a run's random streams.

smoke   seconds per chapter; the tests use it; proves the code path runs end to end.
quick   the default of ``make book``: the whole book in minutes on a 2-core laptop CPU.
paper   the paper's own sizes and step counts.
"""

from __future__ import annotations

import hashlib

import torch

PROFILES = ("smoke", "quick", "paper")


def check_profile(profile: str) -> str:
    """Return ``profile`` if it is one of PROFILES, else raise a ValueError that lists them."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    return profile


def derive_seed(seed: int, stream: str) -> int:
    """An independent seed for one random stream ("teacher", "student", "data", "eval") of a run."""
    digest = hashlib.sha256(f"{int(seed)}/{stream}".encode()).digest()
    return int.from_bytes(digest[:7], "little")


def held_out_batch(
    tasks, seeds, batch: int, stream: str = "eval"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Held-out sequences of each member, stacked: ``tasks[e].sample(batch, g)`` with ``g``
    seeded ``derive_seed(seeds[e], stream)``; x (E, N, T, d), y (E, N, T, d_out)."""
    samples = [
        task.sample(batch, torch.Generator().manual_seed(derive_seed(seed, stream)))
        for task, seed in zip(tasks, seeds, strict=True)
    ]
    xs, ys = zip(*samples, strict=True)
    return torch.stack(xs), torch.stack(ys)
