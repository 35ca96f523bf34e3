"""Turning dictionaries into environment variables and command lines."""
import collections
import collections.abc
import json

SplitResultSpec = collections.namedtuple("SplitResultSpec", "included excluded")


def _text(value):
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("latin1")
    return str(value)


def to_env_vars(mapping):
    """{"hosts": ["algo-1"]} -> {"SM_HOSTS": '["algo-1"]'}.

    Names are upper-cased with ``SM_`` in front; strings stay as they are,
    None becomes "", anything else compact JSON with sorted keys.
    """
    def name(key):
        return "SM_%s" % str(key).upper() if key else ""

    def value(v):
        if isinstance(v, bytes):
            return v.decode("latin1")
        if v is None:
            return ""
        if isinstance(v, str):
            return v
        return json.dumps(v, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=True)

    return {name(k): value(v) for k, v in mapping.items()}


def to_cmd_args(mapping):
    """{"epochs": 10, "lr": 0.1} -> ["--epochs", "10", "--lr", "0.1"].

    Keys sorted; one-letter keys get a single dash; a dictionary value is
    written ``k=v,k2=v2``.
    """
    out = []
    for key in sorted(mapping.keys()):
        flag = _text(key)
        if flag:
            flag = ("--" if len(flag) > 1 else "-") + flag
        v = mapping[key]
        if hasattr(v, "items"):
            v = ",".join("%s=%s" % (k, x) for k, x in sorted(v.items()))
        else:
            v = _text(v)
        out += [flag, v]
    return out


def split_by_criteria(dictionary, keys=None, prefix=None):
    """Splits dictionary into the items whose key is in keys or starts with
    prefix (``included``) and the others (``excluded``)."""
    keys = set(keys or [])
    inc = {k: v for k, v in dictionary.items()
           if k in keys or (prefix and k.startswith(prefix))}
    exc = {k: v for k, v in dictionary.items() if k not in inc}
    return SplitResultSpec(included=inc, excluded=exc)


class MappingMixin(collections.abc.Mapping):
    """Makes an object's public properties readable as a dictionary."""

    def properties(self):
        """The names of the class's properties, sorted."""
        return sorted(n for n in dir(type(self))
                      if isinstance(getattr(type(self), n, None), property))

    def __getitem__(self, key):
        if key not in self.properties():
            raise KeyError(key)
        return getattr(self, key)

    def __len__(self):
        return len(self.properties())

    def __iter__(self):
        return iter(self.properties())

    def __str__(self):
        return str(dict(self))
