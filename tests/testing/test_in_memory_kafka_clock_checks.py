"""InMemoryKafka's mock-clock-only calls refuse the real clock with a ConfigError (project issue 10:
bad input gets a typed error, never a bare KeyError / TypeError)."""
import pytest

from kgroup.errors import ConfigError
from kgroup.testing import InMemoryKafka


def test_remove_member_on_the_real_clock_is_a_config_error():
    kafka = InMemoryKafka(1, offsets_partitions=1)
    try:
        with pytest.raises(ConfigError, match="needs a MockClock"):
            kafka.remove_member("never-made")
    finally:
        kafka.close()


def test_member_on_the_real_clock_is_a_config_error():
    kafka = InMemoryKafka(1, offsets_partitions=1)
    try:
        with pytest.raises(ConfigError, match="needs a MockClock"):
            kafka.member("a", "g", ["t"])
    finally:
        kafka.close()
