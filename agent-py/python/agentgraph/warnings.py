"""LangGraph's deprecation warnings (`langgraph.warnings`), so code that filters or raises
them by class runs on agentgraph too."""

from __future__ import annotations

__all__ = (
    "LangGraphDeprecationWarning",
    "LangGraphDeprecatedSinceV05",
    "LangGraphDeprecatedSinceV10",
    "LangGraphDeprecatedSinceV11",
)


class LangGraphDeprecationWarning(DeprecationWarning):
    """A deprecation: `since` is the (major, minor) version it started in, `expected_removal`
    the one it goes away in (the next major by default)."""

    message: str
    since: tuple[int, int]
    expected_removal: tuple[int, int]

    def __init__(
        self,
        message: str,
        *args: object,
        since: tuple[int, int],
        expected_removal: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(message, *args)
        self.message = message.rstrip(".")
        self.since = since
        self.expected_removal = expected_removal if expected_removal is not None else (since[0] + 1, 0)

    def __str__(self) -> str:
        since, removal = self.since, self.expected_removal
        return (
            f"{self.message}. Deprecated in LangGraph V{since[0]}.{since[1]}"
            f" to be removed in V{removal[0]}.{removal[1]}."
        )


class LangGraphDeprecatedSinceV05(LangGraphDeprecationWarning):
    """Deprecated since LangGraph 0.5, removed in 2.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(0, 5), expected_removal=(2, 0))


class LangGraphDeprecatedSinceV10(LangGraphDeprecationWarning):
    """Deprecated since LangGraph 1.0, removed in 2.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(1, 0), expected_removal=(2, 0))


class LangGraphDeprecatedSinceV11(LangGraphDeprecationWarning):
    """Deprecated since LangGraph 1.1, removed in 3.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(1, 1), expected_removal=(3, 0))
