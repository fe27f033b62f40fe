"""The JSON of providers as ``/resource_providers`` shows them.

:func:`render_provider` gives one provider as data; a list of them
(thousands, each with up to six links) is written as text by
:func:`listed_body`, byte for byte what ``json.dumps`` writes for the
rendered providers.
"""

from __future__ import annotations

import json
from typing import Any

from placement.kept import Texts
from placement.objects import provider_filter
from placement.objects import resource_provider as rp_obj
from placement.rendering import joined
from placement.routes import provider_url

# The links a provider shows, by the microversion that added each.
_LINKS: tuple[tuple[tuple[int, int], str], ...] = (
    ((1, 0), "inventories"),
    ((1, 0), "usages"),
    ((1, 1), "aggregates"),
    ((1, 6), "traits"),
    ((1, 11), "allocations"),
)
NESTED_SINCE = (1, 14)


def render_provider(provider: rp_obj.ResourceProvider, version: tuple[int, int],
                    script_name: str = "") -> dict[str, Any]:
    """A provider as the API shows it at ``version``."""
    url = script_name + provider_url(provider.uuid)
    links = [{"rel": "self", "href": url}]
    links += [{"rel": rel, "href": "%s/%s" % (url, rel)}
              for since, rel in _LINKS if version >= since]
    data: dict[str, Any] = {
        "uuid": provider.uuid,
        "name": provider.name,
        "generation": provider.generation,
        "links": links,
    }
    if version >= NESTED_SINCE:
        data["parent_provider_uuid"] = provider.parent_uuid
        data["root_provider_uuid"] = provider.root_uuid
    return data


# Stand-ins for a provider's fields in the serialised template of
# :func:`_provider_texts`: characters that URL quoting and JSON leave alone, in
# words no provider's uuid or URL prefix holds.
_MARKS = {field: "MARK-%s-f0e1d2c3" % field
          for field in ("uuid", "name", "generation", "parent", "root")}


def _provider_texts(providers: list[rp_obj.ResourceProvider],
                    version: tuple[int, int], script_name: str) -> list[str]:
    """The JSON text of each provider of a list, byte for byte what
    json.dumps would write for the rendered provider.

    Lists run to thousands of providers, each with up to six links; one
    provider serialised with stand-in fields becomes a format string, so
    each provider costs one ``str.format`` instead of building and dumping
    a dict of lists of dicts.
    """
    if "MARK-" in script_name:
        # The stand-ins would be ambiguous; such mount points are theory.
        return [json.dumps(render_provider(p, version, script_name))
                for p in providers]
    sample = rp_obj.ResourceProvider(
        id=0, uuid=_MARKS["uuid"], name=_MARKS["name"], generation=0,
        parent_uuid=_MARKS["parent"], root_uuid=_MARKS["root"], parent_id=None,
        root_id=0, created_at=None, updated_at=None)
    rendered = render_provider(sample, version, script_name)
    rendered["generation"] = _MARKS["generation"]
    template = json.dumps(rendered).replace(
        "{", "{{").replace("}", "}}")
    for field, mark in _MARKS.items():
        # Whole string values take JSON (quotes, null); a uuid inside an
        # href is spliced into the string.
        template = template.replace('"%s"' % mark, "{%s}" % field)
        template = template.replace(mark, "{%s_text}" % field)
    dumps = json.dumps
    return [template.format(
        uuid='"%s"' % p.uuid, uuid_text=p.uuid, name=dumps(p.name),
        generation=p.generation,
        parent=dumps(p.parent_uuid),
        root='"%s"' % p.root_uuid) for p in providers]


def listed_body(listed: list[provider_filter.ListedProvider],
                version: tuple[int, int], script_name: str, texts: Texts
                ) -> list[bytes]:
    """The JSON of a provider list, in parts.  The list keeps providers
    that have not changed (see :mod:`placement.objects.provider_filter`);
    their texts at this microversion and mount point are kept in
    ``texts``, under each listed provider's key."""
    # A string: its hash is computed once, not at every lookup.
    shape = "provider list at %d.%d under %s" % (*version, script_name)
    written: list[bytes | None] = [texts.get(known.key, shape) for known in listed]
    missing = [i for i, text in enumerate(written) if text is None]
    if missing:
        # The texts not kept, written together (one template for all).
        fresh = _provider_texts([listed[i].provider for i in missing], version,
                                script_name)
        for i, text in zip(missing, fresh, strict=True):
            encoded = written[i] = text.encode()
            texts.put(listed[i].key, shape, encoded)
    return [b'{"resource_providers": [', *joined(written),  # type: ignore[arg-type]
            b"]}"]
