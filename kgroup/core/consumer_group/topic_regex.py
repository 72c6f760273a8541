"""KIP-848 regex subscriptions: RE2J syntax on Python's ``re``, and resolving a regex against topics.

Kafka's coordinator compiles ``SubscribedTopicRegex`` with Google's RE2/J
(``Utils.throwIfRegularExpressionIsInvalid``) and resolves it with
``Pattern.matcher(topic).matches()``: the whole name must match.  kgroup has
no RE2 in its dependencies, so :func:`compile_topic_regex` reads the pattern
as RE2 reads it and hands Python's ``re`` an equivalent:

* what RE2 refuses and ``re`` would accept is refused here too: backreferences
  (``\\1``, ``(?P=name)``), lookaround, atomic groups, possessive and doubled
  repetitions (``a*+``, ``a**``), conditionals, comments, counts above 1000,
  the flags RE2 lacks (``x``, ``a``, ``u``, ``L``) and escapes it does not know
  (``\\Z``, ``\\u``, ``\\g``...);
* what RE2 accepts and ``re`` spells differently is translated: ``\\z``, ``\\Q...\\E``,
  ``\\x{...}``, octal escapes, ``(?<name>...)``, POSIX classes such as
  ``[[:alpha:]]``, and flags in the middle of a group (``a(?i)b``: RE2 scopes them
  to the rest of the group, Python 3.11 refuses them), plus ``{`` that is not a
  repetition (a literal in RE2, ``{,n}`` is one in Python);
* RE2's Unicode classes (``\\pL``, ``\\p{Greek}``), negated POSIX classes and
  the ungreedy flag ``U`` have no ``re`` equivalent: kgroup refuses them
  (docs/guide/consumer-protocol.md).  Topic names are ASCII
  (``[a-zA-Z0-9._-]``), so none of them can select a topic another spelling
  would miss.

Bad input is :class:`InvalidTopicRegex`; the coordinator answers it with
INVALID_REGULAR_EXPRESSION (Kafka's ``Errors.INVALID_REGULAR_EXPRESSION``, 128).
"""
from __future__ import annotations

import re
from typing import Iterable, Mapping

__all__ = ["InvalidTopicRegex", "compile_topic_regex", "resolve_topic_regexes", "MAX_REPEAT"]

#: RE2's largest repetition count (``{1001}`` is "bad repetition operator").
MAX_REPEAT = 1000

#: RE2's POSIX classes, as ranges an ``re`` character class accepts.
_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~",
    "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
#: Escapes RE2 and ``re`` read alike (outside and inside a class).
_SHARED_ESCAPES = frozenset("dDsSwWaftnrv")
_REPETITION = re.compile(r"\{(\d+)(,(\d*))?\}")
_FLAGS = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])")
_GROUP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*>")


class InvalidTopicRegex(ValueError):
    """A ``SubscribedTopicRegex`` RE2/J would refuse (or kgroup cannot run; see the module docstring)."""


def _octal_or_hex(code: int) -> str:
    return f"\\U{code:08x}"


class _Translator:
    """One pass over an RE2 pattern, building the ``re`` pattern (``out``)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.i = 0
        self.out: list[str] = []
        #: Per open group (the outermost is the pattern itself): ``(?flags:`` groups to close with it.
        self.scoped_flags = [0]
        #: Whether the last thing emitted can take a repetition operator.
        self.repeatable = False
        #: Whether the last thing emitted was a repetition operator (RE2 refuses ``a**``, ``a*+``).
        self.after_repetition = False
        #: Whether that repetition was already made lazy (``a*?`` takes no third operator).
        self.lazy = False

    def fail(self, what: str) -> InvalidTopicRegex:
        return InvalidTopicRegex(what)

    def run(self) -> str:
        p = self.pattern
        while self.i < len(p):
            c = p[self.i]
            if c == "\\":
                self.emit_atom(self.escape(in_class=False))
            elif c == "(":
                self.open_group()
            elif c == ")":
                if len(self.scoped_flags) == 1:
                    raise self.fail("unexpected )")
                self.out.append(")" * self.scoped_flags.pop() + ")")
                self.i += 1
                self.repeatable, self.after_repetition = True, False
            elif c == "[":
                self.emit_atom(self.char_class())
            elif c in "*+?":
                self.repetition(c, 1)
            elif c == "{":
                match = _REPETITION.match(p, self.i)
                if match is None:
                    self.emit_atom("\\{")  # not a repetition: a literal brace, as RE2 reads it
                    self.i += 1
                else:
                    low, high = int(match.group(1)), match.group(3)
                    if low > MAX_REPEAT or (high and int(high) > MAX_REPEAT):
                        raise self.fail(f"bad repetition operator: {match.group(0)}")
                    if high and int(high) < low:
                        raise self.fail(f"bad repetition operator: {match.group(0)}")
                    self.repetition(match.group(0), len(match.group(0)))
            elif c == "|":
                self.out.append(c)
                self.i += 1
                self.repeatable, self.after_repetition = False, False
            elif c in "^$":
                self.out.append(c)
                self.i += 1
                self.repeatable, self.after_repetition = False, False
            else:
                self.emit_atom(re.escape(c) if c in "}]#&~- \t\n\r\v\f" else c)
                self.i += 1
        if len(self.scoped_flags) > 1:
            raise self.fail("missing closing )")
        self.out.append(")" * self.scoped_flags[0])
        return "".join(self.out)

    def emit_atom(self, text: str) -> None:
        self.out.append(text)
        self.repeatable, self.after_repetition = True, False

    def repetition(self, operator: str, width: int) -> None:
        if self.after_repetition:
            if operator == "?" and not self.lazy:
                self.out.append("?")  # a lazy repetition
                self.i += 1
                self.lazy = True
                return
            raise self.fail(f"bad repetition operator: {self.out[-1]}{operator}")
        if not self.repeatable:
            raise self.fail(f"missing argument to repetition operator: {operator}")
        self.out.append(operator)
        self.i += width
        self.after_repetition, self.lazy = True, False

    def open_group(self) -> None:
        p, i = self.pattern, self.i
        self.repeatable, self.after_repetition = False, False
        if not p.startswith("(?", i):
            self.out.append("(")
            self.scoped_flags.append(0)
            self.i += 1
            return
        rest = p[i + 2:i + 3]
        if p.startswith("(?P<", i) or p.startswith("(?<", i) and p[i + 3:i + 4] not in ("=", "!"):
            start = i + (4 if p.startswith("(?P<", i) else 3)
            name = _GROUP_NAME.match(p, start)
            if name is None:
                raise self.fail(f"invalid named capture: {p[i:i + 20]}")
            self.out.append("(?P<" + name.group(0))
            self.scoped_flags.append(0)
            self.i = name.end()
            return
        if rest in ("=", "!", "<", ">", "(", "#") or p.startswith("(?P", i):
            raise self.fail(f"invalid or unsupported Perl syntax: {p[i:i + 4]}")
        flags = _FLAGS.match(p, i)
        # "(?:" alone is a plain non-capturing group; "(?)" and "(?-)" name no flag and are refused.
        if flags is None or (not flags.group(1) and not flags.group(2) and flags.group(3) != ":"):
            raise self.fail(f"invalid or unsupported Perl syntax: {p[i:i + 4]}")
        on, off = flags.group(1), flags.group(2) or ""
        if flags.group(2) is not None and not off:
            raise self.fail(f"invalid or unsupported Perl syntax: {flags.group(0)}")
        for flag in on + off:
            if flag == "U":
                raise self.fail("the ungreedy flag (?U) is not supported by kgroup's coordinator")
            if flag not in "ims":
                raise self.fail(f"invalid or unsupported Perl syntax: {flags.group(0)}")
        spelled = "(?" + on + ("-" + off if off else "") + ":"
        self.out.append(spelled)
        self.i = flags.end()
        if flags.group(3) == ":":
            self.scoped_flags.append(0)
        else:
            # RE2 applies (?i) to the rest of the enclosing group: a scoped group closed with it.
            self.scoped_flags[-1] += 1

    def escape(self, in_class: bool) -> str:
        p, i = self.pattern, self.i
        if i + 1 >= len(p):
            raise self.fail("trailing \\")
        c = p[i + 1]
        self.i = i + 2
        if c.isdigit():
            octal = re.match(r"[0-7]{1,3}", p[i + 1:i + 4])
            if c in "89" or octal is None or (c != "0" and len(octal.group(0)) == 1):
                raise self.fail(f"invalid escape sequence: \\{c} (backreferences are not supported)")
            self.i = i + 1 + len(octal.group(0))
            return _octal_or_hex(int(octal.group(0), 8))
        if c == "x":
            if p.startswith("{", i + 2):
                end = p.find("}", i + 3)
                digits = p[i + 3:end] if end > 0 else ""
                if not digits or not re.fullmatch(r"[0-9A-Fa-f]+", digits) or int(digits, 16) > 0x10FFFF:
                    raise self.fail(f"invalid escape sequence: {p[i:end + 1 if end > 0 else len(p)]}")
                self.i = end + 1
                return _octal_or_hex(int(digits, 16))
            digits = p[i + 2:i + 4]
            if not re.fullmatch(r"[0-9A-Fa-f]{2}", digits):
                raise self.fail(f"invalid escape sequence: {p[i:i + 4]}")
            self.i = i + 4
            return "\\x" + digits
        if c == "Q" and not in_class:
            end = p.find("\\E", i + 2)
            literal = p[i + 2:] if end < 0 else p[i + 2:end]
            self.i = len(p) if end < 0 else end + 2
            return "(?:" + re.escape(literal) + ")" if literal else "(?:)"
        if c in "pP":
            raise self.fail(f"Unicode classes (\\{c}) are not supported by kgroup's coordinator")
        if c in _SHARED_ESCAPES:
            return "\\" + c
        if not in_class:
            if c in "AbB":
                return "\\" + c
            if c == "z":
                return "\\Z"
        if c.isascii() and not c.isalnum():
            return re.escape(c)  # an escaped punctuation character is itself
        raise self.fail(f"invalid escape sequence: \\{c}")

    def char_class(self) -> str:
        p = self.pattern
        self.i += 1
        parts = ["["]
        if p.startswith("^", self.i):
            parts.append("^")
            self.i += 1
        first = True
        while True:
            if self.i >= len(p):
                raise self.fail("missing closing ]")
            c = p[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "\\":
                parts.append(self.escape(in_class=True))
            elif c == "[" and p.startswith("[:", self.i):
                end = p.find(":]", self.i + 2)
                name = p[self.i + 2:end] if end > 0 else ""
                if name.startswith("^"):
                    raise self.fail(f"negated POSIX classes ([:{name}:]) are not supported by kgroup")
                if name not in _POSIX_CLASSES:
                    raise self.fail(f"invalid character class range: [:{name}:]")
                parts.append(_POSIX_CLASSES[name])
                self.i = end + 2
            elif c in "[&~|":
                # Literal in RE2; Python warns of future set operations: spelled escaped.
                parts.append("\\" + c)
                self.i += 1
            else:
                parts.append(c)
                self.i += 1
        parts.append("]")
        return "".join(parts)


def compile_topic_regex(pattern: str) -> "re.Pattern[str]":
    """``pattern`` as RE2/J reads it, compiled for ``re.fullmatch``; :class:`InvalidTopicRegex` if RE2/J
    refuses it (or it needs what ``re`` lacks)."""
    try:
        translated = _Translator(pattern).run()
        return re.compile(translated, re.ASCII)
    except re.error as error:
        raise InvalidTopicRegex(str(error)) from None


def resolve_topic_regexes(regexes: Iterable[str], topics: Iterable[str]) -> dict[str, frozenset[str]]:
    """Each regex -> the topics whose whole name it matches (Kafka's refreshRegularExpressions: one pass
    over the topics for every regex of a group).  A regex that no longer compiles resolves to nothing,
    as Kafka logs and ignores one."""
    compiled: Mapping[str, "re.Pattern[str]"] = {}
    matched: dict[str, set[str]] = {}
    for regex in regexes:
        matched[regex] = set()
        try:
            compiled = {**compiled, regex: compile_topic_regex(regex)}
        except InvalidTopicRegex:
            continue
    for topic in topics:
        for regex, pattern in compiled.items():
            if pattern.fullmatch(topic):
                matched[regex].add(topic)
    return {regex: frozenset(names) for regex, names in matched.items()}
