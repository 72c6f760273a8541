"""kgroup.client_suites.go_test_suite reads ``go tool test2json`` events: a testify suite (one Go test whose
subtests are the real tests, as confluent-kafka-go's TestIntegration) gets an outcome per subtest."""
from __future__ import annotations

import json

from kgroup.client_suites.go_test_suite import _outcomes


def _events(*events: tuple) -> str:
    def event(action: str, test: str, extra: object) -> dict:
        return {"Action": action, "Test": test, ("Output" if action == "output" else "Elapsed"): extra}
    return "\n".join(json.dumps(event(*e)) for e in events) + "\n"


EVENTS = _events(("output", "TestSuite/TestA", "a_test.go:10: boom\n"),
                 ("fail", "TestSuite/TestA", 0.5),
                 ("output", "TestSuite/TestB/case", "b_test.go:3: fine\n"),
                 ("pass", "TestSuite/TestB/case", 0.1),
                 ("pass", "TestSuite/TestB", 0.2),
                 ("fail", "TestSuite", 0.7),
                 ("pass", "TestPlain", 0.0))


def test_subtests_fold_into_their_top_level_test_by_default():
    outcomes = _outcomes(EVENTS)
    assert {name: o.action for name, o in outcomes.items()} == {"TestSuite": "fail", "TestPlain": "pass"}
    assert "a_test.go:10: boom" in outcomes["TestSuite"].output


def test_a_suites_direct_subtests_have_outcomes_of_their_own():
    outcomes = _outcomes(EVENTS, suites=("TestSuite",))
    assert {name: o.action for name, o in outcomes.items()} == {
        "TestSuite": "fail", "TestSuite/TestA": "fail", "TestSuite/TestB": "pass", "TestPlain": "pass"}
    assert outcomes["TestSuite/TestA"].output == "a_test.go:10: boom\n"
    assert outcomes["TestSuite/TestB"].output == "b_test.go:3: fine\n"  # a sub-subtest folds into it
    assert outcomes["TestSuite/TestA"].elapsed_s == 0.5
