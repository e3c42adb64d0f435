"""Python values that BFCL's classes keep (objects with back references, tuples, sets, int-keyed
dicts, datetimes, decimals) as JSON, and back.

The same functions run inside every adapted module (``adapt.py`` inlines this file, so it obeys the
environment policy) and in the factory, where the executor encodes BFCL's own instances with them,
so both sides describe a state in one form.

Tagged values are dicts with one ``$`` key: ``{"$tuple": [...]}``, ``{"$set": [...]}``,
``{"$dict": [[key, value], ...]}`` (a dict with a non-string key or a key starting with ``$``),
``{"$datetime": iso}``, ``{"$date": iso}``, ``{"$time": iso}``, ``{"$timedelta": [days, seconds,
microseconds]}``, ``{"$decimal": text}``, ``{"$float": "nan" | "inf" | "-inf"}``, ``{"$object":
class, "id": n, "fields": {...}}`` and ``{"$ref": n}`` (the object ``n`` again, one id space per
encoded value). A ``kind`` is ``(class name, class, fields(obj) -> dict, blank() -> obj,
fill(obj, fields) -> None)``: the adapted module writes one per class with literal attribute names,
since the policy allows no dynamic attribute access.
"""

import datetime
import decimal
import math
from typing import Any

CODEC_TAGS = (
    "$tuple",
    "$set",
    "$dict",
    "$datetime",
    "$date",
    "$time",
    "$timedelta",
    "$decimal",
    "$float",
    "$object",
    "$ref",
)


def encode_value(value: object, kinds: tuple, seen: list) -> object:
    """``value`` as JSON; ``seen`` lists the objects encoded so far (their ids)."""
    if value is None or isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, list):
        return [encode_value(item, kinds, seen) for item in value]
    if isinstance(value, dict):
        return codec_encode_dict(value, kinds, seen)
    if isinstance(value, tuple):
        return {"$tuple": [encode_value(item, kinds, seen) for item in value]}
    if isinstance(value, set | frozenset):
        items = [encode_value(item, kinds, seen) for item in value]
        return {"$set": codec_sorted(items)}
    plain = codec_encode_plain(value)
    if plain is not None:
        return plain
    return codec_encode_object(value, kinds, seen)


def codec_encode_dict(value: dict, kinds: tuple, seen: list) -> object:
    if all(isinstance(key, str) and not key.startswith("$") for key in value):
        return {key: encode_value(item, kinds, seen) for key, item in value.items()}
    pairs = [[encode_value(k, kinds, seen), encode_value(v, kinds, seen)] for k, v in value.items()]
    return {"$dict": pairs}


def codec_encode_plain(value: object) -> object:
    """Datetimes and decimals; None for anything else."""
    if isinstance(value, datetime.datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"$date": value.isoformat()}
    if isinstance(value, datetime.time):
        return {"$time": value.isoformat()}
    if isinstance(value, datetime.timedelta):
        return {"$timedelta": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    return None


def codec_encode_object(value: object, kinds: tuple, seen: list) -> object:
    for index, known in enumerate(seen):
        if known is value:
            return {"$ref": index}
    for name, kind_class, fields, _blank, _fill in kinds:
        if type(value) is kind_class:
            seen.append(value)
            index = len(seen) - 1
            encoded = {key: encode_value(item, kinds, seen) for key, item in fields(value).items()}
            return {"$object": name, "id": index, "fields": encoded}
    raise TypeError(f"cannot encode {value!r}: its class has no kind")


def codec_sorted(items: list) -> list:
    """Set members in a fixed order (by their JSON text), so a set encodes one way."""
    keyed = [(codec_key(item), item) for item in items]
    keyed.sort(key=lambda pair: pair[0])
    return [item for _key, item in keyed]


def codec_key(item: object) -> str:
    if isinstance(item, dict):
        inner = ",".join(f"{codec_key(k)}:{codec_key(v)}" for k, v in sorted(item.items()))
        return "{" + inner + "}"
    if isinstance(item, list):
        return "[" + ",".join(codec_key(x) for x in item) + "]"
    if isinstance(item, bool):
        return f"bool:{item!r}"
    if isinstance(item, int | float):
        return f"number:{item!r}"
    return f"text:{item!r}"


def codec_tag(data: object) -> str | None:
    """The tag of a tagged value, or None for plain JSON."""
    if isinstance(data, dict) and data:
        first = next(iter(data))
        if first in CODEC_TAGS and (first == "$object" or len(data) == 1):
            return first
    return None


def decode_value(data: object, kinds: tuple) -> object:
    """The Python value ``data`` encodes; objects are made first, then filled, so a reference
    may come before or after the object it names (key order does not matter)."""
    table: dict = {}
    codec_make_objects(data, kinds, table)
    return codec_decode(data, kinds, table)


def codec_make_objects(data: object, kinds: tuple, table: dict) -> None:
    if isinstance(data, list):
        for item in data:
            codec_make_objects(item, kinds, table)
    elif isinstance(data, dict):
        if codec_tag(data) == "$object":
            for name, _cls, _fields, blank, _fill in kinds:
                if name == data["$object"]:
                    table[data["id"]] = blank()
            if data["id"] not in table:
                raise TypeError(f"unknown object class {data['$object']!r}")
            codec_make_objects(data["fields"], kinds, table)
        else:
            for item in data.values():
                codec_make_objects(item, kinds, table)


def codec_decode(data: object, kinds: tuple, table: dict) -> Any:
    if isinstance(data, list):
        return [codec_decode(item, kinds, table) for item in data]
    if not isinstance(data, dict):
        return data
    tag = codec_tag(data)
    if tag is None:
        return {key: codec_decode(item, kinds, table) for key, item in data.items()}
    if tag == "$object":
        made = table[data["id"]]
        fields = {k: codec_decode(v, kinds, table) for k, v in data["fields"].items()}
        for name, _cls, _fields, _blank, fill in kinds:
            if name == data["$object"]:
                fill(made, fields)
        return made
    if tag == "$ref":
        return table[data["$ref"]]
    return codec_decode_tagged(tag, data[tag], kinds, table)


def codec_decode_tagged(tag: str, body: Any, kinds: tuple, table: dict) -> object:
    if tag == "$tuple":
        return tuple(codec_decode(body, kinds, table))
    if tag == "$set":
        return set(codec_decode(body, kinds, table))
    if tag == "$dict":
        return {codec_decode(k, kinds, table): codec_decode(v, kinds, table) for k, v in body}
    if tag == "$datetime":
        return datetime.datetime.fromisoformat(body)
    if tag == "$date":
        return datetime.date.fromisoformat(body)
    if tag == "$time":
        return datetime.time.fromisoformat(body)
    if tag == "$timedelta":
        return datetime.timedelta(days=body[0], seconds=body[1], microseconds=body[2])
    if tag == "$decimal":
        return decimal.Decimal(body)
    return float(body)


def encode_fields(fields: dict, kinds: tuple) -> dict:
    """An instance's attributes as one JSON object (one id space for all of them)."""
    seen: list = []
    return {name: encode_value(value, kinds, seen) for name, value in fields.items()}


def comparable_value(data: object, eq_fields: dict, objects: dict | None = None) -> Any:
    """``data`` reduced to what ``==`` on the decoded value compares: an object keeps the fields
    its class's ``__eq__`` reads (``eq_fields[class]``), references are resolved, sets and
    ``$dict`` pairs are put in a fixed order. Two encodings are equal under ``==`` here when
    their decoded values are."""
    if objects is None:
        objects = {}
        codec_index_objects(data, objects)
    if isinstance(data, list):
        return [comparable_value(item, eq_fields, objects) for item in data]
    if not isinstance(data, dict):
        return data
    tag = codec_tag(data)
    if tag == "$ref":
        return comparable_value(objects[data["$ref"]], eq_fields, objects)
    if tag == "$object":
        kept = eq_fields.get(data["$object"])
        fields = data["fields"]
        names = sorted(fields) if kept is None else kept
        inner = {name: comparable_value(fields.get(name), eq_fields, objects) for name in names}
        return {"$object": data["$object"], "fields": inner}
    if tag in ("$set", "$dict"):
        return {tag: codec_sorted(comparable_value(data[tag], eq_fields, objects))}
    return {key: comparable_value(item, eq_fields, objects) for key, item in data.items()}


def codec_index_objects(data: object, objects: dict) -> None:
    if isinstance(data, list):
        for item in data:
            codec_index_objects(item, objects)
    elif isinstance(data, dict):
        if codec_tag(data) == "$object":
            objects[data["id"]] = data
        for item in data.values():
            codec_index_objects(item, objects)
