"""`ManagedValue`: a state annotation whose value the run computes for each task
(`Annotated[int, RemainingStepsManager]`); it is no key of the state, nodes read it."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

V = TypeVar("V")


class ManagedValue(Generic[V]):
    @staticmethod
    def get(scratchpad: Any) -> V:
        raise NotImplementedError


def is_managed_value(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, ManagedValue)
