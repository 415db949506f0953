"""JSON <-> model conversion, for our models and kubernetes.client models alike.

``serialize(obj)`` gives a JSON-ready value with the API's camelCase keys, as
``kubernetes.client.ApiClient.sanitize_for_serialization`` does: a model becomes a dict keyed by
its ``attribute_map``, leaving out attributes that are None; plain dicts and lists are walked
(their None values kept, so a merge patch can carry nulls); tuples and sets become lists;
datetimes become RFC 3339 strings (UTC written with ``Z``; a naive datetime is taken as UTC);
dates become ``YYYY-MM-DD``. Anything else that is not a JSON scalar raises TypeError.

``deserialize(data, klass)`` builds models from such JSON. ``klass`` is a class or a type string:
a model name (``'KubeflowOrgV1PyTorchJob'``, ``'V1Pod'``), ``'list[...]'``, ``'dict(str, ...)'``,
``'str'``/``'int'``/``'float'``/``'bool'``/``'object'``/``'date'``/``'datetime'``. ``data`` may also
be a JSON text (str or bytes) when ``klass`` is a model or container type. It never raises on what
a server may send: unknown keys are ignored, a JSON key missing (or null) leaves the attribute
None, required attributes are not enforced while building (the objects validate again
afterwards), a value of the wrong shape or an unknown type name is kept as the plain JSON value,
and a datetime string that does not parse stays a string. Datetimes come back timezone-aware
(a string without an offset is taken as UTC). Where the JSON key is absent, the snake_case
attribute name is accepted too, so ``deserialize(obj.to_dict(), cls)`` rebuilds ``obj``.
"""

import datetime
import json
import re

from .base import Model
from .kube_compat import kube_model
from .kubeflow import KUBEFLOW_MODELS

_LIST = re.compile(r"list\[(.*)\]$")
_DICT = re.compile(r"dict\(([^,]*), (.*)\)$")
_PRIMITIVES = {"str": str, "int": int, "long": int, "float": float, "bool": bool}
_UTC = datetime.timezone.utc


class _Validation:
    """The only part of a ``Configuration`` that models read."""

    def __init__(self, enabled):
        self.client_side_validation = enabled


_NO_VALIDATION = _Validation(False)
_VALIDATION = _Validation(True)


def resolve_model(name):
    """The model class named by a type string (ours first, then kubernetes'), or None."""
    return KUBEFLOW_MODELS.get(name) or kube_model(name)


# ---------------------------------------------------------------------------------------------
# serialize

def _rfc3339(value):
    if value.tzinfo is None or value.utcoffset() is None:
        value = value.replace(tzinfo=_UTC)
    if value.utcoffset() == datetime.timedelta(0):
        return value.replace(tzinfo=None).isoformat() + "Z"
    return value.isoformat()


def serialize(obj):
    """``obj`` (model, dict, list, scalar, datetime) as JSON-ready data with camelCase keys."""
    if obj is None or isinstance(obj, (str, bool, int, float, bytes)):
        return obj
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [serialize(item) for item in obj]
    if isinstance(obj, datetime.datetime):
        return _rfc3339(obj)
    if isinstance(obj, datetime.date):
        return obj.isoformat()
    if isinstance(obj, dict):
        return {key: serialize(value) for key, value in obj.items()}
    types = getattr(obj, "openapi_types", None)
    keys = getattr(obj, "attribute_map", None)
    if isinstance(types, dict) and isinstance(keys, dict):
        out = {}
        for attr in types:
            value = getattr(obj, attr, None)
            if value is not None:
                out[keys.get(attr, attr)] = serialize(value)
        return out
    raise TypeError(f"cannot serialize a {type(obj).__name__} to JSON")


# ---------------------------------------------------------------------------------------------
# deserialize

def _is_structured(klass):
    if isinstance(klass, str):
        return bool(_LIST.match(klass) or _DICT.match(klass) or resolve_model(klass))
    return isinstance(getattr(klass, "openapi_types", None), dict)


def deserialize(data, klass):
    """Models built from camelCase JSON ``data`` as type ``klass`` (class or type string)."""
    if isinstance(data, (str, bytes, bytearray)) and _is_structured(klass):
        try:
            data = json.loads(data)
        except ValueError:
            return data
    return _decode(data, klass)


def _decode(data, klass):
    if data is None:
        return None
    if isinstance(klass, str):
        match = _LIST.match(klass)
        if match:
            return [_decode(item, match.group(1)) for item in data] if isinstance(data, list) \
                else data
        match = _DICT.match(klass)
        if match:
            return {key: _decode(value, match.group(2)) for key, value in data.items()} \
                if isinstance(data, dict) else data
        if klass in _PRIMITIVES:
            return _primitive(data, _PRIMITIVES[klass])
        if klass == "datetime":
            return _datetime(data)
        if klass == "date":
            return _date(data)
        if klass == "object":
            return data
        klass = resolve_model(klass)
        if klass is None:
            return data
    if klass in (str, int, float, bool):
        return _primitive(data, klass)
    if klass is datetime.datetime:
        return _datetime(data)
    if klass is datetime.date:
        return _date(data)
    if klass is object:
        return data
    return _model(data, klass)


def _primitive(data, kind):
    if isinstance(data, (dict, list)):
        return data
    if isinstance(data, kind) and not (kind is int and isinstance(data, bool)):
        return data
    if kind is bool and isinstance(data, str):
        lowered = data.strip().lower()
        return lowered == "true" if lowered in ("true", "false") else data
    try:
        return kind(data)
    except (TypeError, ValueError, OverflowError):
        return data


def _datetime(data):
    if isinstance(data, datetime.datetime):
        value = data
    elif isinstance(data, str):
        text = data.strip()
        if text[-1:] in ("z", "Z"):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.datetime.fromisoformat(text)
        except ValueError:
            return data
    else:
        return data
    return value if value.tzinfo is not None else value.replace(tzinfo=_UTC)


def _date(data):
    if isinstance(data, datetime.date):
        return data
    try:
        return datetime.date.fromisoformat(str(data)[:10])
    except ValueError:
        return data


def _model(data, cls):
    types = getattr(cls, "openapi_types", None)
    keys = getattr(cls, "attribute_map", None) or {}
    if not isinstance(data, dict) or not isinstance(types, dict) or not types:
        return data
    kwargs = {}
    for attr, type_name in types.items():
        key = keys.get(attr, attr)
        if key in data:
            kwargs[attr] = _decode(data[key], type_name)
        elif attr in data:
            kwargs[attr] = _decode(data[attr], type_name)
    try:
        obj = cls(local_vars_configuration=_NO_VALIDATION, **kwargs)
    except TypeError:  # a class without that keyword
        try:
            return cls(**kwargs)
        except (TypeError, ValueError):
            return data
    obj.local_vars_configuration = None if isinstance(obj, Model) else _VALIDATION
    return obj
