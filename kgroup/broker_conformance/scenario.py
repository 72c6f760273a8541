"""Scenarios: short scripts of requests, each with a unique id, an area and the Kafka source it follows.

A scenario is a function of a :class:`ScenarioContext`.  It opens connections, sends requests built
with kafka-python's ``kafka.protocol`` classes and *records* the answers it wants compared
(``ctx.call`` / ``ctx.receive``), in order, under a label.  Helpers (creating a topic, finding the
coordinator) wait with explicit bounds and record nothing.  The context normalises every recorded
answer (:mod:`kgroup.broker_conformance.normalise`); the list of ``[label, value]`` steps is what is
compared with the recording.
"""
from __future__ import annotations

import secrets
import time
import uuid
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import attrs
from kafka.protocol.admin import CreateTopicsRequest, DescribeGroupsRequest
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from kgroup.broker_conformance.connection import (
    AnswerTimeoutError, BrokerConnection, ConnectionClosedError, UndecodableAnswerError,
)
from kgroup.broker_conformance.normalise import Normaliser
from kgroup.errors import KGroupError

__all__ = ["AREAS", "SCENARIOS", "ConformanceScenario", "ScenarioContext", "ScenarioError", "scenario"]

#: Areas, in report order.
AREAS = ("classic", "static", "offsets", "groups-admin", "consumer-848", "broker", "transactions")

#: How long any single answer may take (a parked JoinGroup included: rebalance timeouts in the
#: scripts are at most a few seconds).
ANSWER_BOUND_S = 15.0
#: How long a helper retries until the broker is ready (the offsets topic created, a leader elected).
READY_BOUND_S = 30.0

NONE = 0
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
RETRIABLE_COORDINATOR_ERRORS = (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR)


class _NoConsumerGroups(Exception):
    """The broker answered the probe with an error: it has no KIP-848 groups to wait for."""


class ScenarioError(KGroupError):
    """A scenario could not go on (the broker is not ready within the bound, an answer is missing)."""


@attrs.frozen
class ConformanceScenario:
    scenario_id: str
    area: str
    description: str
    run: Callable[["ScenarioContext"], None]


SCENARIOS: Dict[str, ConformanceScenario] = {}


ScenarioScript = Callable[["ScenarioContext"], None]


def scenario(scenario_id: str, area: str, description: str) -> Callable[[ScenarioScript], ScenarioScript]:
    """Register ``function`` under ``scenario_id`` (unique) in ``area``."""
    if area not in AREAS:
        raise KGroupError(f"scenario {scenario_id}: unknown area {area!r}")

    def register(function: Callable[["ScenarioContext"], None]) -> Callable[["ScenarioContext"], None]:
        if scenario_id in SCENARIOS:
            raise KGroupError(f"two scenarios share the id {scenario_id!r}")
        SCENARIOS[scenario_id] = ConformanceScenario(scenario_id, area, description, function)
        return function
    return register


class ScenarioContext:
    """What a scenario script sees: connections, recorded calls, bounded waits, fresh names."""

    def __init__(self, bootstrap: str, scenario_id: str) -> None:
        self.bootstrap = bootstrap.split(",")[0].strip()
        self.scenario_id = scenario_id
        self.run_token = secrets.token_hex(4)
        self.normaliser = Normaliser(self.run_token)
        self.steps: List[List[Any]] = []
        self._connections: List[BrokerConnection] = []
        self._clients = 0
        self._helpers: Dict[str, BrokerConnection] = {}
        self._member_ids_made = 0

    # -- names -----------------------------------------------------------------------------------

    def name(self, kind: str = "g") -> str:
        """A group or topic name nobody else used: ``cf-<token>-<kind>``."""
        return f"cf-{self.run_token}-{kind}"

    def new_member_id(self) -> str:
        """A client-chosen member id (KIP-848 v1: the client generates it), numbered at once."""
        # Ordered by creation (the counter leads), random after: assignors that sort members by id
        # then see the script's order on every broker and every run.
        self._member_ids_made += 1
        member_id = str(uuid.UUID(int=(self._member_ids_made << 96) | uuid.uuid4().int >> 32))
        self.normaliser.member(member_id)
        return member_id

    # -- connections and recorded calls --------------------------------------------------------------

    def connect(self, address: Optional[str] = None, client_id: Optional[str] = None) -> BrokerConnection:
        self._clients += 1
        connection = BrokerConnection(address or self.bootstrap, client_id or f"c{self._clients}")
        self._connections.append(connection)
        return connection

    def call(self, connection: BrokerConnection, request: Any, label: Optional[str] = None,
             view: Optional[Callable[[Any], Any]] = None) -> Any:
        """Send ``request``, record its normalised answer (through ``view`` when given), return the
        decoded answer, or None when the broker closed the connection (recorded as ``closed``)."""
        connection.send(request)
        return self.receive(connection, label or _label(request), view)

    def send(self, connection: BrokerConnection, request: Any) -> None:
        """Send without waiting: the answer is read later with :meth:`receive`."""
        connection.send(request)

    def receive(self, connection: BrokerConnection, label: str, view: Optional[Callable[[Any], Any]] = None,
                timeout_s: float = ANSWER_BOUND_S) -> Any:
        try:
            response = connection.receive(timeout_s)
        except ConnectionClosedError:
            self.steps.append([label, "closed"])
            return None
        except UndecodableAnswerError as error:
            self.steps.append([label, "undecodable answer"])
            raise ScenarioError(str(error)) from None
        except AnswerTimeoutError:
            self.steps.append([label, f"no answer within {timeout_s:g} s"])
            raise ScenarioError(f"{label}: no answer within {timeout_s:g} s") from None
        value = self.normaliser.normalise(response)
        self.steps.append([label, view(value) if view is not None else value])
        return response

    def record_pending(self, connection: BrokerConnection, label: str, wait_s: float = 0.3) -> None:
        """Record whether the answer to the request in flight is still parked after ``wait_s``."""
        self.steps.append([label, "answered" if connection.answered_within(wait_s) else "parked"])

    def note(self, label: str, value: Any) -> None:
        self.steps.append([label, value])

    # -- waits -------------------------------------------------------------------------------------

    @staticmethod
    def sleep(seconds: float) -> None:
        """Sleep past a timeout (the scripts sleep at least twice the timeout they wait out)."""
        time.sleep(seconds)

    def wait_until(self, condition: Callable[[], bool], what: str, bound_s: float = READY_BOUND_S,
                   every_s: float = 0.05) -> None:
        deadline = time.monotonic() + bound_s
        while not condition():
            if time.monotonic() > deadline:
                raise ScenarioError(f"{what}: not within {bound_s:g} s")
            time.sleep(every_s)

    # -- helpers (not recorded) ------------------------------------------------------------------------

    def coordinator(self, group_id: str) -> str:
        """The address of ``group_id``'s coordinator; retries FindCoordinator until it answers NONE
        (the first lookup on a fresh Kafka creates ``__consumer_offsets``)."""
        found: List[str] = []

        def ask() -> bool:
            with_connection = self._helper_connection()
            answer = with_connection.request(FindCoordinatorRequest[3](key=group_id, key_type=0))
            if answer.error_code == NONE:
                address = f"{answer.host}:{answer.port}"
                # The partition may still be loading: ask the group's state until the answer is not
                # "not coordinator / loading / not available".
                probe = BrokerConnection(address, "conformance-helper")
                try:
                    described = probe.request(DescribeGroupsRequest[5](groups=[group_id],
                                                                       include_authorized_operations=False))
                finally:
                    probe.close()
                if described.groups[0].error_code in RETRIABLE_COORDINATOR_ERRORS:
                    return False
                found.append(address)
                return True
            if answer.error_code not in RETRIABLE_COORDINATOR_ERRORS:
                raise ScenarioError(f"FindCoordinator({group_id}) answered error {answer.error_code}")
            return False
        self.wait_until(ask, f"a coordinator for {group_id}", every_s=0.1)
        return found[0]

    def transaction_coordinator(self, transactional_id: str) -> str:
        """The address of ``transactional_id``'s transaction coordinator, once it has loaded: retries
        FindCoordinator (key type 1) until NONE (the first lookup on a fresh Kafka creates
        ``__transaction_state``), then DescribeTransactions (no side effect) until it is not
        "not coordinator / loading / not available"."""
        from kafka.protocol.admin.transactions import DescribeTransactionsRequest

        found: List[str] = []

        def ask() -> bool:
            answer = self._helper_connection().request(
                FindCoordinatorRequest[3](key=transactional_id, key_type=1))
            if answer.error_code in RETRIABLE_COORDINATOR_ERRORS:
                return False
            if answer.error_code != NONE:
                raise ScenarioError(f"FindCoordinator({transactional_id}, TRANSACTION) answered error "
                                    f"{answer.error_code}")
            address = f"{answer.host}:{answer.port}"
            described = self._helper_connection(address).request(
                DescribeTransactionsRequest[0](transactional_ids=[transactional_id]))
            if described.transaction_states[0].error_code in RETRIABLE_COORDINATOR_ERRORS:
                return False
            found.append(address)
            return True
        self.wait_until(ask, f"a transaction coordinator for {transactional_id}", every_s=0.1)
        return found[0]

    def wait_group_state(self, group_id: str, *states: str) -> None:
        """Wait (not recorded) until DescribeGroups says ``group_id`` is in one of ``states``: orders a
        request on one connection after what another connection's request started."""
        connection = self._helper_connection(self.coordinator(group_id))

        def reached() -> bool:
            answer = connection.request(DescribeGroupsRequest[5](groups=[group_id],
                                                                 include_authorized_operations=False))
            return answer.groups[0].group_state in states
        self.wait_until(reached, f"group {group_id} in state {'/'.join(states)}", bound_s=10.0, every_s=0.02)

    def group_connection(self, group_id: str, client_id: Optional[str] = None) -> BrokerConnection:
        """A new connection to ``group_id``'s coordinator."""
        return self.connect(self.coordinator(group_id), client_id)

    def create_topic(self, topic: str, partitions: int = 1, configs: Mapping[str, str] = {}) -> uuid.UUID:
        """Create ``topic`` (with topic ``configs``) and wait until every partition has a leader; return
        its topic id."""
        connection = self._helper_connection()
        config_class = CreateTopicsRequest[4].CreatableTopic.CreatableTopicConfig
        spec = CreateTopicsRequest[4].CreatableTopic(
            name=topic, num_partitions=partitions, replication_factor=1, assignments=[],
            configs=[config_class(name=k, value=v) for k, v in configs.items()])
        created = connection.request(CreateTopicsRequest[4](topics=[spec], timeout_ms=10_000,
                                                            validate_only=False))
        if created.topics[0].error_code not in (NONE, 36):  # 36: TOPIC_ALREADY_EXISTS
            raise ScenarioError(f"CreateTopics({topic}) answered error {created.topics[0].error_code}")
        topic_id: List[uuid.UUID] = []

        def ready() -> bool:
            metadata = connection.request(MetadataRequest[12](
                topics=[MetadataRequest[12].MetadataRequestTopic(name=topic, topic_id=uuid.UUID(int=0))],
                allow_auto_topic_creation=False, include_topic_authorized_operations=False))
            entry = metadata.topics[0]
            if entry.error_code != NONE or len(entry.partitions) != partitions:
                return False
            if any(p.error_code != NONE or p.leader_id < 0 for p in entry.partitions):
                return False
            topic_id.append(entry.topic_id)
            return True
        self.wait_until(ready, f"leaders for {topic}'s {partitions} partitions")
        self.normaliser.learn_topic_id(topic_id[0], topic)
        self._wait_coordinator_sees(topic, partitions)
        return topic_id[0]

    def _wait_coordinator_sees(self, topic: str, partitions: int) -> None:
        """Wait until a KIP-848 group coordinator assigns ``topic``'s partitions: Kafka's coordinator
        learns new topics from its metadata image a moment after Metadata lists them, and a member
        that subscribes before that gets nothing until the group's next metadata refresh.  A
        throw-away group (its name has no run token, so no view of this run lists it) joins, looks,
        leaves and is deleted.  A broker without KIP-848 skips the wait."""
        from kafka.protocol.admin import DeleteGroupsRequest

        from kgroup.wire.kafka_python import ConsumerGroupHeartbeatRequestStruct

        probe_group = f"conformance-probe-{uuid.uuid4().hex[:12]}"
        connection = self._helper_connection(self.coordinator(probe_group))
        member_id = str(uuid.uuid4())

        def assigned() -> bool:
            answer = connection.request(ConsumerGroupHeartbeatRequestStruct(
                version=1,
                group_id=probe_group, member_id=member_id, member_epoch=0, instance_id=None, rack_id=None,
                rebalance_timeout_ms=1_000, subscribed_topic_names=[topic], subscribed_topic_regex=None,
                server_assignor=None, topic_partitions=[]))
            if answer.error_code != NONE:
                raise _NoConsumerGroups()
            owned = answer.assignment.topic_partitions if answer.assignment else []
            count = sum(len(t.partitions) for t in owned)
            connection.request(ConsumerGroupHeartbeatRequestStruct(
                version=1,
                group_id=probe_group, member_id=member_id, member_epoch=-1, instance_id=None, rack_id=None,
                rebalance_timeout_ms=-1, subscribed_topic_names=None, subscribed_topic_regex=None,
                server_assignor=None, topic_partitions=None))
            return count == partitions
        try:
            self.wait_until(assigned, f"the group coordinator assigning {topic}", bound_s=10.0, every_s=0.05)
            connection.request(DeleteGroupsRequest[2](groups_names=[probe_group]))
        except _NoConsumerGroups:
            return
        except (ConnectionClosedError, OSError):
            # A broker without KIP-848 may close the connection on the probe: open a new helper next time.
            self._forget_helper(connection)

    def _helper_connection(self, address: Optional[str] = None) -> BrokerConnection:
        address = address or self.bootstrap
        if address not in self._helpers:
            self._helpers[address] = BrokerConnection(address, "conformance-helper")
            self._connections.append(self._helpers[address])
        return self._helpers[address]

    def _forget_helper(self, connection: BrokerConnection) -> None:
        connection.close()
        self._helpers = {a: c for a, c in self._helpers.items() if c is not connection}

    def close(self) -> None:
        for connection in self._connections:
            connection.close()


def _label(request: Any) -> str:
    # The schema's name (Kafka's), not the class's: kgroup's KIP-848 structs carry a suffix.
    return f"{type(request).name.replace('Request', '')} v{request.API_VERSION}"


def run_scenario(bootstrap: str, chosen: ConformanceScenario) -> Tuple[List[List[Any]], Optional[str]]:
    """Run one scenario: (its recorded steps, None) or (the steps so far, why it stopped)."""
    context = ScenarioContext(bootstrap, chosen.scenario_id)
    problem: Optional[str] = None
    try:
        chosen.run(context)
    except (KGroupError, OSError) as error:  # ScenarioError and the connection errors
        problem = str(error) or type(error).__name__
    finally:
        context.close()
    return context.steps, problem
