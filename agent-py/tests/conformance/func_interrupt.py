"""Functional API with a checkpointer: `interrupt()` in an entrypoint and in a task; the
resumed run replays finished tasks from the checkpoint instead of running them again."""

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

calls = []


@task
def write_essay(topic: str) -> str:
    calls.append(("write_essay", topic))
    return f"An essay about {topic}"


@task
def polish(text: str) -> str:
    calls.append(("polish", text))
    return text.upper()


@entrypoint(checkpointer=InMemorySaver())
def review(topic: str) -> dict:
    essay = write_essay(topic).result()
    answer = interrupt(["review", essay])
    polished = polish(essay).result()
    second = interrupt("sure?")
    return {"essay": polished, "answer": answer, "second": second}


config = {"configurable": {"thread_id": "1"}}
def show(chunk):
    if "__interrupt__" in chunk:
        return {"__interrupt__": [i.value for i in chunk["__interrupt__"]]}
    return chunk


for chunk in review.stream("cats", config):
    print("chunk", show(chunk))
print("next", review.get_state(config).next)
for chunk in review.stream(Command(resume="ok"), config):
    print("chunk", show(chunk))
print(review.invoke(Command(resume="yes"), config))
print("calls", calls)


@task
def ask(question: str) -> str:
    calls.append(("ask", question))
    return interrupt(question)


@entrypoint(checkpointer=InMemorySaver())
def quiz(n: int) -> list:
    first = ask("first?").result()
    return [first, n]


calls.clear()
config = {"configurable": {"thread_id": "2"}}
out = quiz.invoke(3, config)
print(sorted(out), [i.value for i in out["__interrupt__"]])
print(quiz.invoke(Command(resume="answer"), config))
print("calls", calls)
