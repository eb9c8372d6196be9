"""`RemainingSteps` and `IsLastStep`, as LangGraph computes them: from the task's step and
the step the recursion limit stops at (`stop`). agent-core counts the running step in its
`remaining_steps`; LangGraph's `stop - step` leaves it out, so `stop` is one less here."""

from __future__ import annotations

from typing import Annotated, Any

from agentgraph.managed.base import ManagedValue

__all__ = ("IsLastStep", "RemainingSteps", "IsLastStepManager", "RemainingStepsManager")


class Steps:
    """The task's `step` and the run's `stop` (LangGraph's scratchpad fields)."""

    __slots__ = ("step", "stop")

    def __init__(self, step: int, stop: int) -> None:
        self.step = step
        self.stop = stop

    @classmethod
    def of(cls, scope: Any) -> "Steps":
        step = scope.step
        return cls(step, step + scope.remaining_steps - 1)


class IsLastStepManager(ManagedValue[bool]):
    @staticmethod
    def get(scratchpad: Any) -> bool:
        return scratchpad.step == scratchpad.stop - 1


IsLastStep = Annotated[bool, IsLastStepManager]


class RemainingStepsManager(ManagedValue[int]):
    @staticmethod
    def get(scratchpad: Any) -> int:
        return scratchpad.stop - scratchpad.step


RemainingSteps = Annotated[int, RemainingStepsManager]
