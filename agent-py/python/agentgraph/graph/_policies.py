"""A node's `retry_policy` and `cache_policy`, as wrappers around its function.

Both run in Python, around the call agent-core makes: a retry needs LangGraph's predicate
over the Python exception (`retry_on`), and a cache key is what the policy's Python
`key_func` makes of the state dict. agent-core's own retry and cache layers take Rust
predicates and keys, so calling Python from them would only add a crossing per decision.

A cached result comes back as `CachedWrites` (a dict), which the native side reports in
the `updates` stream with LangGraph's `{"__metadata__": {"cached": True}}`.
"""

from __future__ import annotations

import asyncio
import functools
import random
import time
from collections.abc import Sequence
from typing import Any, Callable, Optional

from agentgraph.errors import GraphInterrupt


class CachedWrites(dict):
    """A node's writes read from the cache instead of running the node."""


def _policies(retry_policy: Any) -> list:
    if retry_policy is None:
        return []
    if isinstance(retry_policy, Sequence) and not hasattr(retry_policy, "_fields"):
        return list(retry_policy)
    return [retry_policy]


def _retries_on(policy: Any, exc: BaseException) -> bool:
    retry_on = policy.retry_on
    if isinstance(retry_on, Sequence):
        return isinstance(exc, tuple(retry_on))
    if isinstance(retry_on, type) and issubclass(retry_on, BaseException):
        return isinstance(exc, retry_on)
    if callable(retry_on):
        return bool(retry_on(exc))
    raise TypeError(
        "retry_on must be an Exception class, a list or tuple of Exception classes, or a callable"
    )


def _wait(policies: list, exc: Exception, failures: int) -> Optional[float]:
    """Seconds to wait before the next attempt, or `None` to give up (LangGraph's rule:
    the first policy whose `retry_on` takes the exception decides)."""
    if isinstance(exc, GraphInterrupt):
        return None
    policy = next((p for p in policies if _retries_on(p, exc)), None)
    if policy is None or failures >= policy.max_attempts:
        return None
    interval = min(policy.max_interval, policy.initial_interval * policy.backoff_factor ** (failures - 1))
    return interval + random.uniform(0, 1) if policy.jitter else interval


def _restart_attempt() -> None:
    from agentgraph._runtime import current

    current().restart_attempt()


def with_retry(func: Callable, retry_policy: Any, is_async: bool) -> Callable:
    policies = _policies(retry_policy)
    if not policies:
        return func
    if is_async:

        @functools.wraps(func)
        async def retried(*args: Any, **kwargs: Any) -> Any:
            failures = 0
            while True:
                try:
                    return await func(*args, **kwargs)
                except Exception as exc:
                    failures += 1
                    wait = _wait(policies, exc, failures)
                    if wait is None:
                        raise
                await asyncio.sleep(wait)
                _restart_attempt()

        return retried

    @functools.wraps(func)
    def retried(*args: Any, **kwargs: Any) -> Any:
        failures = 0
        while True:
            try:
                return func(*args, **kwargs)
            except Exception as exc:
                failures += 1
                wait = _wait(policies, exc, failures)
                if wait is None:
                    raise
            time.sleep(wait)
            _restart_attempt()

    return retried


def with_cache(name: str, func: Callable, policy: Any, cache: Any, is_async: bool) -> Callable:
    if policy is None or cache is None:
        return func

    def lookup(state: Any) -> tuple[Any, bool, Any]:
        key = policy.key_func(state)
        hit, value = cache.get(name, key)
        return key, hit, value

    def keep(key: Any, result: Any) -> Any:
        if isinstance(result, dict):
            cache.set(name, key, result, policy.ttl)
        return result

    if is_async:

        @functools.wraps(func)
        async def cached(*args: Any, **kwargs: Any) -> Any:
            key, hit, value = lookup(args[0])
            if hit:
                return CachedWrites(value)
            return keep(key, await func(*args, **kwargs))

        return cached

    @functools.wraps(func)
    def cached(*args: Any, **kwargs: Any) -> Any:
        key, hit, value = lookup(args[0])
        if hit:
            return CachedWrites(value)
        return keep(key, func(*args, **kwargs))

    return cached
