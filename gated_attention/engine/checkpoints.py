"""A run's state on disk: parameters, optimiser, schedule, every stream's generator state and
the loss curve so far, written atomically; an unreadable file is discarded with a warning."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch

from ..atomic import atomic_write


def restore(state: dict, path: Path, P: dict, opt, sched, gens: list, streams: torch.Tensor):
    """Load a checkpoint into the run (in place); returns (step, loss_steps, losses, window).
    A ValueError for another ensemble size or data device."""
    E = len(streams)
    member_states = state["generators"]  # one per member (shared streams: equal states)
    if len(member_states) != E:
        raise ValueError(f"checkpoint {path} holds {len(member_states)} members, not {E}")
    drew, draws = state.get("data_device", "cpu"), gens[0].device.type
    if drew != draws:  # a generator's state means nothing to another device's generator
        raise ValueError(
            f"checkpoint {path} drew its data on {drew}, this run draws on {draws} (resume "
            f"with data_on_device={drew != 'cpu'}, or start over without the checkpoint)"
        )
    with torch.no_grad():
        for k in P:
            P[k].copy_(state["params"][k])
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])
    for u, g in enumerate(gens):
        g.set_state(member_states[int((streams == u).nonzero()[0])])
    losses = list(state["losses"].unbind(0))
    return int(state["step"]), state["loss_steps"].tolist(), losses, state["window"]


def read_checkpoint(path: Path | None) -> dict | None:
    """The saved state at ``path``, or None; an unreadable file (a full disk, a truncated copy)
    is discarded with a warning naming it, and the run starts over."""
    if path is None or not path.exists():
        return None
    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except Exception as err:  # noqa: BLE001 - any unreadable checkpoint is discarded
        warnings.warn(f"checkpoint {path} is unreadable ({err}); starting over", stacklevel=3)
        path.unlink()
        return None


def save_checkpoint(
    path, P, opt, sched, gen_states, step, loss_steps, losses, window, data_device: str = "cpu"
) -> None:
    """Atomically write the run's state (loads with weights_only); ``gen_states``: each member's
    generator state after the steps so far, drawn on ``data_device``."""
    state = {  # CPU tensors, loadable anywhere (the optimiser's state moves back on load)
        "params": {k: v.detach().cpu() for k, v in P.items()},
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "generators": list(gen_states),
        "data_device": data_device,
        "step": step,
        "loss_steps": torch.tensor(loss_steps, dtype=torch.long),
        "losses": torch.stack(losses).cpu() if losses else torch.zeros(0, len(gen_states)),
        "window": window.cpu().clone(),
    }
    atomic_write(path, lambda tmp: torch.save(state, tmp))
