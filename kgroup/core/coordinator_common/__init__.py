"""What both group coordinators share: the classic one (:mod:`kgroup.core.coordinator`) and the KIP-848
consumer-group one (:mod:`kgroup.core.consumer_group`), after Kafka's coordinator-common module.

* :mod:`.config` - GroupCoordinatorConfig, the broker's ``group.*`` settings;
* :mod:`.records` - the records both group types write (offsets, the group tombstone);
* :mod:`.errors` - GroupInvariantViolation, raised by either group type;
* :mod:`.timer` - CoordinatorTimer: deadlines scheduled with the operation they run;
* :mod:`.context` - CoordinatorContext: what a group manager may ask of the coordinator hosting it.

It sits below both so that neither coordinator imports the other's package for them.
"""
