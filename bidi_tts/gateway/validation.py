"""Request validation as the SageMaker runtime does it, before any connection to the container.

Constraints from the service models: ``EndpointName`` and ``TargetVariant`` at most 63 characters
matching ``^[a-zA-Z0-9](-*[a-zA-Z0-9])*`` (botocore's sagemaker-runtime service-2.json; the
pattern is anchored only at its start there, and the service applies it to the whole value);
``ModelInvocationPath`` at most 100 characters matching ``[A-Za-z0-9\\-._]+(?:/[A-Za-z0-9\\-._]+)*``
(so no leading slash) and ``ModelQueryString`` at most 2048 characters of ``key=value(&key=value)*``
(sagemakerruntimehttp2's model); ``CustomAttributes`` at most 1024 ASCII characters. Problems are
worded like AWS's validation messages ("Value ... at 'x' failed to satisfy constraint: ...").
"""

from __future__ import annotations

import re

NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*"
NAME_MAX = 63
PATH_PATTERN = r"[A-Za-z0-9\-._]+(?:/[A-Za-z0-9\-._]+)*"
PATH_MAX = 100
QUERY_PATTERN = r"[^&=]+=[^&=]*(?:&[^&=]+=[^&=]*)*"  # key=value(&key=value)*
QUERY_MAX = 2048
CUSTOM_ATTRIBUTES_MAX = 1024

_NAME = re.compile(NAME_PATTERN)
_PATH = re.compile(PATH_PATTERN)
_QUERY = re.compile(QUERY_PATTERN)


def _check(field: str, value: str | None, regex: re.Pattern[str], pattern: str, limit: int) -> list[str]:
    if value is None:
        return []
    problems = []
    if len(value) > limit:
        problems.append(f"Value at '{field}' failed to satisfy constraint: Member must have length less "
                        f"than or equal to {limit}")
    if regex.fullmatch(value) is None:
        shown = value if len(value) <= 120 else value[:117] + "..."
        problems.append(f"Value '{shown}' at '{field}' failed to satisfy constraint: Member must satisfy "
                        f"regular expression pattern: {pattern}")
    return problems


def name_problems(endpoint_name: str, target_variant: str | None) -> list[str]:
    return (_check("endpointName", endpoint_name, _NAME, NAME_PATTERN, NAME_MAX)
            + _check("targetVariant", target_variant, _NAME, NAME_PATTERN, NAME_MAX))


def bidi_request_problems(endpoint_name: str, target_variant: str | None, invocation_path: str | None,
                          query_string: str | None) -> list[str]:
    """What is wrong with an InvokeEndpointWithBidirectionalStream request (empty: nothing)."""
    return (name_problems(endpoint_name, target_variant)
            + _check("modelInvocationPath", invocation_path, _PATH, PATH_PATTERN, PATH_MAX)
            + _check("modelQueryString", query_string, _QUERY, QUERY_PATTERN, QUERY_MAX))


def custom_attributes_problems(value: str | None) -> list[str]:
    if value is None:
        return []
    if len(value) > CUSTOM_ATTRIBUTES_MAX:
        return [f"Value at 'customAttributes' failed to satisfy constraint: Member must have length less "
                f"than or equal to {CUSTOM_ATTRIBUTES_MAX}"]
    if not value.isascii():
        return ["Value at 'customAttributes' failed to satisfy constraint: Member must satisfy regular "
                "expression pattern: \\p{ASCII}*"]
    return []


def message(problems: list[str]) -> str:
    """AWS's summary form: "N validation error(s) detected: A; B"."""
    count = len(problems)
    return f"{count} validation error{'s' if count > 1 else ''} detected: " + "; ".join(problems)
