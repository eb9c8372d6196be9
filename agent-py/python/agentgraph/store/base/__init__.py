"""LangGraph's `langgraph.store.base`: the items a store holds, its four ops, and `BaseStore`,
whose calls (`get`, `put`, `search`, `delete`, `list_namespaces` and their `a` twins) are all
one-op batches, so a store implements only `batch`/`abatch`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any, Iterable, Literal, Mapping, NamedTuple, Optional, TypedDict, Union


class NotProvided:
    """An argument left out (`ttl`: the store's default), told apart from `None`."""

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_PROVIDED = NotProvided()


class Item:
    """A stored value: a dict under a namespace (a tuple of labels) and a key."""

    __slots__ = ("value", "key", "namespace", "created_at", "updated_at")

    def __init__(
        self,
        *,
        value: dict[str, Any],
        key: str,
        namespace: tuple[str, ...],
        created_at: datetime,
        updated_at: datetime,
    ) -> None:
        self.value = value
        self.key = key
        self.namespace = tuple(namespace)
        self.created_at = datetime.fromisoformat(created_at) if isinstance(created_at, str) else created_at
        self.updated_at = datetime.fromisoformat(updated_at) if isinstance(updated_at, str) else updated_at

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Item):
            return False
        return (
            self.value == other.value
            and self.key == other.key
            and self.namespace == other.namespace
            and self.created_at == other.created_at
            and self.updated_at == other.updated_at
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.key))

    def dict(self) -> dict:
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }

    def __repr__(self) -> str:
        return f"Item({', '.join(f'{k}={v!r}' for k, v in self.dict().items())})"


class SearchItem(Item):
    """An item a search found, with its similarity to the query (`None` without one)."""

    __slots__ = ("score",)

    def __init__(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime,
        updated_at: datetime,
        score: Optional[float] = None,
    ) -> None:
        super().__init__(value=value, key=key, namespace=namespace, created_at=created_at, updated_at=updated_at)
        self.score = score

    def dict(self) -> dict:
        out = super().dict()
        out["score"] = self.score
        return out


class GetOp(NamedTuple):
    namespace: tuple[str, ...]
    key: str
    refresh_ttl: bool = True


class SearchOp(NamedTuple):
    namespace_prefix: tuple[str, ...]
    filter: Optional[dict[str, Any]] = None
    limit: int = 10
    offset: int = 0
    query: Optional[str] = None
    refresh_ttl: bool = True


NamespacePath = tuple[str, ...]
NamespaceMatchType = Literal["prefix", "suffix"]


class MatchCondition(NamedTuple):
    match_type: NamespaceMatchType
    path: NamespacePath


class ListNamespacesOp(NamedTuple):
    match_conditions: Optional[tuple[MatchCondition, ...]] = None
    max_depth: Optional[int] = None
    limit: int = 100
    offset: int = 0


class PutOp(NamedTuple):
    namespace: tuple[str, ...]
    key: str
    value: Optional[Mapping[str, Any]]
    index: Union[Literal[False], list[str], None] = None
    ttl: Optional[float] = None


Op = Union[GetOp, SearchOp, PutOp, ListNamespacesOp]
Result = Union[Item, list[Item], list[SearchItem], list[tuple[str, ...]], None]


class InvalidNamespaceError(ValueError):
    """A namespace a store cannot hold."""


class TTLConfig(TypedDict, total=False):
    refresh_on_read: bool
    default_ttl: Optional[float]
    sweep_interval_minutes: Optional[int]


class IndexConfig(TypedDict, total=False):
    dims: int
    embed: Any
    fields: Optional[list[str]]


class BaseStore(ABC):
    """A store: `batch`/`abatch` of ops; the single calls are one-op batches."""

    supports_ttl: bool = False
    ttl_config: Optional[TTLConfig] = None

    __slots__ = ("__weakref__",)

    @abstractmethod
    def batch(self, ops: Iterable[Op]) -> list[Result]: ...

    @abstractmethod
    async def abatch(self, ops: Iterable[Op]) -> list[Result]: ...

    def get(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: Optional[bool] = None) -> Optional[Item]:
        return self.batch([_get(self, namespace, key, refresh_ttl)])[0]

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: Optional[str] = None,
        filter: Optional[dict[str, Any]] = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: Optional[bool] = None,
    ) -> list[SearchItem]:
        return self.batch([_search(self, namespace_prefix, query, filter, limit, offset, refresh_ttl)])[0]

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Union[Literal[False], list[str], None] = None,
        *,
        ttl: Union[float, None, NotProvided] = NOT_PROVIDED,
    ) -> None:
        self.batch([_put(self, namespace, key, value, index, ttl)])

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        _validate_labels(namespace)
        self.batch([PutOp(tuple(namespace), str(key), None, ttl=None)])

    def list_namespaces(
        self,
        *,
        prefix: Optional[NamespacePath] = None,
        suffix: Optional[NamespacePath] = None,
        max_depth: Optional[int] = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        return self.batch([_list(prefix, suffix, max_depth, limit, offset)])[0]

    async def aget(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: Optional[bool] = None) -> Optional[Item]:
        return (await self.abatch([_get(self, namespace, key, refresh_ttl)]))[0]

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: Optional[str] = None,
        filter: Optional[dict[str, Any]] = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: Optional[bool] = None,
    ) -> list[SearchItem]:
        return (await self.abatch([_search(self, namespace_prefix, query, filter, limit, offset, refresh_ttl)]))[0]

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Union[Literal[False], list[str], None] = None,
        *,
        ttl: Union[float, None, NotProvided] = NOT_PROVIDED,
    ) -> None:
        await self.abatch([_put(self, namespace, key, value, index, ttl)])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        _validate_labels(namespace)
        await self.abatch([PutOp(tuple(namespace), str(key), None)])

    async def alist_namespaces(
        self,
        *,
        prefix: Optional[NamespacePath] = None,
        suffix: Optional[NamespacePath] = None,
        max_depth: Optional[int] = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        return (await self.abatch([_list(prefix, suffix, max_depth, limit, offset)]))[0]


def _refresh(store: BaseStore, refresh_ttl: Optional[bool]) -> bool:
    if refresh_ttl is not None:
        return refresh_ttl
    return store.ttl_config.get("refresh_on_read", True) if store.ttl_config else True


def _get(store: BaseStore, namespace: tuple, key: str, refresh_ttl: Optional[bool]) -> GetOp:
    _validate_labels(namespace)
    return GetOp(tuple(namespace), str(key), _refresh(store, refresh_ttl))


def _search(store: BaseStore, prefix: tuple, query, filter, limit, offset, refresh_ttl) -> SearchOp:
    _validate_labels(prefix)
    return SearchOp(tuple(prefix), filter, limit, offset, query, _refresh(store, refresh_ttl))


def _put(store: BaseStore, namespace: tuple, key: str, value, index, ttl) -> PutOp:
    _validate_namespace(namespace)
    if ttl not in (NOT_PROVIDED, None) and not store.supports_ttl:
        raise NotImplementedError(
            f"TTL is not supported by {store.__class__.__name__}. "
            f"Use a store implementation that supports TTL or set ttl=None."
        )
    if ttl is NOT_PROVIDED:
        ttl = store.ttl_config.get("default_ttl") if store.ttl_config else None
    return PutOp(tuple(namespace), str(key), value, index=index, ttl=ttl)


def _list(prefix, suffix, max_depth, limit, offset) -> ListNamespacesOp:
    _validate_labels(prefix or ())
    _validate_labels(suffix or ())
    conditions = []
    if prefix:
        conditions.append(MatchCondition(match_type="prefix", path=tuple(prefix)))
    if suffix:
        conditions.append(MatchCondition(match_type="suffix", path=tuple(suffix)))
    return ListNamespacesOp(match_conditions=tuple(conditions), max_depth=max_depth, limit=limit, offset=offset)


def _validate_namespace(namespace: tuple[str, ...]) -> None:
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    _validate_labels(namespace)
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')


def _validate_labels(namespace: tuple[str, ...]) -> None:
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Invalid namespace label '{label}' found in {namespace}. Namespace labels"
                f" must be strings, but got {type(label).__name__}."
            )
        if "." in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label '{label}' found in {namespace}. Namespace labels cannot contain periods ('.')."
            )
        if not label:
            raise InvalidNamespaceError(f"Namespace labels cannot be empty strings. Got {label} in {namespace}")


__all__ = [
    "BaseStore",
    "Item",
    "SearchItem",
    "Op",
    "Result",
    "PutOp",
    "GetOp",
    "SearchOp",
    "ListNamespacesOp",
    "MatchCondition",
    "NamespacePath",
    "NamespaceMatchType",
    "IndexConfig",
    "TTLConfig",
    "InvalidNamespaceError",
    "NOT_PROVIDED",
    "NotProvided",
]
