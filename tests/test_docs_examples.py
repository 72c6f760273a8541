"""Every ```python block of README.md, docs/index.md and docs/guide/*.md runs as a test (project issue 10).

A block that defines ``test_*`` functions is a pytest module: it uses fixtures such as ``kgroup_cluster``,
so it runs under pytest.  All such blocks run in one pytest subprocess (one file per block, which keeps
the cost of starting pytest to once per run), and each block's case passes when every test function it
defines passed.  Any other block is a script and runs in its own interpreter.  Both run with this
checkout first on ``PYTHONPATH``, so they import this checkout's ``kgroup`` whatever is installed.

Each generated file is padded with blank lines so that line numbers in a traceback are the markdown
file's.  Blocks that are not meant to run (shell commands, config) are fenced as ```bash, ```text or
```toml and are not collected.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Dict, List, Sequence

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", ROOT / "docs" / "index.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]

#: Fence info strings treated as runnable Python.
PYTHON_FENCES = ("python", "py", "python3")
#: A script example may take this long (they take well under 5 s each).
SCRIPT_TIMEOUT_S = 60
#: All pytest examples together may take this long.
PYTEST_TIMEOUT_S = 180

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[\w+-]*)")
_TEST_FUNCTION = re.compile(r"^(?:async\s+)?def\s+(test_\w+)\s*\(", re.MULTILINE)


@dataclass(frozen=True)
class Example:
    path: Path
    #: 1-based line of the block's first code line in the markdown file.
    line: int
    source: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix() if self.path.is_relative_to(ROOT) else self.path}" \
               f":{self.line}"

    @property
    def test_functions(self) -> List[str]:
        return _TEST_FUNCTION.findall(self.source)

    @property
    def is_pytest(self) -> bool:
        return bool(self.test_functions)

    @property
    def module_name(self) -> str:
        stem = re.sub(r"\W", "_", self.path.name)
        return f"test_doc_{stem}_L{self.line}"

    def padded_source(self) -> str:
        """The code, preceded by blank lines so that its line numbers are the markdown file's."""
        return "\n" * (self.line - 1) + self.source


def collect_examples(paths: Sequence[Path]) -> List[Example]:
    """Every fenced Python block of ``paths``, in order; an unclosed fence is an error."""
    examples = []
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        index = 0
        while index < len(lines):
            opening = _FENCE.match(lines[index])
            if opening is None:
                index += 1
                continue
            indent, fence, info = opening["indent"], opening["fence"], opening["info"].lower()
            body: List[str] = []
            index += 1
            first_line = index + 1
            while index < len(lines) and not lines[index].strip().startswith(fence):
                line = lines[index]
                body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
                index += 1
            if index == len(lines):
                raise AssertionError(f"{path}:{first_line - 1}: code fence never closed")
            index += 1
            if info in PYTHON_FENCES:
                examples.append(Example(path, first_line, "\n".join(body) + "\n"))
    return examples


def _environment() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PYTEST_ADDOPTS", None)
    return env


def run_script(example: Example, directory: Path) -> subprocess.CompletedProcess:
    """Run a script example in a fresh interpreter in ``directory``."""
    script = directory / f"{example.module_name}.py"
    script.write_text(example.padded_source(), encoding="utf-8")
    return subprocess.run([sys.executable, str(script)], cwd=directory, env=_environment(),
                          capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S)


def _plugin_options() -> List[str]:
    # Installed kgroup registers the fixture under pytest11; a checkout that is not installed needs -p.
    registered = any(ep.name == "kgroup_cluster" for ep in entry_points(group="pytest11"))
    return [] if registered else ["-p", "kgroup.pytest_plugin"]


@dataclass(frozen=True)
class PytestRun:
    output: str
    #: module name -> {test name: failure text, "" when it passed}
    outcomes: Dict[str, Dict[str, str]]


def run_pytest_examples(examples: Sequence[Example], directory: Path) -> PytestRun:
    """Run every pytest example (one module each) in one pytest subprocess in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for example in examples:
        (directory / f"{example.module_name}.py").write_text(example.padded_source(), encoding="utf-8")
    report = directory / "report.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
               "--junitxml", str(report), *_plugin_options(), *[f"{e.module_name}.py" for e in examples]]
    try:
        done = subprocess.run(command, cwd=directory, env=_environment(), capture_output=True, text=True,
                              timeout=PYTEST_TIMEOUT_S)
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        partial = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return PytestRun(f"pytest did not finish within {PYTEST_TIMEOUT_S} s:\n{partial}", {})
    outcomes: Dict[str, Dict[str, str]] = {}
    if report.exists():
        for case in ElementTree.parse(report).iter("testcase"):
            module = case.get("classname", "").split(".")[-1]
            problems = [child for child in case if child.tag in ("failure", "error", "skipped")]
            text = "\n".join(f"{p.tag}: {p.get('message', '')}\n{p.text or ''}" for p in problems)
            outcomes.setdefault(module, {})[case.get("name", "")] = text
    return PytestRun(output, outcomes)


def check_pytest_example(example: Example, run: PytestRun) -> None:
    """Every test function the block defines ran (parametrized cases count) and passed."""
    cases = run.outcomes.get(example.module_name)
    assert cases, f"{example.id}: pytest ran no test of this block\n{run.output}"
    for function in example.test_functions:
        ran = {name: text for name, text in cases.items() if name.split("[")[0] == function}
        assert ran, f"{example.id}: {function} was not collected\n{run.output}"
        failed = {name: text for name, text in ran.items() if text}
        assert not failed, f"{example.id}: " + "\n".join(f"{name}\n{text}" for name, text in failed.items())


def check_script_example(example: Example, done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, \
        f"{example.id} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"


EXAMPLES = collect_examples(DOC_FILES)
PYTEST_EXAMPLES = [e for e in EXAMPLES if e.is_pytest]
SCRIPT_EXAMPLES = [e for e in EXAMPLES if not e.is_pytest]


@pytest.fixture(scope="module")
def pytest_examples_run(tmp_path_factory) -> PytestRun:
    return run_pytest_examples(PYTEST_EXAMPLES, tmp_path_factory.mktemp("doc_pytest_examples"))


def _script_param(example: Example):
    # Examples that start the Tansu broker carry the integration tests' marker, so -m "not broker" skips them.
    marks = [pytest.mark.broker] if "running_tansu" in example.source else []
    return pytest.param(example, id=example.id, marks=marks)


@pytest.mark.parametrize("example", [_script_param(e) for e in SCRIPT_EXAMPLES])
def test_script_example_runs(example, tmp_path):
    check_script_example(example, run_script(example, tmp_path))


@pytest.mark.parametrize("example", PYTEST_EXAMPLES, ids=[e.id for e in PYTEST_EXAMPLES])
def test_pytest_example_passes(example, pytest_examples_run):
    check_pytest_example(example, pytest_examples_run)


def test_every_guide_page_is_collected_and_has_examples():
    """The user guide exists and each page has at least one runnable example."""
    guide_pages = [p for p in DOC_FILES if p.parent.name == "guide"]
    assert len(guide_pages) >= 7
    with_examples = {e.path for e in EXAMPLES}
    assert [p.name for p in guide_pages if p not in with_examples] == []
    assert (ROOT / "README.md") in with_examples


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a markdown heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip("# ").lower()).replace(" ", "-")


def test_relative_links_resolve():
    """Links between the guide, the README and the design notes point at files (and headings) that exist."""
    broken = []
    for page in DOC_FILES:
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue  # http(s) and mailto links are not checked
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and anchor not in {_anchor(line) for line in linked.read_text(encoding="utf-8")
                                           .splitlines() if line.startswith("#")}:
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


# -- the collector itself: a broken example must fail ---------------------------------------------------


BROKEN_DOC = """\
# A page

```python
assert 1 + 1 == 2
```

Some text.

```python
numbers = [1, 2]
assert sum(numbers) == 4, "a broken script example"
```

```bash
this is not python
```

```python
def test_passes():
    assert True

def test_broken(kgroup_cluster):
    kgroup_cluster.create_topic("t", 2)
    assert kgroup_cluster.partitions_per_topic() == {"t": 3}
```
"""


def test_collector_reports_broken_examples(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(BROKEN_DOC, encoding="utf-8")
    good, broken, pytest_block = collect_examples([page])
    assert (good.line, broken.line, pytest_block.line) == (4, 10, 19)
    assert pytest_block.test_functions == ["test_passes", "test_broken"]

    check_script_example(good, run_script(good, tmp_path))
    done = run_script(broken, tmp_path)
    with pytest.raises(AssertionError, match="a broken script example"):
        check_script_example(broken, done)
    assert "page.md" not in done.stderr and ", line 11," in done.stderr  # the markdown file's line

    run = run_pytest_examples([pytest_block], tmp_path / "pytest")
    with pytest.raises(AssertionError, match="test_broken"):
        check_pytest_example(pytest_block, run)
    assert run.outcomes[pytest_block.module_name]["test_passes"] == ""


def test_collector_rejects_an_unclosed_fence(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nprint('never closed')\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="never closed"):
        collect_examples([page])
