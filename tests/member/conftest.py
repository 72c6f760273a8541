import pickle

import pytest

from kgroup.core.member.classic import codec


@pytest.fixture(autouse=True)
def pickle_codec(monkeypatch, request):
    """Pure member tests don't depend on the wire module: subscriptions travel pickled.

    A test module that sets ``REAL_CODEC = True`` uses kgroup.wire instead.
    """
    if getattr(request.module, "REAL_CODEC", False):
        return
    monkeypatch.setattr(codec, "encode_subscription", pickle.dumps)
    monkeypatch.setattr(codec, "decode_subscription", pickle.loads)
    monkeypatch.setattr(codec, "encode_assignment", pickle.dumps)
    monkeypatch.setattr(codec, "decode_assignment", pickle.loads)
