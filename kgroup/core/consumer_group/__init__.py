"""The KIP-848 consumer group in the in-memory coordinator (Kafka's modern.consumer package).

* :mod:`.member` - a member as a frozen value and its reconciliation states;
* :mod:`.reconciliation` - CurrentAssignmentBuilder: one member's step towards the target;
* :mod:`.records` - the records a consumer group writes;
* :mod:`.group` - the group: epochs, members, target assignment, partition epochs;
* :mod:`.group_invariants` - the group's invariant recount (for tests);
* :mod:`.subscription_changes` - the subscriptions one member's change would leave;
* :mod:`.heartbeat_checks` - what a heartbeat must carry before any group is looked at; its epoch;
  which member it is for;
* :mod:`.target_assignment` - TargetAssignmentBuilder: the assignor's new target for the members;
* :mod:`.describe` - the ConsumerGroupDescribe answer;
* :mod:`.topic_regex` - RE2/J regexes on Python's ``re``, matched against whole topic names;
* :mod:`.regex_subscriptions` - when a group's regexes are resolved, and what that changes;
* :mod:`.member_timers` - the member deadlines: session, rebalance, classic join and sync;
* :mod:`.classic_members` - JoinGroup / SyncGroup / Heartbeat / LeaveGroup of classic members
  inside a consumer group (online migration);
* :mod:`.manager` - the ConsumerGroupHeartbeat / ConsumerGroupDescribe handlers; it owns the groups.
"""
