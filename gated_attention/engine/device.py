"""Where training runs: the device choice ($GATED_ATTENTION_DEVICE), the threads of a CPU run
($GATED_ATTENTION_THREADS, ``training_threads``), flushing subnormal floats, keeping freed
memory for the next step (``keep_freed_memory``), and the GPU path (the step recorded once as a
CUDA graph; data drawn in background threads)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import platform
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import torch

#: the environment variable that names the device ``train`` runs on (default: the CPU)
DEVICE_ENV = "GATED_ATTENTION_DEVICE"


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """The device to train on: ``device``, else $GATED_ATTENTION_DEVICE, else "cpu"; a
    ValueError names a device that does not exist here."""
    name = device if device is not None else os.environ.get(DEVICE_ENV, "cpu")
    try:
        dev = torch.device(name)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"unknown device {name!r} (from {DEVICE_ENV} or device=): {err}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} requested, but torch sees no CUDA device here")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device {name!r}: only 'cpu' and 'cuda' are supported")
    return dev


#: the environment variable that sets the torch threads of training on the CPU
THREADS_ENV = "GATED_ATTENTION_THREADS"
#: the torch threads of training on the CPU unless $GATED_ATTENTION_THREADS says otherwise
#: (why one: book/performance.md, "Threads")
DEFAULT_THREADS = 1


def positive_env(name: str, default: int) -> int:
    """$``name`` as a positive integer, ``default`` when unset or empty; else a ValueError."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{name} must be a positive integer, got {text!r}")
    return n


def train_threads() -> int:
    """$GATED_ATTENTION_THREADS as a positive integer, else ``DEFAULT_THREADS``."""
    return positive_env(THREADS_ENV, DEFAULT_THREADS)


@contextlib.contextmanager
def training_threads(dev: torch.device):
    """Train on the CPU with ``train_threads()`` torch threads, the caller's count restored."""
    before = torch.get_num_threads()
    want = before if dev.type != "cpu" else train_threads()
    if want == before:  # off the CPU; or a pool restarted for nothing, its threads' memory again
        yield
        return
    torch.set_num_threads(want)
    try:
        yield
    finally:
        torch.set_num_threads(before)


#: set to 1 to keep the package from flushing subnormal floats (``flush_denormals``)
NO_FLUSH_ENV = "GATED_ATTENTION_NO_FLUSH"


def flush_denormals(force: bool = False) -> bool:
    """Flush subnormal floats to zero (``torch.set_flush_denormal(True)``); True if set.

    Dead neurons' weights decay into subnormals, slow on many x86 CPUs (book/reference.md,
    "Subnormal floats"). The setting is per thread, copied by torch's pool when it starts: so
    ``import gated_attention`` sets it, and ``train`` again for its own thread.
    $GATED_ATTENTION_NO_FLUSH=1 turns both off; ``force`` sets the flag even then.
    """
    if not (force or os.environ.get(NO_FLUSH_ENV, "") in ("", "0")):
        return False
    return bool(torch.set_flush_denormal(True))


#: glibc's ``mallopt`` parameters (malloc.h) and the values ``keep_freed_memory`` sets: blocks up
#: to 32 MiB (glibc's largest mmap threshold on 64 bits) from the heap, up to 1 GiB freed kept
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_BYTES, KEEP_BYTES = 32 * 2**20, 2**30


@functools.cache
def keep_freed_memory() -> bool:
    """Let each CPU step reuse the memory the step before freed, instead of page faults
    (book/reference.md, "Freed memory"): glibc's ``mallopt`` thresholds set once per process;
    True if set, False where the C library has no ``mallopt`` or refuses the values."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_BYTES)) and bool(
        mallopt(M_TRIM_THRESHOLD, KEEP_BYTES)
    )


def draw_in_background(dev: torch.device) -> bool:
    """Whether ``train`` draws data in background threads: off the CPU only (slower on it)."""
    return dev.type != "cpu"


def on_side_stream(side: torch.cuda.Stream, device: torch.device, fn: Callable[[], None]) -> None:
    """``fn()`` on the stream ``side``, after the current stream's work and before its next:
    the warm-up before a recording that torch's CUDA-graph notes ask for (real training steps)."""
    current = torch.cuda.current_stream(device)
    side.wait_stream(current)
    with torch.cuda.stream(side):
        fn()
    current.wait_stream(side)


#: held while a graph records: one recording at a time in the process (``record_graph``)
CAPTURE_LOCK = threading.Lock()


def record_graph(
    fn: Callable[[], None], before_capture: Future | None, stream: torch.cuda.Stream | None = None
):
    """``fn`` recorded once (not run) as a CUDA graph on ``stream``, after ``before_capture``
    (the pending prefetch) has finished; None, with a warning naming the error, where it fails.

    Jobs side by side (``experiments.side_by_side``) record each on its own stream (on a shared
    one a second recording fails), in thread-local capture mode, holding ``CAPTURE_LOCK``."""
    if before_capture is not None:
        before_capture.result()
    graph = torch.cuda.CUDAGraph()
    try:
        with (
            CAPTURE_LOCK,
            torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"),
        ):
            fn()
    except RuntimeError as err:
        warnings.warn(f"the training step could not be recorded as a CUDA graph ({err}); it runs "
                      "eagerly, kernel by kernel", RuntimeWarning, stacklevel=3)  # fmt: skip
        return None
    return graph


class GraphedStep:
    """A step's loss ``loss_fn(X, Y)`` (E,) on fixed input buffers, its backward into .grad and
    the losses into ``window``; the caller runs the optimiser. With ``capture`` (CUDA) the first
    WARMUP steps run eagerly on a side stream, the next is recorded as a CUDA graph and every
    later step replays it (into the same gradient tensors, never cleared in between).
    """

    WARMUP = 3

    def __init__(self, loss_fn, opt: torch.optim.Optimizer, window: torch.Tensor, capture: bool):
        self.loss_fn, self.opt, self.window, self.capture = loss_fn, opt, window, capture
        self.X = self.Y = None
        self.graph = None
        self.eager_steps = 0
        self.side = torch.cuda.Stream(window.device) if capture else None

    def _body(self) -> None:
        loss = self.loss_fn(self.X, self.Y)
        loss.sum().backward()  # the members' gradients stay separate
        self.window += loss.detach()

    def _eager(self) -> None:
        self.opt.zero_grad(set_to_none=True)
        self._body()

    def __call__(self, x: torch.Tensor, y: torch.Tensor, before_capture: Future | None = None):
        if self.X is None:
            self.X, self.Y = torch.empty_like(x), torch.empty_like(y)
        self.X.copy_(x)
        self.Y.copy_(y)
        if self.graph is not None:
            self.graph.replay()
            return
        if not self.capture:
            self._eager()
            return
        if self.eager_steps < self.WARMUP:
            self.eager_steps += 1
            on_side_stream(self.side, self.window.device, self._eager)
            return
        self.opt.zero_grad(set_to_none=True)  # the recorded backward allocates the gradients
        self.graph = record_graph(self._body, before_capture, self.side)
        if self.graph is None:  # not recordable: eagerly from now on
            self.capture = False
            self._eager()
            return
        self.graph.replay()  # recording ran nothing: this is the step itself


def hardware(device: str | torch.device | None = None) -> dict:
    """Where results were computed: the CPU, the platform, and the training device."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    dev = resolve_device(device)
    out = {
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu": model,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "device": str(dev),
    }
    if dev.type == "cuda":
        out["device_name"] = torch.cuda.get_device_name(dev)
    return out
