"""The graph's entry and exit, named as LangGraph names them."""

START = "__start__"
END = "__end__"

# The channel LangGraph keeps pending `Send`s in (checkpoints name it; tools that read
# LangGraph's checkpoints import it from here).
TASKS = "__pregel_tasks"
