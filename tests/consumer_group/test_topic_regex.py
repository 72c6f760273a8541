"""RE2/J syntax on Python's re (kgroup.core.consumer_group.topic_regex).

What RE2/J accepts (its syntax page, github.com/google/re2/wiki/Syntax, which RE2/J follows) must match
the same topic names here; what it refuses must be InvalidTopicRegex, never a pattern Python happens to
run.  The few RE2 features Python's re lacks are refused with a message naming kgroup (a documented
departure).
"""
from __future__ import annotations

import pytest

from kgroup.core.consumer_group.topic_regex import (
    InvalidTopicRegex, compile_topic_regex, resolve_topic_regexes,
)

# (RE2 pattern, names that must match the whole pattern, names that must not)
ACCEPTED = [
    ("^orders-.*", ["orders-1", "orders-"], ["xorders-1", "order"]),
    ("orders", ["orders"], ["orders-1", "xorders"]),  # whole name, as Matcher.matches()
    ("foo|bar", ["foo", "bar"], ["foobar"]),
    ("a(?i)b", ["ab", "aB"], ["Ab"]),  # RE2 scopes a mid-pattern flag to the rest of the group
    ("(?i:A)b", ["ab", "Ab"], ["aB"]),
    ("[[:alpha:]]+-[[:digit:]]", ["abc-1"], ["ab1-1"]),
    (r"\Qa.b\E", ["a.b"], ["axb"]),
    (r"t\z", ["t"], []),
    (r"\x{41}\x42\101", ["ABA"], []),
    ("(?P<x>a)(?<y>b)", ["ab"], []),
    ("a{2,3}", ["aa", "aaa"], ["a", "aaaa"]),
    ("a{,3}", ["a{,3}"], ["aaa"]),  # not a repetition in RE2: literal braces
    ("a{1000}", ["a" * 1000], []),
    ("[]a]+", ["]a"], []),
    ("a*?b", ["aab"], []),
    ("a??b", ["ab", "b"], []),
    (r"\d\w\s?\.", ["1_."], []),
    ("[a-c&&]+", ["a&c"], []),  # '&&' is literal in RE2, a future set operation to Python
    ("a}", ["a}"], []),
    ("(?:ab)+", ["abab"], ["aba"]),  # a plain non-capturing group
    # franz-go's KIP-848 regex subscription (consumer_group_848.go wraps each topic regex so the
    # broker matches anywhere in the name); its Test848RegexBrokerResolves sends this shape
    (".*(?:(?:p-orders)|(?:__consumer_offsets)).*", ["p-orders", "p-orders-v2", "__consumer_offsets"],
     ["p-order"]),
]

REFUSED = [
    r"(a)\1",          # backreference
    "(?P=x)",          # named backreference
    "(?=a)", "(?!a)", "(?<=a)", "(?<!a)",  # lookaround
    "(?>a)",           # atomic group
    "(?(1)a|b)",       # conditional
    "(?#note)",        # comment
    "a*+", "a++", "a?+", "a{2}+",  # possessive
    "a**", "a{2}{3}", "a???",      # doubled repetition
    "a{1001}", "a{2,1001}", "a{3,2}",
    "(?x)a", "(?a)a", "(?u)a", "(?L)a", "(?)", "(?-)a", "(?-:a)", "(?i-:a)",
    r"a\Z", r"\u0041", r"\g<1>", r"\N{DASH}", r"\8",
    "(", ")", "[a", "*a", "a|*",
    r"\pL", r"\p{Greek}", "(?U)a", "[[:^alpha:]]", "[[:nope:]]",  # kgroup: no re equivalent
]


@pytest.mark.parametrize("pattern,matching,other", ACCEPTED)
def test_accepted_patterns_match_whole_names_as_re2j_does(pattern, matching, other):
    compiled = compile_topic_regex(pattern)
    for name in matching:
        assert compiled.fullmatch(name), (pattern, name)
    for name in other:
        assert not compiled.fullmatch(name), (pattern, name)


@pytest.mark.parametrize("pattern", REFUSED)
def test_refused_patterns_raise_invalid_topic_regex(pattern):
    with pytest.raises(InvalidTopicRegex):
        compile_topic_regex(pattern)


def test_resolve_matches_every_regex_in_one_pass_and_ignores_a_bad_one():
    """Kafka's refreshRegularExpressions: all of a group's regexes over the topics at once; one that no
    longer compiles resolves to nothing (logged and ignored there)."""
    resolved = resolve_topic_regexes(["foo.*", "bar", "[bad"], ["foo", "foo2", "bar", "barx"])
    assert resolved == {"foo.*": frozenset({"foo", "foo2"}), "bar": frozenset({"bar"}), "[bad": frozenset()}
