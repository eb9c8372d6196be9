"""The graph's entry and exit, named as LangGraph names them."""

START = "__start__"
END = "__end__"
