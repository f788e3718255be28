"""A command-line value read as its config field's declared type, and a config with a field
replaced: what ``python -m gated_attention run --set FIELD=VALUE`` does (``cli``).

    parse_value   a Python literal, or the string
    coerce        a value (text or Python) as a declared type, or a ValueError naming the field
    override      a frozen config with one (dotted) field replaced, coerced, and checked
"""

from __future__ import annotations

import ast
import dataclasses
import math
import types
import typing
from typing import Any

TRUE_WORDS, FALSE_WORDS = ("true", "yes", "1"), ("false", "no", "0")  # a bool's, any case


def parse_value(text: str) -> Any:
    """A Python literal (1e-3, 16, (0, 1), True, None) or, failing that, the string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _describe(tp: Any) -> str:
    """``tp`` in words, for an error message."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        arms = [_describe(a) for a in args if a is not type(None)]
        return " or ".join(arms) + (" or none" if type(None) in args else "")
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a tuple of {_describe(args[0])} values, e.g. (1,2) or 1,2"
        return f"a tuple of {len(args)} values ({', '.join(_describe(a) for a in args)})"
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    return words.get(tp, getattr(tp, "__name__", str(tp)))


def _items(value: Any, field: str, tp: Any) -> list:
    """The items of a tuple value: a Python sequence, a literal, ``a,b`` or a single value."""
    if isinstance(value, tuple | list):
        return list(value)
    if not isinstance(value, str):
        return [value]
    text = value.strip()
    if text in ("", "()", "[]"):
        return []
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        nested = any(typing.get_origin(a) is tuple for a in typing.get_args(tp))
        if nested:
            raise ValueError(f"{field} must be {_describe(tp)}, got {value!r}") from None
        if text[0] + text[-1] in ("()", "[]"):
            text = text[1:-1]
        return [part.strip() for part in text.split(",") if part.strip()]
    return list(parsed) if isinstance(parsed, tuple | list) else [parsed]


def _scalar(value: Any, tp: type, field: str) -> Any:
    """``value`` (text or a Python value) as bool, int, float or str, or a ValueError."""
    bad = ValueError(f"{field} must be {_describe(tp)}, got {value!r}")
    text = value.strip() if isinstance(value, str) else None
    if tp is bool:
        if isinstance(value, bool):
            return value
        word = text.lower() if text is not None else str(value) if value in (0, 1) else None
        if word in TRUE_WORDS or word in FALSE_WORDS:
            return word in TRUE_WORDS
        accepted = "/".join(f"{t}/{f}" for t, f in zip(TRUE_WORDS, FALSE_WORDS, strict=True))
        raise ValueError(
            f"{field} must be true or false (accepted, any case: {accepted}), got {value!r}"
        )
    if tp is str:
        if text is None:
            raise bad
        literal = parse_value(text)
        return literal if isinstance(literal, str) else text
    if isinstance(value, bool):
        raise bad
    if text is not None:
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise bad from None
    if tp is int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, int):
            return value
        raise bad
    if isinstance(value, int | float):
        return float(value)
    raise bad


def coerce(value: Any, tp: Any, field: str = "value") -> Any:
    """``value`` (the text of ``--set``, or a Python value) as the declared type ``tp``.

    bool: true/false, yes/no, 1/0 (any case); int, float: a number (an int also from an
    integral float such as 1e4); tuple[X, ...], tuple[X, Y]: ``(a,b)``, ``a,b`` or one value;
    ``X | None``: ``none`` (any case) or an X; a dataclass: only an instance (set its fields
    instead); other types: ``parse_value``. A ValueError names ``field`` and what it accepts."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if type(None) in args and (
            value is None or (isinstance(value, str) and value.strip().lower() == "none")
        ):
            return None
        for arm in (a for a in args if a is not type(None)):
            try:
                return coerce(value, arm, field)
            except ValueError:
                pass
        raise ValueError(f"{field} must be {_describe(tp)}, got {value!r}")
    if origin is tuple:
        items = _items(value, field, tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(coerce(v, args[0], f"each item of {field}") for v in items)
        if len(items) != len(args):
            raise ValueError(f"{field} must be {_describe(tp)}, got {value!r}")
        return tuple(
            coerce(v, a, f"{field}[{k}]") for k, (v, a) in enumerate(zip(items, args, strict=True))
        )
    if tp in (bool, int, float, str):
        return _scalar(value, tp, field)
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        names = ", ".join(f.name for f in dataclasses.fields(tp))
        raise ValueError(f"{field} is a {tp.__name__}: set its fields ({field}.NAME=...): {names}")
    return parse_value(value) if isinstance(value, str) else value


def _field_types(config: Any) -> dict[str, Any]:
    """The declared types of a dataclass's fields (Any where they cannot be resolved)."""
    try:
        return typing.get_type_hints(type(config))
    except (NameError, TypeError):
        return {}


def override(config: Any, field: str, value: Any, *, _path: str = "") -> Any:
    """``config`` with the (dotted) ``field`` set to ``value``, coerced to its declared type: a
    new frozen config, checked by its __post_init__; a ValueError names a bad field or value."""
    head, _, rest = field.partition(".")
    where = _path + head
    if not dataclasses.is_dataclass(config):
        raise ValueError(f"cannot set {_path + field!r}: {type(config).__name__} has no fields")
    names = [f.name for f in dataclasses.fields(config)]
    if head not in names:
        raise ValueError(
            f"{type(config).__name__} has no field {head!r}; its fields: {', '.join(names)}"
        )
    if rest:
        value = override(getattr(config, head), rest, value, _path=where + ".")
    else:
        value = coerce(value, _field_types(config).get(head, Any), where)
    return dataclasses.replace(config, **{head: value})
