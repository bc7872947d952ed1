"""ftlab: a fast, checked, trace-driven simulator of NAND flash translation layers
(FTLs) and write buffers, for Python.

The simulator is the Rust library the ``ftlab`` command runs; this package converts
Python values into its configuration and requests, and its reports into dicts, numpy
arrays and DataFrames. The numbers are the command's: ``run(...).to_json()`` is
byte-identical to ``ftlab run --json -`` for the same configuration and seed.

Quick start::

    import ftlab
    r = ftlab.run(ftl="dftl", **{"synthetic.count": 100_000})
    r.summary["waf"], r.latency["p99"]
    r.to_pandas()                         # one tidy row: config keys and every metric

    r = ftlab.run(trace="tests/data/financial1-first10k.spc", ftl="fast", fold=True)
    df = ftlab.generate(**{"synthetic.count": 1000})   # the synthetic workload
    ftlab.run(workload=df, ftl="page")                 # requests from a DataFrame
    ftlab.read_trace("t.spc")                          # a pyarrow Table
    ftlab.schemes()["ftl"]                             # every FTL and its options
    ftlab.sweep("examples/studies/ftl-op.toml")          # a parameter study: a DataFrame

Configuration: ``config`` is a dict with the keys of a TOML config file (nested dicts
for tables such as ``synthetic`` or ``ftl_options``), a path to a TOML file, or None
(the defaults). Keyword arguments override it with the keys ``ftlab run --set`` takes:
``ftl="dftl"``, ``op=12.5``, or dotted keys through a dict,
``**{"ftl_options.gc_threshold": 5}``. ``ftlab.config_schema()`` describes every key.

Errors: ``ConfigError`` and ``TraceError`` (both ``ValueError``) name the key, or the
file, line and field; ``DataLossError`` is raised by ``run(..., check=True)`` when the
oracle found data lost or an invariant broken; ``InternalError`` is a bug in ftlab (a
panic inside a scheme), raised without harming the interpreter.
"""

from __future__ import annotations

import json
import os
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import numpy as np

from . import _ftlab
from ._ftlab import ConfigError, DataLossError, InternalError, TraceError, __version__

__all__ = [
    "run",
    "Report",
    "generate",
    "read_trace",
    "iter_trace",
    "trace_stats",
    "schemes",
    "config_schema",
    "resolve",
    "to_pandas",
    "to_polars",
    "sweep",
    "OPS",
    "ConfigError",
    "TraceError",
    "DataLossError",
    "InternalError",
    "__version__",
]

#: Op codes of workload columns: ``op`` is one of these letters or its index
#: (0 read, 1 write, 2 trim, 3 flush).
OPS: Tuple[str, str, str, str] = ("r", "w", "t", "f")

_OP_NAMES = {
    "r": 0,
    "read": 0,
    "w": 1,
    "write": 1,
    "t": 2,
    "trim": 2,
    "discard": 2,
    "f": 3,
    "flush": 3,
}

ConfigLike = Union[None, Mapping[str, Any], str, "os.PathLike[str]"]


def _overrides(overrides: Mapping[str, Any]) -> List[Tuple[str, Any]]:
    return [(str(k), v) for k, v in overrides.items()]


def _config_arg(config: ConfigLike) -> Any:
    if config is None or isinstance(config, (str, os.PathLike)):
        return config
    if isinstance(config, Mapping):
        return dict(config)
    raise ConfigError(
        "config must be a dict, a path to a TOML file or None, not %r" % type(config).__name__
    )


# ----------------------------------------------------------------------------------
# Reports


# Report keys that hold text or nothing (never a number); the config has them too.
_NOT_METRICS = frozenset(["workload.path", "workload.format"])


def _flatten(value: Any, prefix: str, out: Dict[str, Any], numeric_only: bool) -> None:
    if numeric_only and prefix in _NOT_METRICS:
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(v, prefix + "." + str(k) if prefix else str(k), out, numeric_only)
    elif isinstance(value, list):
        if not numeric_only:
            out[prefix] = json.dumps(value)
    elif value is None:
        # A figure the run does not have (WA without writes, a hit ratio without
        # lookups): NaN keeps the column numeric. Unset config keys stay None.
        out[prefix] = float("nan") if numeric_only else None
    elif isinstance(value, bool):
        out[prefix] = value
    elif isinstance(value, (int, float)):
        out[prefix] = value
    elif not numeric_only:
        out[prefix] = value


#: Timeline columns that may be null (no host writes, no lookups, no requests).
_NULLABLE_INTERVAL_COLUMNS = frozenset(
    ["waf", "waf_cumulative", "buffer_hit_ratio", "map_cache_hit_ratio",
     "latency_p50_ns", "latency_p99_ns", "latency_max_ns"]
)


class Report:
    """The result of one run.

    Attributes and methods:

    - ``summary``: a dict of the headline figures (WAF, erases, response times...).
    - ``to_json()``: the report as ``ftlab run --json -`` prints it (same bytes).
    - ``to_dict()``: the whole report as nested dicts (the JSON's keys).
    - ``to_pandas()`` / ``to_polars()``: one tidy row, config keys (``config.*``) and
      every numeric metric, with dotted column names.
    - ``latency``: response-time percentiles (ns) and the histogram as numpy arrays.
    - ``timeline``: figures every ``timeline_every`` requests (dict of numpy arrays),
      or None when not recorded.
    - ``intervals``: the report's own timeline (the ``timeline`` config key), one
      numpy array per column, or None when not recorded.
    - ``failure``: None, or why the run stopped early (the oracle found a violation, a
      recovery failed, the device wore out); ``failure_kind`` is ``"violation"``,
      ``"recovery"``, ``"internal"``, ``"worn_out"`` or None.
    - ``text`` (and ``str(report)``): the command's human summary.
    - ``report["host.response_ns.p99"]``: any figure by its dotted key.
    """

    __slots__ = ("_json", "_dict", "text", "failure", "failure_kind", "requests", "_latency", "_timeline")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self._json: str = raw["json"]
        self._dict: Dict[str, Any] = json.loads(self._json)
        #: The human summary the ``ftlab`` command prints.
        self.text: str = raw["text"]
        #: None, or why the run stopped before its end.
        self.failure: Optional[str] = raw["failure"]
        #: None, ``"violation"``, ``"recovery"``, ``"internal"`` or ``"worn_out"``.
        self.failure_kind: Optional[str] = raw["failure_kind"]
        #: Requests simulated (all passes, warm-up included).
        self.requests: int = raw["requests"]
        self._latency: Mapping[str, np.ndarray] = raw["latency"]
        self._timeline: Optional[Mapping[str, np.ndarray]] = raw["timeline"]

    def to_json(self) -> str:
        """The report as JSON text, byte-identical to ``ftlab run --json -``."""
        return self._json

    def to_dict(self) -> Dict[str, Any]:
        """The whole report as nested dicts and lists (a fresh copy)."""
        return json.loads(self._json)

    @property
    def config(self) -> Dict[str, Any]:
        """The resolved configuration the run used (scheme option defaults and the
        device filled in): pass it back to ``run`` to rerun."""
        return json.loads(json.dumps(self._dict["config"]))

    def __getitem__(self, key: str) -> Any:
        node: Any = self._dict
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                raise KeyError(key)
            node = node[part]
        return node

    @property
    def ok(self) -> bool:
        """True when the run went to its end and the oracle found nothing wrong."""
        return self.failure is None

    @property
    def summary(self) -> Dict[str, Any]:
        """The headline figures as a flat dict."""
        d = self._dict
        h, f, t = d["host"], d["flash"], d["ftl"]
        rt = h["response_ns"]
        return {
            "ftl": t["name"],
            "buffer": d["buffer"]["name"],
            "requests": h["requests"],
            "pages_written": h["pages_written"],
            "pages_read": h["pages_read"],
            "waf": d["waf"],
            "page_programs": f["page_programs"],
            "block_erases": f["block_erases"],
            "gc_invocations": t["gc"]["invocations"],
            "gc_pages_copied": t["gc"]["pages_copied"],
            "merges_full": t["merges"]["full"],
            "merge_pages_copied": t["merges"]["pages_copied"],
            "map_cache_hit_ratio": t["map_cache"]["hit_ratio"],
            "buffer_hit_ratio": d["buffer"]["hit_ratio"],
            "mean_response_ns": rt["mean"],
            "p50_response_ns": rt["p50"],
            "p99_response_ns": rt["p99"],
            "p999_response_ns": rt["p999"],
            "max_response_ns": rt["max"],
            "throughput_kib_s": h["throughput_kib_s"],
            "sim_time_s": h["sim_time_ns"] / 1e9,
            "reads_checked": d["verify"]["reads_checked"],
            "violations": d["verify"]["violations"],
            "failure": self.failure,
        }

    @property
    def latency(self) -> Dict[str, Any]:
        """Response times of the measured requests, in ns.

        ``mean``, ``p50``, ``p99``, ``p999``, ``max``: the report's figures.
        ``quantile`` / ``quantile_ns``: arrays of quantiles (0.5 ... 1.0) and their
        values. ``value_ns`` / ``count``: the histogram (3 significant digits), each
        recorded bucket's highest equivalent value and its count.
        """
        rt = self._dict["host"]["response_ns"]
        out: Dict[str, Any] = dict(rt)
        out.update({k: v.copy() for k, v in self._latency.items()})
        return out

    @property
    def timeline(self) -> Optional[Dict[str, np.ndarray]]:
        """Cumulative figures every ``timeline_every`` requests and at the end (numpy
        arrays: ``requests``, ``sim_time_ns``, ``host_pages_written``,
        ``page_programs``, ``block_erases``, ``gc_invocations``, response times...),
        or None when ``run`` was not asked to record one. ``requests`` counts every
        request submitted; the other figures restart from zero when measurement
        starts (after ``precondition`` and the ``warmup`` passes), as the report's."""
        if self._timeline is None:
            return None
        return {k: v.copy() for k, v in self._timeline.items()}

    @property
    def intervals(self) -> Optional[Dict[str, np.ndarray]]:
        """The report's timeline, interval by interval (recorded with the ``timeline``
        config key: ``run(timeline="10k")`` or ``run(timeline="1s")``; docs/report.md
        lists the columns and their units), as one numpy array per column: counts as
        uint64, ratios and response times as float64 with NaN where the report has
        null. None when the run recorded no timeline. ``pandas.DataFrame(r.intervals)``
        makes a frame of it."""
        t = self._dict.get("timeline")
        if not t:
            return None
        rows = t["intervals"]
        keys = list(rows[0]) if rows else []
        out: Dict[str, np.ndarray] = {}
        for k in keys:
            vals = [r[k] for r in rows]
            if k in _NULLABLE_INTERVAL_COLUMNS:
                out[k] = np.array([np.nan if v is None else float(v) for v in vals], dtype=np.float64)
            else:
                out[k] = np.array(vals, dtype=np.uint64)
        return out

    def row(self) -> Dict[str, Any]:
        """The tidy row ``to_pandas`` makes, as a dict: ``config.*`` keys, then every
        numeric metric with its dotted key (missing figures as NaN)."""
        out: Dict[str, Any] = {}
        _flatten(self._dict["config"], "config", out, numeric_only=False)
        metrics = {k: v for k, v in self._dict.items() if k != "config"}
        _flatten(metrics, "", out, numeric_only=True)
        out["failure"] = self.failure
        return out

    def to_pandas(self) -> "Any":
        """One tidy row (a pandas DataFrame): the configuration (``config.*``) and
        every numeric metric, dotted names (``host.response_ns.p99``, ``waf``...)."""
        return to_pandas([self])

    def to_polars(self) -> "Any":
        """As ``to_pandas``, as a polars DataFrame."""
        return to_polars([self])

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        s = self.summary
        waf = "-" if s["waf"] is None else "%.3f" % s["waf"]
        state = "ok" if self.ok else "failed: %s" % self.failure_kind
        return "<ftlab.Report ftl=%s buffer=%s requests=%d waf=%s p99=%.1fus %s>" % (
            s["ftl"],
            s["buffer"],
            s["requests"],
            waf,
            s["p99_response_ns"] / 1000.0,
            state,
        )


def _rows(reports: Iterable[Report], varying_only: bool) -> List[Dict[str, Any]]:
    rows = [r.row() for r in reports]
    if varying_only and len(rows) > 1:
        keys = [k for k in rows[0] if k.startswith("config.")]
        same = [k for k in keys if all(json.dumps(r.get(k)) == json.dumps(rows[0].get(k)) for r in rows)]
        for r in rows:
            for k in same:
                r.pop(k, None)
    return rows


def to_pandas(reports: Iterable[Report], varying_only: bool = False) -> "Any":
    """Reports as a pandas DataFrame, one tidy row per run: ``config.*`` columns and
    every numeric metric (dotted names). ``varying_only=True`` keeps only the config
    columns that differ between the runs."""
    import pandas as pd

    rows = _rows(reports, varying_only)
    return pd.DataFrame.from_records(rows, columns=list(rows[0]) if rows else None)


def to_polars(reports: Iterable[Report], varying_only: bool = False) -> "Any":
    """As ``to_pandas``, as a polars DataFrame."""
    import polars as pl

    rows = _rows(reports, varying_only)
    cols = list(rows[0]) if rows else []
    return pl.DataFrame({c: [r.get(c) for r in rows] for c in cols}, strict=False)


# ----------------------------------------------------------------------------------
# Workloads as columns


def _column(workload: Any, name: str) -> Optional[np.ndarray]:
    names: Sequence[str]
    if hasattr(workload, "column_names"):  # pyarrow Table / RecordBatch
        names = list(workload.column_names)
        if name not in names:
            return None
        return np.asarray(workload.column(name).to_numpy(zero_copy_only=False))
    if isinstance(workload, np.ndarray) and workload.dtype.names is not None:
        names = list(workload.dtype.names)
        return np.asarray(workload[name]) if name in names else None
    if hasattr(workload, "columns"):  # pandas / polars DataFrame
        names = [str(c) for c in workload.columns]
        if name not in names:
            return None
        col = workload[name]
        return np.asarray(col.to_numpy() if hasattr(col, "to_numpy") else col)
    if isinstance(workload, Mapping):
        return np.asarray(workload[name]) if name in workload else None
    raise TraceError(
        "workload must be a pandas or polars DataFrame, a pyarrow Table, a dict of arrays "
        "or a numpy structured array with columns op, offset, size and optionally time; "
        "got %r" % type(workload).__name__
    )


def _columns_of(workload: Any) -> List[str]:
    if hasattr(workload, "column_names"):
        return list(workload.column_names)
    if isinstance(workload, np.ndarray) and workload.dtype.names is not None:
        return list(workload.dtype.names)
    if hasattr(workload, "columns"):
        return [str(c) for c in workload.columns]
    if isinstance(workload, Mapping):
        return [str(k) for k in workload]
    return []


def _workload_error(msg: str, field: str, row: Optional[int] = None) -> TraceError:
    e = TraceError(msg)
    e.file, e.line, e.field = "workload", row, field
    return e


def _op_codes(op: np.ndarray) -> np.ndarray:
    if op.ndim != 1:
        raise _workload_error("workload: `op` must be one-dimensional", "op")
    if op.dtype.kind in "iu":
        if op.size and (op.min() < 0 or op.max() > 3):
            row = int(np.nonzero((op < 0) | (op > 3))[0][0])
            raise _workload_error(
                "workload row %d: `op`: %s is not an op (0 read, 1 write, 2 trim, 3 flush)" % (row, op[row]),
                "op",
                row,
            )
        return op.astype(np.uint8)
    if op.dtype.kind in "OUS":
        uniques, inverse = np.unique(op.astype(str), return_inverse=True)
        codes = np.empty(len(uniques), dtype=np.uint8)
        for i, u in enumerate(uniques):
            c = _OP_NAMES.get(str(u).strip().lower())
            if c is None:
                row = int(np.nonzero(inverse == i)[0][0])
                raise _workload_error(
                    "workload row %d: `op`: %r is not an op (r, w, t, f or read, write, "
                    "trim, flush, or 0-3)" % (row, str(u)),
                    "op",
                    row,
                )
            codes[i] = c
        return codes[inverse.reshape(-1)]
    raise _workload_error(
        "workload: `op` has dtype %s; use the letters r, w, t, f or the codes 0-3" % op.dtype, "op"
    )


def _bytes_column(a: np.ndarray, name: str) -> np.ndarray:
    if a.ndim != 1:
        raise _workload_error("workload: `%s` must be one-dimensional" % name, name)
    if a.dtype.kind == "i":
        return a.astype(np.int64, copy=False)
    if a.dtype.kind == "u":
        if a.size and a.max() > np.iinfo(np.int64).max:
            row = int(np.argmax(a))
            raise _workload_error("workload row %d: `%s`: %d is too large" % (row, name, a[row]), name, row)
        return a.astype(np.int64)
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a) | (a != np.floor(a))
        if bad.any():
            row = int(np.nonzero(bad)[0][0])
            raise _workload_error(
                "workload row %d: `%s`: %r is not a whole number of bytes" % (row, name, float(a[row])), name, row
            )
        return a.astype(np.int64)
    raise _workload_error("workload: `%s` has dtype %s; bytes are integers" % (name, a.dtype), name)


def _time_column(a: np.ndarray) -> np.ndarray:
    if a.ndim != 1:
        raise _workload_error("workload: `time` must be one-dimensional", "time")
    if a.dtype.kind == "m":  # timedelta64: since time 0
        return a.astype("timedelta64[ns]").astype(np.int64) / 1e9
    if a.dtype.kind == "M":  # datetime64: since the first request
        ns = a.astype("datetime64[ns]").astype(np.int64)
        return (ns - (ns.min() if ns.size else 0)) / 1e9
    if a.dtype.kind in "iuf":
        return a.astype(np.float64)
    raise _workload_error("workload: `time` has dtype %s; times are seconds (numbers)" % a.dtype, "time")


def _workload_arrays(workload: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray, Optional[np.ndarray]]:
    cols = {}
    for name in ("op", "offset", "size"):
        c = _column(workload, name)
        if c is None:
            raise _workload_error(
                "workload: missing column `%s` (has: %s; needs op, offset, size and "
                "optionally time)" % (name, ", ".join(_columns_of(workload)) or "none"),
                name,
            )
        cols[name] = c
    t = _column(workload, "time")
    return (
        np.ascontiguousarray(_op_codes(cols["op"])),
        np.ascontiguousarray(_bytes_column(cols["offset"], "offset")),
        np.ascontiguousarray(_bytes_column(cols["size"], "size")),
        None if t is None else np.ascontiguousarray(_time_column(t)),
    )


# ----------------------------------------------------------------------------------
# Running


def run(
    config: ConfigLike = None,
    trace: Union[None, str, "os.PathLike[str]"] = None,
    workload: Any = None,
    check: bool = False,
    *,
    progress: Optional[Callable[[int, Optional[int]], None]] = None,
    timeline_every: Optional[int] = None,
    check_every: int = 1024,
    **overrides: Any,
) -> Report:
    """Runs one simulation and returns its ``Report``.

    Parameters
    ----------
    config:
        A dict with the keys of a TOML config file (nested dicts for tables:
        ``{"ftl": "dftl", "synthetic": {"count": 10000}}``), a path to a TOML file, or
        None for the defaults (page FTL, no buffer, 1 GiB, the synthetic workload).
    trace:
        A trace file to replay (sets the ``trace`` key; ``format="msr"`` etc. names its
        format, default ``spc``). Without a trace or a workload the synthetic
        generator runs.
    workload:
        Requests made in Python, run as one pass instead of the configured workload: a
        pandas or polars DataFrame, a pyarrow Table, a dict of arrays or a numpy
        structured array with columns ``op`` (``"r"``, ``"w"``, ``"t"``, ``"f"``, the
        words, or codes 0-3), ``offset`` and ``size`` (bytes) and optionally ``time``
        (arrival in seconds; default 0 for all). No temporary file is written. The
        configuration's workload keys (``trace``, ``synthetic``, ``warmup``,
        ``replay``, the transforms) do not apply to it.
    check:
        Raise ``DataLossError`` when the oracle found a violation or a recovery
        failed (the report is on the exception as ``.report``). Without it the
        failure is in ``report.failure``.
    progress:
        Called as ``progress(requests_done, total_or_None)`` every ``check_every``
        requests; an exception it raises stops the run and is raised.
    timeline_every:
        Record cumulative figures every N requests (``report.timeline``).
    check_every:
        Requests between looks at the clock; every 50 ms one of them checks for Ctrl-C
        (KeyboardInterrupt stops the run). With ``progress``, every one calls it.
    **overrides:
        Config keys as ``ftlab run --set`` takes them, over ``config``: ``ftl="dftl"``,
        ``buffer="bplru"``, ``capacity="4GiB"``, ``seed=7``, and dotted keys through a
        dict, ``**{"ftl_options.gc_threshold": 5, "synthetic.count": 10**6}``.

    The GIL is released while the simulation runs, so runs in threads go in parallel.

    Raises
    ------
    ConfigError
        An unknown key, a wrong type, a value out of range (the message names it).
    TraceError
        A missing or malformed trace, a bad workload column (names file/row/field).
    DataLossError
        With ``check=True``, when the run found a violation.
    InternalError
        A panic inside the simulator (a bug in ftlab); the interpreter is unharmed.
    KeyboardInterrupt
        Ctrl-C during the run (it stops within about 50 ms plus ``check_every``
        requests).
    """
    ov = _overrides(overrides)
    if trace is not None:
        ov.insert(0, ("trace", os.fspath(trace)))
    arrays = None
    if workload is not None:
        if trace is not None:
            raise ConfigError("give either trace or workload, not both")
        arrays = _workload_arrays(workload)
    raw = _ftlab.run(
        _config_arg(config),
        ov,
        arrays,
        check_every=int(check_every),
        progress=progress,
        timeline_every=None if timeline_every is None else int(timeline_every),
    )
    report = Report(raw)
    if report.failure_kind == "internal":
        e: Exception = InternalError(report.failure)
        e.report = report  # type: ignore[attr-defined]
        raise e
    if check and report.failure is not None:
        e = DataLossError(report.failure)
        e.report = report  # type: ignore[attr-defined]
        raise e
    return report


def generate(config: ConfigLike = None, *, output: str = "pandas", **overrides: Any) -> Any:
    """The synthetic workload (or the ``mix``) a configuration names, as
    ``ftlab trace gen`` would write it: columns ``time`` (s), ``op`` (categorical
    ``r``/``w``/``t``/``f``), ``offset`` and ``size`` (bytes, int64).

    ``output``: ``"pandas"`` (a DataFrame), ``"numpy"`` (a dict of arrays, ``op`` as
    codes 0-3), ``"arrow"`` (a pyarrow Table) or ``"polars"``. Keys as in ``run``:
    ``generate(**{"synthetic.count": 1000, "synthetic.read_ratio": 0.3}, seed=2)``.
    Running the result (``run(workload=df)``) simulates the same requests as running
    the configuration itself.
    """
    cols = _ftlab.generate(_config_arg(config), _overrides(overrides))
    return _output(cols, output)


def _output(cols: Dict[str, np.ndarray], output: str) -> Any:
    if output == "numpy":
        return cols
    if output == "pandas":
        import pandas as pd

        data = dict(cols)
        data["op"] = pd.Categorical.from_codes(cols["op"].astype(np.int8), categories=list(OPS))
        return pd.DataFrame(data)
    if output == "arrow":
        import pyarrow as pa

        return pa.Table.from_batches([_record_batch(cols)])
    if output == "polars":
        import polars as pl

        data = dict(cols)
        data["op"] = np.asarray(OPS)[cols["op"]]
        return pl.DataFrame(data).with_columns(pl.col("op").cast(pl.Categorical))
    raise ValueError("output must be pandas, numpy, arrow or polars, not %r" % (output,))


def _record_batch(cols: Mapping[str, np.ndarray]) -> Any:
    import pyarrow as pa

    op = pa.DictionaryArray.from_arrays(pa.array(cols["op"].view(np.int8)), pa.array(list(OPS)))
    names = [n for n in ("time", "op", "offset", "size", "device") if n in cols]
    arrays = [op if n == "op" else pa.array(cols[n]) for n in names]
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _trace_overrides(path: Any, format: Optional[str], mapping: Optional[Mapping[str, int]], options: Mapping[str, Any]) -> List[Tuple[str, Any]]:
    ov: List[Tuple[str, Any]] = [("trace", os.fspath(path))]
    fmt = format if format is not None else ("csv" if mapping else "spc")
    ov.append(("format", fmt))
    for k, v in (mapping or {}).items():
        ov.append(("csv." + str(k), v))
    ov.extend(_overrides(options))
    return ov


def iter_trace(
    path: Union[str, "os.PathLike[str]"],
    format: Optional[str] = None,
    *,
    mapping: Optional[Mapping[str, int]] = None,
    batch_size: int = 1 << 20,
    config: ConfigLike = None,
    **options: Any,
) -> Iterator[Any]:
    """Streams a trace as pyarrow RecordBatches of at most ``batch_size`` records
    (constant memory for any file size). Columns as ``read_trace``."""
    it = _ftlab.open_trace(_config_arg(config), _trace_overrides(path, format, mapping, options), batch_size=int(batch_size))
    for cols in it:
        yield _record_batch(cols)


def read_trace(
    path: Union[str, "os.PathLike[str]"],
    format: Optional[str] = None,
    *,
    mapping: Optional[Mapping[str, int]] = None,
    batch_size: int = 1 << 20,
    config: ConfigLike = None,
    **options: Any,
) -> Any:
    """Reads a trace file (plain, or gzip, zstd, bzip2 or xz compressed) into a pyarrow
    Table with the readers ``ftlab run`` uses.

    Columns: ``time`` (arrival, s, float64), ``op`` (dictionary ``r``/``w``/``t``/``f``),
    ``offset`` and ``size`` (bytes, int64), ``device`` (ASU, disk or MAJ*256+MIN,
    uint32); ``time`` counts from the first record (``absolute_time=True`` keeps the
    stamps). ``format``: ``spc`` (default), ``msr``, ``mqsim``, ``ssdsim``,
    ``disksim``, ``blkparse``, ``vscsi``, ``csv`` or ``auto``. ``mapping``: the csv columns, e.g.
    ``{"time": 0, "offset": 1, "size": 2, "op": 3}`` (implies ``format="csv"``).
    ``**options``: reader settings and transforms by config key: ``csv={...}``,
    ``blkparse={...}``, ``devices=[0, 1]``, ``limit=1000``, ``time_scale=0.5``,
    ``window_start_s=...``, ``skip_bad=True``... Bad records raise ``TraceError``
    naming the file, line and field. The table is built from record batches
    (``iter_trace`` streams them instead).
    """
    import pyarrow as pa

    batches = list(iter_trace(path, format, mapping=mapping, batch_size=batch_size, config=config, **options))
    if not batches:
        return _output(
            {
                "time": np.empty(0, np.float64),
                "op": np.empty(0, np.uint8),
                "offset": np.empty(0, np.int64),
                "size": np.empty(0, np.int64),
                "device": np.empty(0, np.uint32),
            },
            "arrow",
        )
    return pa.Table.from_batches(batches)


def trace_stats(
    path: Union[str, "os.PathLike[str]"],
    format: Optional[str] = None,
    *,
    page_bytes: int = 4096,
    mapping: Optional[Mapping[str, int]] = None,
    config: ConfigLike = None,
    **options: Any,
) -> Dict[str, Any]:
    """The statistics ``ftlab trace stats --json`` prints, as a dict: request counts,
    read/write ratio, size histogram, sequentiality (per request, per page of
    ``page_bytes``, writes), address span, duration, devices. Options as
    ``read_trace`` (the transforms apply first)."""
    text = _ftlab.trace_stats(_config_arg(config), _trace_overrides(path, format, mapping, options), page_bytes=int(page_bytes))
    return json.loads(text)


# ----------------------------------------------------------------------------------
# What the library knows


def schemes() -> Dict[str, List[Dict[str, Any]]]:
    """Every FTL and write buffer: ``{"ftl": [...], "buffer": [...]}``. Each entry has
    ``id``, ``description``, ``source`` (paper and section), capabilities, and
    ``options``: a list of ``{name, default, help, kind, allowed, minimum, maximum,
    range}`` (``default`` typed, ``allowed`` the values of an enumerated option).
    ``builtin`` is False for the test-only ``example`` FTL."""
    return json.loads(_ftlab.schemes())


def config_schema() -> Dict[str, Any]:
    """The JSON Schema of the configuration (``ftlab config schema``): every key with
    its type, default, range and help, and each scheme's options."""
    return json.loads(_ftlab.config_schema())


def resolve(config: ConfigLike = None, **overrides: Any) -> Dict[str, Any]:
    """Checks a configuration in full without running it and returns it resolved (every
    key, scheme option defaults filled in, plus ``device``: geometry and latencies),
    as a report's ``config`` echoes it. Raises ``ConfigError`` as ``run`` would."""
    return json.loads(_ftlab.resolve(_config_arg(config), _overrides(overrides)))


def _run_point(config: str) -> Tuple[bool, str]:
    """One point of a sweep, as a Dask task runs it: the Rust engine with the GIL
    released; ``(True, report JSON)`` or ``(False, error)``, never an exception for a
    failing point. A module-level function so a task pickles it by name."""
    return _ftlab.run_point(config)


def _study(study: Union[str, "os.PathLike[str]"]) -> "_ftlab.Study":
    path = os.fspath(study)
    if "\n" not in path and os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        root = os.path.dirname(os.path.abspath(path))
        return _ftlab.Study(text, path, root)
    return _ftlab.Study(path, "study", os.getcwd())


def _frame(names: List[str], kinds: List[str], cols: List[List[Any]]) -> Any:
    """The table as a pandas DataFrame. With pyarrow installed, through an Arrow table
    of the column types ``ftlab sweep`` writes to Parquet, so the frame is the one
    ``pandas.read_parquet`` gives for the CLI's ``results.parquet``; without it, from
    the lists (integers with a missing value become floats, as there)."""
    import pandas as pd

    try:
        import pyarrow as pa
    except ImportError:
        pa = None
    if pa is not None:
        types = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string()}
        arrays = [pa.array(col, type=types[kind]) for kind, col in zip(kinds, cols)]
        return pa.Table.from_arrays(arrays, names=names).to_pandas()
    data = {}
    for name, kind, col in zip(names, kinds, cols):
        dtype = None
        if kind in ("int", "float"):
            has_null = any(v is None for v in col)
            dtype = "float64" if kind == "float" or has_null else "int64"
            col = [np.nan if v is None else v for v in col]
        data[name] = pd.Series(col, dtype=dtype, name=name)
    return pd.DataFrame(data, columns=names)


def sweep(
    study: Union[str, "os.PathLike[str]"],
    backend: str = "local",
    client: Any = None,
    *,
    out: Union[None, str, "os.PathLike[str]"] = None,
    force: bool = False,
    jobs: int = 0,
) -> Any:
    """Runs a parameter study and returns its table as a pandas DataFrame: the table
    ``ftlab sweep`` writes (``results.parquet``), one row per point with every axis value
    and every metric. See docs/sweep.md for the study file and the columns.

    ``study`` is the path of a study file (relative trace paths are taken from its
    folder) or the study's TOML text (relative paths from the current folder). A bad
    study raises ``ConfigError`` before any point runs; a failing point is a row with
    ``status == "failed"``, its ``error`` and ``command``, and the others go on.

    ``backend="local"`` runs the points on this machine's cores (``jobs`` threads, 0:
    one per core) with the GIL released. ``backend="dask"`` submits one task per point
    to a Dask ``distributed`` cluster (``client``, else the current default client):
    each task runs the Rust engine on a worker, so every worker needs this package
    installed and must see the trace files at the same paths (a shared file system).
    The table is the same whichever backend ran it.

    ``out`` is a results folder as ``ftlab sweep --out`` makes it: points whose report
    is stored there are taken from it instead of run (unless ``force``), and new reports
    are stored there, so an interrupted study resumes. The driver reads and writes the
    folder; the workers never do."""
    s = _study(study)
    points = s.points()
    if out is not None:
        points_dir: Optional[str] = s.prepare_out(os.fspath(out))
    else:
        points_dir = None
    if backend == "local":
        outcomes = s.run_local(None if out is None else os.fspath(out), force, jobs)
    elif backend == "dask":
        outcomes = _sweep_dask(s, points, points_dir, force, client)
    else:
        raise ValueError(f'backend={backend!r}: must be "local" or "dask"')
    return _frame(*s.table(outcomes))


def _sweep_dask(
    s: "_ftlab.Study",
    points: List[Tuple[str, Optional[str]]],
    points_dir: Optional[str],
    force: bool,
    client: Any,
) -> List[Tuple[bool, str]]:
    if client is None:
        from distributed import get_client

        client = get_client()
    outcomes: List[Optional[Tuple[bool, str]]] = [None] * len(points)
    todo = []
    for i, (hash_, config) in enumerate(points):
        if config is None:
            outcomes[i] = (False, s.error(i) or "no configuration")
            continue
        if points_dir is not None and not force:
            stored = s.stored(points_dir, i)
            if stored is not None:
                outcomes[i] = (True, stored)
                continue
        todo.append(i)
    # One task per point; the key names the point's hash, so a point submitted twice
    # (the same configuration) runs once.
    futures = [
        client.submit(_run_point, points[i][1], key=f"ftlab-point-{points[i][0]}", pure=False)
        for i in todo
    ]
    for i, result in zip(todo, client.gather(futures)):
        ok, text = result
        if ok and points_dir is not None:
            s.store(points_dir, i, text)
        outcomes[i] = (ok, text)
    return [o for o in outcomes if o is not None]
