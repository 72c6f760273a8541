"""One module per Kafka API (issue 25 point 1): each module under kgroup/server/apis declares its API,
is named after it, and is in the one registry the engine, the frame decoder and ApiVersions read."""
from __future__ import annotations

import importlib
import pkgutil
import re

from kafka.protocol.api_key import ApiKey
from kafka.protocol.metadata import ApiVersionsRequest

import kgroup.server.apis as apis
from kgroup.server.apis import SERVED_APIS, SUPPORTED_VERSIONS
from kgroup.server.apis.definition import ServedApi

#: Modules of the package that are not an API: the definition and what several group codecs share.
_SHARED = {"definition", "group_answers", "txn_answers"}


def _snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _api_modules():
    for info in pkgutil.iter_modules(apis.__path__):
        if info.name not in _SHARED:
            yield info.name, importlib.import_module(f"{apis.__name__}.{info.name}")


def test_every_api_module_is_named_after_its_api_and_registered():
    modules = dict(_api_modules())
    assert modules, "no API module found"
    for name, module in modules.items():
        api = module.API
        assert isinstance(api, ServedApi), name
        assert name == _snake_case(api.key.name), f"{name}.py declares {api.key.name}"
        assert SERVED_APIS[api.key] is api, f"{name}.py is not in the registry"
    assert len(SERVED_APIS) == len(modules)


def test_request_and_response_classes_belong_to_the_api_key():
    for key, api in SERVED_APIS.items():
        assert api.request_class.API_KEY == int(key) and api.request_class.is_request()
        assert api.response_class.API_KEY == int(key) and not api.response_class.is_request()
        low, high = api.versions
        assert 0 <= low <= high <= api.request_class.max_version


def test_api_versions_answers_the_registry(make_engine):
    request = ApiVersionsRequest(version=3, client_software_name="t", client_software_version="1")
    answer = make_engine(brokers=1).call(request)
    assert {ApiKey(k.api_key): (k.min_version, k.max_version) for k in answer.api_keys} == SUPPORTED_VERSIONS
