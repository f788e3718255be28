"""Test set-up: one torch thread per test process (pytest -n 2 runs two on a 2-core machine)."""

import torch

torch.set_num_threads(1)
