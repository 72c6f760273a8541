"""No class in the library (kgroup + kgroup_spark) is longer than 400 lines (issue 25: the largest was
779; a class that grows past the limit is split into cohesive modules, as docs/coordinator.md lists).

A class's size is ``end_lineno - lineno + 1`` of its ``ClassDef`` (docstrings and comments included;
decorators above the ``class`` line not); nested classes are measured too.
"""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAX_CLASS_LINES = 400


def class_sizes(source: str) -> list[tuple[str, int]]:
    """(class name, lines) of every class defined in ``source``."""
    return [(node.name, node.end_lineno - node.lineno + 1)
            for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)]


def oversized_classes(sources: dict[str, str]) -> list[tuple[str, str, int]]:
    """(class name, file, lines) of every class over MAX_CLASS_LINES in ``sources`` (file -> text)."""
    return sorted((name, path, lines) for path, source in sources.items()
                  for name, lines in class_sizes(source) if lines > MAX_CLASS_LINES)


def library_sources() -> dict[str, str]:
    return {str(path.relative_to(ROOT)): path.read_text()
            for package in ("kgroup", "kgroup_spark") for path in sorted((ROOT / package).rglob("*.py"))}


def test_no_class_in_the_library_exceeds_400_lines():
    sources = library_sources()
    assert len(sources) > 100  # the walk found the packages
    too_long = oversized_classes(sources)
    assert not too_long, "classes over {} lines (split them into cohesive modules): {}".format(
        MAX_CLASS_LINES, "; ".join(f"{name} in {path}: {lines} lines" for name, path, lines in too_long))


def test_the_check_names_a_class_over_the_limit_with_its_file_and_size():
    at_limit = "class AtLimit:\n" + "    x = 1\n" * (MAX_CLASS_LINES - 1)
    over = "class Outer:\n    class Over:\n" + "        x = 1\n" * MAX_CLASS_LINES
    sources = {"pkg/at_limit.py": at_limit, "pkg/over.py": over}
    assert class_sizes(at_limit) == [("AtLimit", MAX_CLASS_LINES)]
    assert oversized_classes(sources) == [("Outer", "pkg/over.py", MAX_CLASS_LINES + 2),
                                          ("Over", "pkg/over.py", MAX_CLASS_LINES + 1)]
