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
    """$``name`` as a positive integer, else ``default`` when it is unset or empty; anything
    else is an error that names the variable."""
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
    """Train on the CPU with ``train_threads()`` torch threads, the caller's count restored
    after; a GPU run changes nothing."""
    if dev.type != "cpu":
        yield
        return
    before, want = torch.get_num_threads(), train_threads()
    if want == before:  # a pool restarted for nothing costs its threads' memory again
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

    Weight decay shrinks dead neurons' weights into subnormal floats, which many x86 CPUs
    compute slowly; flushing changes only values below 1.2e-38 (2.2e-308 in float64). The
    setting is per thread, and torch's intra-op threads copy it once, when their pool starts:
    so ``import gated_attention`` sets it before anything starts the pool, and ``train`` calls
    this again for its own thread (why and what it costs: book/reference.md, "Subnormal
    floats"). $GATED_ATTENTION_NO_FLUSH=1 turns both off; ``force`` sets the flag even then.
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
    """Let each CPU step reuse the memory the step before freed; True if set (glibc only).

    glibc hands large freed blocks back to the system, and the next step's buffers then come
    back page by page, each page a fault (measured: book/reference.md, "Freed memory"). Sets
    M_MMAP_THRESHOLD to ``MMAP_BYTES`` and M_TRIM_THRESHOLD to ``KEEP_BYTES`` once per process
    (``train`` calls it); the numbers computed do not change. False where the C library has
    no ``mallopt`` (not glibc) or refuses the values."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_BYTES)) and bool(
        mallopt(M_TRIM_THRESHOLD, KEEP_BYTES)
    )


def draw_in_background(dev: torch.device) -> bool:
    """Whether ``train`` draws data in background threads: off the CPU only (on it, drawing
    beside the training made a step slower on every size measured)."""
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
    """``fn`` recorded once as a CUDA graph on ``stream`` (the step's own side stream), after
    ``before_capture`` (the pending prefetch of the next chunk: no other thread of this run
    talks to the device while it records) has finished; None, with a warning naming the error,
    where the recording fails (the caller then runs ``fn`` eagerly). The recording runs nothing.

    Jobs side by side (``experiments.side_by_side``) record in threads of their own: each on its
    own stream (on one shared stream a second recording fails, "operation not permitted when
    stream is capturing"), in thread-local capture mode, holding ``CAPTURE_LOCK`` (entering a
    recording synchronises the device and empties its cache)."""
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
    """The fast step's loss, its gradients and the loss window, on fixed input buffers.

    Called with one step's data (x, y), it copies them into the buffers X, Y, computes
    ``loss_fn(X, Y)`` (E,), its backward (into the parameters' .grad) and adds the loss into
    ``window``; the caller then runs the optimiser. Eagerly, gradients are cleared first. With
    ``capture`` (a CUDA device), the first WARMUP steps run eagerly on a side stream
    (``on_side_stream``), the next is recorded once as a CUDA graph (``record_graph``) and every
    later step replays it (writing the same gradient tensors, never cleared in between).
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
    """Where results were computed: the CPU (model, cores, torch threads), the platform, and the
    training device (``training.resolve_device``), with its name when it is a GPU."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
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
