"""``kgroup conformance``: exit 0 when every chosen scenario matches, 1 on a divergence, 2 on bad
arguments; one-line errors, no traceback."""
from __future__ import annotations

import json

import pytest

from kgroup.broker_conformance.kgroup_server import running_kgroup_server
from kgroup.broker_conformance.known_divergences import KNOWN_DIVERGENCES
from kgroup.cli import main


@pytest.fixture(scope="module")
def kgroup_broker():
    with running_kgroup_server() as server:
        yield server.bootstrap_servers


def test_matching_scenarios_exit_0(kgroup_broker, capsys):
    assert main(["conformance", "--bootstrap", kgroup_broker, "--only", "classic.heartbeat.stable.*"]) == 0
    out = capsys.readouterr().out
    assert "ok   classic.heartbeat.stable.v4" in out and "total" in out


def test_a_divergence_exits_1_with_its_diff(kgroup_broker, capsys):
    # A scenario the known-divergence table lists (fixes take scenarios off it, so it is read from there).
    divergent = sorted(KNOWN_DIVERGENCES)[0]
    assert main(["conformance", "--bootstrap", kgroup_broker, "--only", divergent]) == 1
    out = capsys.readouterr().out
    assert f"DIFF {divergent}" in out and ": expected " in out


def test_a_doctored_recording_makes_a_matching_broker_diverge(kgroup_broker, tmp_path, capsys):
    from kgroup.broker_conformance.runner import load_recording

    recording = load_recording()
    steps = recording["scenarios"]["classic.heartbeat.unknown-member"]["steps"]
    steps[-1][1]["error_code"] = 99
    path = tmp_path / "doctored.json"
    path.write_text(json.dumps(recording))
    assert main(["conformance", "--bootstrap", kgroup_broker, "--record", str(path),
                 "--only", "classic.heartbeat.unknown-member"]) == 1
    assert "expected 99, got 25" in capsys.readouterr().out


@pytest.mark.parametrize("arguments, message", [
    (["--bootstrap", "no-port"], "not a HOST:PORT address"),
    (["--bootstrap", "127.0.0.1:1", "--only", "no-such-scenario"], "no scenario matches"),
    (["--bootstrap", "127.0.0.1:1", "--record", "/nonexistent/recording.json"], "no recording at"),
])
def test_bad_arguments_exit_2_with_one_line(arguments, message, capsys):
    assert main(["conformance", *arguments]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_missing_bootstrap_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["conformance"])
    assert exit_info.value.code == 2


def test_unreachable_broker_is_one_line_and_exit_2(capsys):
    arguments = ["--bootstrap", "127.0.0.1:1", "--only", "classic.heartbeat.unknown-group"]
    assert main(["conformance", *arguments]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kgroup: cannot connect to 127.0.0.1:1") and len(err.strip().splitlines()) == 1


def test_a_stopped_scenario_says_why():
    from kgroup.broker_conformance.runner import compare_steps

    diffs = compare_steps([["A Heartbeat v4", {"error_code": 25}]],
                          [["stopped", "[Errno 111] Connection refused"]])
    assert diffs == ["step 1 A Heartbeat v4: the scenario stopped: [Errno 111] Connection refused"]


def test_list_prints_ids_and_descriptions(capsys):
    assert main(["conformance", "--bootstrap", "127.0.0.1:1", "--only", "static.join.*", "--list"]) == 0
    out = capsys.readouterr().out
    assert "static.join.v5  [static]" in out and len(out.strip().splitlines()) == 5
