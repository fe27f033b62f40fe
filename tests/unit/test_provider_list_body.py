"""The provider list's serialised template against plain json.dumps."""

from __future__ import annotations

import pytest

from placement import microversion, responses
from placement.kept import Texts
from placement.objects import provider_filter
from placement.rendering import resource_providers as rendering
from placement.objects.resource_provider import ResourceProvider

ROOT = "c6b1f3e2-0d4a-4a0e-9a51-3f7a9d2b8e10"
PROVIDERS = [
    ResourceProvider(
        id=1, uuid=ROOT, name='a "quoted" name, {braces}, \\ and \u00e9',
        generation=7, parent_uuid=None, root_uuid=ROOT, parent_id=None,
        root_id=1, created_at=None, updated_at=None),
    ResourceProvider(
        id=2, uuid="5f0e6c1d-9b2a-4f8e-8c3d-2a1b0c9d8e7f", name="child",
        generation=0, parent_uuid=ROOT, root_uuid=ROOT, parent_id=1,
        root_id=1, created_at=None, updated_at=None),
]


def _list_body(providers, version, script_name):
    """The whole body the list handler writes for these providers."""
    listed = [provider_filter.ListedProvider("text-%d" % p.id, p) for p in providers]
    return b"".join(rendering.listed_body(listed, version, script_name, Texts()))


@pytest.mark.parametrize("version", [v for v, _ in microversion.VERSIONS])
@pytest.mark.parametrize("script_name", ["", "/placement", "/odd{0}%20mount",
                                         "/MARK-uuid-f0e1d2c3"])
def test_same_bytes_as_rendering_each_provider(version, script_name):
    expected = responses.dumps({"resource_providers": [
        rendering.render_provider(p, version, script_name) for p in PROVIDERS]})
    assert _list_body(PROVIDERS, version, script_name) == expected


def test_empty_list():
    assert _list_body([], (1, 39), "") == b'{"resource_providers": []}'


def test_listed_providers_keep_their_text_per_microversion_and_mount():
    listed = [provider_filter.ListedProvider("text-%d" % p.id, p) for p in PROVIDERS]
    texts = Texts()

    def body(version, script_name):
        return b"".join(rendering.listed_body(listed, version, script_name, texts))

    assert body((1, 39), "/placement") == _list_body(
        PROVIDERS, (1, 39), "/placement")
    # The kept text is what the next list writes.
    shape, = texts._by_key[listed[0].key]
    texts.put(listed[0].key, shape, b'{"kept": true}')
    assert b'{"kept": true}' in body((1, 39), "/placement")
    # Another microversion or mount point writes its own.
    assert body((1, 13), "/placement") == _list_body(
        PROVIDERS, (1, 13), "/placement")
    assert body((1, 39), "") == _list_body(PROVIDERS, (1, 39), "")
