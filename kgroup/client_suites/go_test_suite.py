"""A Go module's own test suite, built from the Go module proxy and run against a broker.

Go Kafka clients test themselves against a live broker named by an environment variable or a
config file.  Their tests are a fidelity check kgroup did not write: this module fetches a module at
a pinned version (``go mod download``), builds one package's test binary once into kgroup's cache
folder (``go test -c``), and runs it through ``go tool test2json`` so every top-level test has one
outcome (subtests fold into their parent).  :mod:`kgroup.client_suites.franz_go` is one such suite.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Collection, Dict, List, Mapping, Optional, Sequence, Tuple

import attrs

from kgroup.errors import KGroupError
from kgroup.testing.apache_kafka import cache_root

__all__ = ["GoSuiteUnavailableError", "GoTestOutcome", "go_test_binary", "outcome_counts",
           "run_go_tests", "unexpected_outcomes"]

#: How long downloading a module and building its test binary may take (about 45 s here, first time).
BUILD_BUDGET_S = 900.0


class GoSuiteUnavailableError(KGroupError):
    """A Go test suite could not be fetched, built or run (no Go, no module proxy, a build error)."""


@attrs.frozen
class GoTestOutcome:
    """One top-level test's result: ``action`` is "pass", "fail" or "skip"; ``output`` its lines."""

    name: str
    action: str
    elapsed_s: float
    output: str


def _go() -> str:
    found = shutil.which("go")
    if found is None:
        raise GoSuiteUnavailableError("no go on PATH: the Go clients' tests are built with the Go toolchain")
    return found


def go_test_binary(module: str, version: str, package: str) -> Tuple[Path, Path]:
    """(test binary, the package's source folder) of ``module@version``'s ``package`` (a path inside the
    module, such as ``pkg/kgo``), built once per version; the tests run in the source folder, since
    some read their package's files.  Concurrent callers take a file lock, so only one builds."""
    folder = cache_root() / "go-suites" / module.replace("/", "+") / version / package.replace("/", "+")
    binary, recorded = folder / "suite.test", folder / "source-dir"

    def built() -> bool:
        return binary.exists() and recorded.exists() and Path(recorded.read_text().strip()).is_dir()
    if not built():
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not built():
                _build(module, version, package, binary, recorded)
    return binary, Path(recorded.read_text().strip())


def _build(module: str, version: str, package: str, binary: Path, recorded: Path) -> None:
    go = _go()
    env = {**os.environ, "GOFLAGS": "-mod=mod -buildvcs=false"}
    try:
        downloaded = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"], env=env,
                                    stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                    timeout=BUILD_BUDGET_S)
        if downloaded.returncode != 0:
            raise GoSuiteUnavailableError(f"go mod download {module}@{version} failed: "
                                          + _tail(downloaded.stdout + downloaded.stderr))
        source = Path(json.loads(downloaded.stdout)["Dir"])
        staging = binary.with_suffix(".building")
        compiled = subprocess.run([go, "test", "-c", "-o", str(staging), f"./{package}"], cwd=source, env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=BUILD_BUDGET_S)
    except subprocess.TimeoutExpired as exc:
        raise GoSuiteUnavailableError(f"{module}@{version}'s tests were not built within "
                                      f"{BUILD_BUDGET_S:.0f} s") from exc
    if compiled.returncode != 0:
        raise GoSuiteUnavailableError(f"building {module}@{version}'s {package} tests failed: "
                                      + _tail(compiled.stdout + compiled.stderr))
    recorded.write_text(str(source / package) + "\n")
    staging.rename(binary)  # only a finished build is ever found at the binary's path


def _tail(text: str, lines: int = 5) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


def run_go_tests(binary: Path, source: Path, env: Mapping[str, str], *, run: str = ".*",
                 skip: Optional[str] = None, timeout_s: float = 1_200.0,
                 extra_arguments: Sequence[str] = (), suites: Collection[str] = ()
                 ) -> Dict[str, GoTestOutcome]:
    """Run the tests of ``binary`` matching ``run`` (and not ``skip``) in ``source`` (the working
    folder: a copy or a folder of its own where the tests read files such as a config) with ``env``
    added to this process's environment; each top-level test's outcome by name.  The tests named in
    ``suites`` are testify-style suites (one Go test whose subtests are the real tests): each of their
    subtests has an outcome of its own, named ``Parent/Subtest``, besides the parent's."""
    arguments = [_go(), "tool", "test2json", "-t", str(binary), "-test.v=test2json", "-test.run", run,
                 "-test.timeout", f"{int(timeout_s)}s", *extra_arguments]
    if skip:
        arguments += ["-test.skip", skip]
    try:
        done = subprocess.run(arguments, cwd=source, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout_s + 60)
    except subprocess.TimeoutExpired as exc:
        raise GoSuiteUnavailableError(f"{binary.name} did not finish within {timeout_s + 60:.0f} s") from exc
    outcomes = _outcomes(done.stdout, suites)
    if not outcomes:
        raise GoSuiteUnavailableError(f"{binary} reported no test: " + _tail(done.stdout + done.stderr))
    return outcomes


def _outcomes(events_text: str, suites: Collection[str] = ()) -> Dict[str, GoTestOutcome]:
    """Top-level tests' outcomes from ``go tool test2json`` events (subtests fold into their parent),
    and the outcomes of the direct subtests of the tests named in ``suites``."""
    output: Dict[str, List[str]] = {}
    outcomes: Dict[str, GoTestOutcome] = {}
    for line in events_text.splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        test = event.get("Test")
        if not test:
            continue
        parts = test.split("/", 2)
        # what the event counts towards: a suite's subtest, or else its top-level test
        tops = [parts[0]] + (["/".join(parts[:2])] if len(parts) > 1 and parts[0] in suites else [])
        action = event.get("Action")
        for top in tops:
            if action == "output":
                output.setdefault(top, []).append(event.get("Output", ""))
            elif action in ("pass", "fail", "skip") and test == top:
                outcomes[top] = GoTestOutcome(top, action, float(event.get("Elapsed", 0.0)),
                                              "".join(output.get(top, [])))
    return outcomes


def outcome_counts(outcomes: Mapping[str, GoTestOutcome]) -> Dict[str, int]:
    """How many tests passed, failed and were skipped (what a suite's command prints last)."""
    return {action: sum(o.action == action for o in outcomes.values()) for action in ("pass", "fail", "skip")}


def unexpected_outcomes(outcomes: Mapping[str, GoTestOutcome], expected_skips: Mapping[str, str]
                        ) -> Dict[str, Tuple[str, List[str]]]:
    """Each failed test, and each skip ``expected_skips`` does not name, with its last lines that
    name a test file (what went wrong): what a test asserting a clean run compares with {}."""
    def lines(outcome: GoTestOutcome) -> List[str]:
        return [line.strip() for line in outcome.output.splitlines()
                if "_test.go:" in line and "deleting" not in line][-6:]
    return {o.name: (o.action, lines(o)) for o in outcomes.values()
            if o.action == "fail" or (o.action == "skip" and o.name not in expected_skips)}
