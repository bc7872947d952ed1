"""Type stubs of the Rust extension ``ftlab._ftlab``. Use the ``ftlab`` package: it
wraps these functions with conversions and docstrings."""

from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union
import os

import numpy as np
import numpy.typing as npt

__version__: str
#: Whether the test-only `example` FTL (fault injection) is built in.
EXAMPLE_SCHEME: bool

class ConfigError(ValueError):
    """A configuration could not be loaded or is invalid."""

    key: Optional[str]

class TraceError(ValueError):
    """A trace or a workload given as arrays is unreadable or malformed."""

    file: str
    line: Optional[int]
    field: str

class DataLossError(RuntimeError):
    """The oracle found a violation (raised by ``run(..., check=True)``)."""

    report: Any

class InternalError(RuntimeError):
    """A panic inside the simulator: a bug in ftlab."""

    report: Any

_Config = Union[None, Dict[str, Any], str, "os.PathLike[str]"]
_Overrides = Sequence[Tuple[str, Any]]
_Workload = Tuple[
    npt.NDArray[np.uint8],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    Optional[npt.NDArray[np.float64]],
]

def run(
    config: _Config,
    overrides: _Overrides,
    workload: Optional[_Workload] = None,
    check_every: int = 1024,
    progress: Optional[Callable[[int, Optional[int]], Any]] = None,
    timeline_every: Optional[int] = None,
) -> Dict[str, Any]:
    """One simulation: ``json`` (the CLI's report text), ``text``, ``requests``,
    ``failure``/``failure_kind``, ``latency`` and ``timeline`` (numpy arrays)."""

def generate(config: _Config, overrides: _Overrides) -> Dict[str, np.ndarray]:
    """The configured synthetic workload as columns time, op, offset, size."""

class TraceBatches(Iterator[Dict[str, np.ndarray]]):
    """A trace read in batches of columns time, op, offset, size, device."""

    def __iter__(self) -> "TraceBatches": ...
    def __next__(self) -> Dict[str, np.ndarray]: ...

def open_trace(config: _Config, overrides: _Overrides, batch_size: int = ...) -> TraceBatches:
    """Opens the configured trace for reading in batches."""

def trace_stats(config: _Config, overrides: _Overrides, page_bytes: int = 4096) -> str:
    """Trace statistics as the JSON text of ``ftlab trace stats --json``."""

def schemes() -> str:
    """Every FTL and buffer with its options, as JSON text."""

def config_schema() -> str:
    """The JSON Schema of the configuration, as JSON text."""

def resolve(config: _Config, overrides: _Overrides) -> str:
    """The configuration checked and resolved, as JSON text."""

def run_point(config: str) -> Tuple[bool, str]:
    """Runs one sweep point's configuration (JSON) with the GIL released:
    ``(True, report JSON)`` or ``(False, error)``."""

class Study:
    """A parameter study (``ftlab sweep`` file) and its points."""

    def __init__(self, text: str, origin: str, root: str) -> None: ...
    def __len__(self) -> int: ...
    def points(self) -> List[Tuple[str, Optional[str]]]: ...
    def error(self, i: int) -> Optional[str]: ...
    def prepare_out(self, out: str) -> str: ...
    def stored(self, points_dir: str, i: int) -> Optional[str]: ...
    def store(self, points_dir: str, i: int, text: str) -> None: ...
    def run_local(
        self, out: Optional[str] = None, force: bool = False, jobs: int = 0
    ) -> List[Tuple[bool, str]]: ...
    def table(
        self, outcomes: List[Tuple[bool, str]]
    ) -> Tuple[List[str], List[str], List[List[Any]]]: ...
