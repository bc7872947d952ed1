"""Shared fixtures: the repository root, the bundled traces and the release CLI."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import ftlab

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
SPC = DATA / "financial1-first10k.spc"
MSR = DATA / "msr-hm0-sample.csv"


def has_example() -> bool:
    """The test-only `example` FTL (fault injection) is built in: ci.sh turns the
    `example-scheme` feature on."""
    return ftlab._ftlab.EXAMPLE_SCHEME


needs_example = pytest.mark.skipif(
    not has_example(),
    reason="built without the example-scheme feature (ci.sh builds with it)",
)


class Cli:
    """The `ftlab` command of this workspace, release build: $FTLAB_CLI if set, else
    `cargo run --release --bin ftlab --`."""

    def __init__(self) -> None:
        exe = os.environ.get("FTLAB_CLI")
        if exe:
            self.cmd = [exe]
        else:
            cargo = shutil.which("cargo")
            if cargo is None:
                pytest.skip("cargo not found and FTLAB_CLI not set")
            self.cmd = [cargo, "run", "--release", "--quiet", "--bin", "ftlab", "--"]

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run(
            self.cmd + list(args), cwd=ROOT, capture_output=True, text=True, timeout=1800
        )
        if check and p.returncode != 0:
            raise AssertionError("ftlab %s failed (%d): %s" % (" ".join(args), p.returncode, p.stderr))
        return p


@pytest.fixture(scope="session")
def cli() -> Cli:
    return Cli()


if os.environ.get("FTLAB_REQUIRE_EXAMPLE") and not has_example():
    raise RuntimeError("FTLAB_REQUIRE_EXAMPLE is set but ftlab was built without the example-scheme feature")
