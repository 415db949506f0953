"""The one base class behind every model of the SDK (ours and the kubernetes stand-ins).

Contract (the openapi-generator model shape that upstream ``kubeflow-training`` 1.9.4 and the
``kubernetes`` client use, so code written against either keeps working):

* class attributes ``openapi_types`` (attribute -> type string such as ``'int'``, ``'datetime'``,
  ``'V1PodTemplateSpec'``, ``'list[KubeflowOrgV1JobCondition]'``,
  ``'dict(str, KubeflowOrgV1ReplicaSpec)'``) and ``attribute_map`` (attribute -> camelCase JSON key);
  ``required_attributes`` (ours) names the attributes that must not be None;
* ``__init__`` takes every attribute by keyword (default None) and also positionally in
  ``openapi_types`` order, as the generated models do, plus ``local_vars_configuration``: None or
  any object with a ``client_side_validation`` attribute (a kubernetes or upstream
  ``Configuration`` works); it is stored and only that flag is read;
* a property per attribute, the value kept in ``self._<attribute>``; setting a required attribute
  to None raises ``ValueError("Invalid value for `<attr>`, must not be `None`")`` unless validation
  is off, and the constructor assigns required attributes unconditionally, so leaving one out
  raises too (first missing one in ``openapi_types`` order), exactly as upstream;
* ``to_dict()`` gives snake_case keys (``to_dict(serialize=True)``: the JSON keys), every attribute
  present (None included), recursing through lists, dicts and nested models (kubernetes objects
  via their own ``to_dict``); ``to_str()``/``__repr__`` pretty-print it;
* ``==`` holds for instances of the same class with equal ``to_dict()``; ``!=`` is its negation.
  Like upstream, models are unhashable.
"""

import pprint

_REQUIRED_MESSAGE = "Invalid value for `{}`, must not be `None`"


def _validating(config):
    return True if config is None else bool(getattr(config, "client_side_validation", True))


def _property(attr, type_name, required):
    slot = "_" + attr

    def fget(self):
        return self.__dict__.get(slot)

    def fset(self, value):
        if required and value is None and _validating(self.local_vars_configuration):
            raise ValueError(_REQUIRED_MESSAGE.format(attr))
        self.__dict__[slot] = value

    note = " (required)" if required else ""
    return property(fget, fset, doc=f"`{attr}`: {type_name}{note}")


def _plain(value, serialize):
    """to_dict's conversion of one value: nested models become dicts, containers are walked."""
    if isinstance(value, list):
        return [_plain(v, serialize) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v, serialize) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v, serialize) for k, v in value.items()}
    if isinstance(value, Model):
        return value.to_dict(serialize)
    if hasattr(value, "to_dict"):  # a kubernetes.client model
        return value.to_dict()
    return value


class Model:
    """Base of all SDK models; subclasses set ``openapi_types``, ``attribute_map`` and
    ``required_attributes``, and get properties and behaviour from here."""

    openapi_types = {}
    attribute_map = {}
    required_attributes = frozenset()
    discriminator = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        unknown = set(cls.required_attributes) - set(cls.openapi_types)
        if unknown or set(cls.openapi_types) != set(cls.attribute_map):
            raise TypeError(f"{cls.__name__}: openapi_types, attribute_map and "
                            f"required_attributes disagree ({sorted(unknown)})")
        for attr, type_name in cls.openapi_types.items():
            if attr not in cls.__dict__:
                setattr(cls, attr, _property(attr, type_name, attr in cls.required_attributes))

    def __init__(self, *args, local_vars_configuration=None, **kwargs):
        names = list(self.openapi_types)
        name = type(self).__name__
        if len(args) > len(names):
            raise TypeError(f"{name}() takes at most {len(names)} positional arguments "
                            f"({len(args)} given)")
        for attr, value in zip(names, args):
            if attr in kwargs:
                raise TypeError(f"{name}() got multiple values for argument '{attr}'")
            kwargs[attr] = value
        for attr in kwargs:
            if attr not in self.openapi_types:
                raise TypeError(f"{name}() got an unexpected keyword argument '{attr}'")
        self.local_vars_configuration = local_vars_configuration
        for attr in names:
            self.__dict__["_" + attr] = None
        for attr in names:
            value = kwargs.get(attr)
            if value is not None or attr in self.required_attributes:
                setattr(self, attr, value)

    def to_dict(self, serialize=False):
        """The attributes as a dict (snake_case keys; JSON keys when ``serialize``)."""
        out = {}
        for attr in self.openapi_types:
            key = self.attribute_map[attr] if serialize else attr
            out[key] = _plain(getattr(self, attr), serialize)
        return out

    def to_str(self):
        return pprint.pformat(self.to_dict())

    def __repr__(self):
        return self.to_str()

    def __eq__(self, other):
        if not isinstance(other, type(self)):
            return False
        return self.to_dict() == other.to_dict()

    def __ne__(self, other):
        return not self == other
