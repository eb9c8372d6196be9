"""Names of `langgraph.errors` and `langgraph.warnings` code imports: `GraphDrained`,
`is_invalid_resume`, and LangGraph's deprecation warning classes."""

import warnings

from langgraph.errors import GraphBubbleUp, GraphDrained, is_invalid_resume
from langgraph.warnings import (
    LangGraphDeprecatedSinceV05,
    LangGraphDeprecatedSinceV10,
    LangGraphDeprecatedSinceV11,
    LangGraphDeprecationWarning,
)

drained = GraphDrained("sigterm")
print(isinstance(drained, GraphBubbleUp), drained.reason, str(drained))
print(GraphDrained().reason)
print(is_invalid_resume(ValueError("x")), is_invalid_resume(drained))

for cls in (LangGraphDeprecatedSinceV05, LangGraphDeprecatedSinceV10, LangGraphDeprecatedSinceV11):
    w = cls("Old thing.")
    print(cls.__name__, issubclass(cls, DeprecationWarning), w.since, w.expected_removal, str(w))
w = LangGraphDeprecationWarning("x", since=(1, 2))
print(w.expected_removal, w.message)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    warnings.warn(LangGraphDeprecatedSinceV10("gone soon"))
print([type(c.message).__name__ for c in caught])
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", category=LangGraphDeprecatedSinceV10)
    warnings.warn(LangGraphDeprecatedSinceV10("ignored"))
print("ok")
