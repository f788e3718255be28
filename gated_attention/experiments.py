"""Profiles of the experiments, their frozen configs, and the results cache (DESIGN.md).

Profiles (one papermill parameter, ``profile``, selects one):
    smoke   seconds per chapter; the tests use it; proves the code path runs end to end.
    quick   the default of ``make book``: the whole book in minutes on a 2-core laptop CPU,
            still reproducing every qualitative finding of the paper.
    paper   the paper's own sizes and step counts.
"""

from __future__ import annotations

__all__ = ["PROFILES", "check_profile"]

PROFILES = ("smoke", "quick", "paper")


def check_profile(profile: str) -> str:
    """Return ``profile`` if it is one of PROFILES, else raise a ValueError that lists them."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    return profile
