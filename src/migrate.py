"""Import threads from ``langgraph-checkpoint-mongodb``'s ``MongoDBSaver`` into a ``MongoDBCheckpointer``.

``MongoDBSaver`` keeps one document per checkpoint (``type`` + ``checkpoint`` bytes: the whole
checkpoint, values included; ``metadata`` with every leaf a serde ``[type, bytes]`` pair;
``parent_checkpoint_id``) and one per pending write (``task_id``, ``task_path``, ``idx``,
``channel``, ``type`` + ``value``). The import reads those documents itself with the saver's
serde (``langgraph-checkpoint-mongodb`` is not needed) and writes them through the saver's public
``put``/``put_writes``, namespace by namespace, oldest checkpoint first, in pages of ``batch_size``.
What the destination holds already is left as it is, so a second run, or a run after one that
stopped midway, writes only what is missing. One thing changes on the way: ``MongoDBSaver``'s int
channel versions become our string versions (``with_string_versions``), so our saver can continue
the thread.

It then verifies every imported namespace: our saver's ``list`` must return the tuples the
source gives (versions as converted), read by ``MongoDBSaver`` itself when it is installed (sync form), else by
this module's own parse of the source documents; with ``graph=``, also ``get_state`` and
``get_state_history``. The source is only read. The CLI's ``import-mongodbsaver`` runs it (``cli/importer.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP, BaseCheckpointSaver, CheckpointTuple, PendingWrite
from langgraph.checkpoint.serde.base import SerializerProtocol

from ._bson import require_str, require_str_list
from .checkpointer import MongoDBCheckpointer
from .errors import DurableMongoError, InvalidInputError
from .storage.plans.interpreters import AsyncInterpreter, SyncInterpreter
from .storage.plans.requests import END, Aggregate, End, Find, Invoke, Next, Plan, Raised, Request, Returned, ask

#: The unique index ``MongoDBSaver`` creates on its checkpoint collection (it creates it when missing,
#: so it is used as the verifying reader only where the index is there already: the source stays untouched).
MONGODBSAVER_INDEX = [("thread_id", 1), ("checkpoint_ns", 1), ("checkpoint_id", -1)]
READER_MONGODBSAVER = "MongoDBSaver"
READER_OWN_PARSE = "own parse of the source documents"


@dataclass
class ImportReport:
    """What an import did and what its verification found.

    ``checkpoints_imported``/``writes_imported`` were written now; ``*_present`` were in the
    destination already. ``verified`` counts the checkpoints compared (``states_verified`` the
    threads whose ``get_state`` and ``get_state_history`` were compared, with ``graph=``).
    ``reader`` names what read the source for the comparison. ``mismatches``: one line each.
    ``unknown_threads``: threads asked for (``thread_ids``) that the source does not hold.
    """

    source_db: str
    reader: str
    threads: int = 0
    checkpoints_imported: int = 0
    checkpoints_present: int = 0
    writes_imported: int = 0
    writes_present: int = 0
    verified: int = 0
    states_verified: int = 0
    mismatches: list[str] = field(default_factory=list)
    unknown_threads: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the verification found no mismatch."""
        return not self.mismatches

    def as_dict(self) -> dict[str, Any]:
        """The report as plain data (what ``--json`` prints)."""
        return {**asdict(self), "ok": self.ok}


def _loads_metadata(serde: SerializerProtocol, value: Any) -> Any:
    """``MongoDBSaver``'s metadata: nested dicts whose leaves are serde ``[type, bytes]`` pairs."""
    if isinstance(value, dict):
        return {k: _loads_metadata(serde, v) for k, v in value.items()}
    return serde.loads_typed((value[0], bytes(value[1])))


def _string_version(version: Any) -> Any:
    """``MongoDBSaver`` numbers channel versions 1, 2, ...; ours are zero-padded counters with random bits, and
    LangGraph compares a thread's versions with each other: an int one becomes its counter (``next_version``
    continues from it, and sorts after it)."""
    return f"{version:032}" if isinstance(version, int) and not isinstance(version, bool) else version


def with_string_versions(checkpoint: Any) -> Any:
    """The checkpoint with every int channel version (in ``channel_versions`` and ``versions_seen``) a string,
    the one change the import makes, so our saver can continue the thread."""
    return {
        **checkpoint,
        "channel_versions": {c: _string_version(v) for c, v in checkpoint.get("channel_versions", {}).items()},
        "versions_seen": {
            node: {c: _string_version(v) for c, v in seen.items()}
            for node, seen in checkpoint.get("versions_seen", {}).items()
        },
    }


def _parent_config(doc: dict[str, Any]) -> RunnableConfig | None:
    parent = doc.get("parent_checkpoint_id")
    if not parent:
        return None
    return {
        "configurable": {"thread_id": doc["thread_id"], "checkpoint_ns": doc["checkpoint_ns"], "checkpoint_id": parent}
    }


def _write_groups(writes: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """A checkpoint's source writes per (task_id, task_path), in the order ``put_writes`` gives them back
    their ``idx``: regular writes by ``idx`` (their position), then the special channels."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for w in sorted(writes, key=lambda w: (w["channel"] in WRITES_IDX_MAP, w["idx"])):
        groups.setdefault((w["task_id"], w.get("task_path", "")), []).append(w)
    return groups


def _same_writes(expected: Sequence[PendingWrite], actual: Sequence[PendingWrite]) -> bool:
    """Equal as multisets: ``MongoDBSaver`` returns writes in storage order, we in ``writes_sort_key`` order."""
    rest = list(actual)
    for write in expected:
        if write not in rest:
            return False
        rest.remove(write)
    return not rest


def _differences(expected: CheckpointTuple, actual: CheckpointTuple) -> list[str]:
    expected = expected._replace(checkpoint=with_string_versions(expected.checkpoint))
    fields = ("config", "checkpoint", "metadata", "parent_config")
    out = [name for name in fields if getattr(expected, name) != getattr(actual, name)]
    if not _same_writes(expected.pending_writes or [], actual.pending_writes or []):
        out.append("pending_writes")
    return [f"{name} differs" for name in out]


def _unwrap(result: Returned | Raised | End) -> Any:
    """What an ``Invoke``/``Next`` answered: the value returned, or ``END``; raises what the call raised."""
    if isinstance(result, Raised):
        raise result.error
    return result.value if isinstance(result, Returned) else result


#: A plan that yields, between its requests, items for its puller (``_Pull``): here the source's tuples.
_Items = Generator[Request[Any] | CheckpointTuple, Any, None]


class _Pull:
    """Pulls items from a plan that yields requests and, between them, items (anything not a request)."""

    def __init__(self, source: _Items) -> None:
        self.source = source
        self.answer: Any = None  # the answer to the source's last request, sent to it at the next pull

    def next(self) -> Plan[CheckpointTuple | End]:
        while True:
            try:
                step = self.source.send(self.answer)
            except StopIteration:
                return END
            if isinstance(step, CheckpointTuple):
                self.answer = None
                return step
            self.answer = yield step


class _Import:
    """The import of one source database, written once as a plan run on the source's sync or async face.

    Saver calls go through ``Invoke``/``Next`` with the method of the face the plan runs on
    (``put`` or ``aput``, ``list`` or ``alist``).
    """

    def __init__(
        self,
        saver: MongoDBCheckpointer,
        source_db_name: str,
        names: tuple[str, str, list[str] | None],
        *,
        is_async: bool,
        batch_size: int,
        progress: Callable[[int, int], None] | None,
        reader: Any,
        graph: Any,
    ) -> None:
        self.saver, self.is_async = saver, is_async
        self.checkpoints, self.writes, self.thread_ids = names
        self.batch_size, self.progress, self.reader, self.graph = batch_size, progress, reader, graph
        self.report = ImportReport(source_db_name, READER_MONGODBSAVER if reader is not None else READER_OWN_PARSE)
        self.done = 0

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Plan[Any]:
        """The saver's method ``name`` (``a``-prefixed on the async face) called: what it returns."""
        method = getattr(self.saver, ("a" if self.is_async else "") + name)
        return _unwrap((yield from ask(Invoke(lambda: method(*args, **kwargs)))))

    def _iterate(
        self, owner: BaseCheckpointSaver[Any], config: RunnableConfig
    ) -> Iterator[CheckpointTuple] | AsyncIterator[CheckpointTuple]:
        return owner.alist(config) if self.is_async else iter(owner.list(config))

    def _value(self, write: dict[str, Any]) -> Any:
        return self.saver.serde.loads_typed((write["type"], bytes(write["value"])))

    def _tuple(self, doc: dict[str, Any], writes: list[dict[str, Any]]) -> CheckpointTuple:
        serde = self.saver.serde
        return CheckpointTuple(
            config={"configurable": {k: doc[k] for k in ("thread_id", "checkpoint_ns", "checkpoint_id")}},
            checkpoint=serde.loads_typed((doc["type"], bytes(doc["checkpoint"]))),
            metadata=_loads_metadata(serde, doc.get("metadata") or {}),
            parent_config=_parent_config(doc),
            pending_writes=[(w["task_id"], w["channel"], self._value(w)) for w in writes],
        )

    def _page(
        self, thread_id: str, ns: str, after: str | None, direction: int
    ) -> Plan[tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]]:
        """Up to ``batch_size`` source checkpoints of one namespace after ``after`` (ascending when
        ``direction`` is 1), with their writes by checkpoint id."""
        query: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
        if after is not None:
            query["checkpoint_id"] = {"$gt" if direction == 1 else "$lt": after}
        docs = yield from ask(
            Find(self.checkpoints, query, {"_id": 0}, [("checkpoint_id", direction)], self.batch_size)
        )
        by_id: dict[str, list[dict[str, Any]]] = {d["checkpoint_id"]: [] for d in docs}
        if docs:
            of_page = {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": {"$in": list(by_id)}}
            found = yield from ask(Find(self.writes, of_page, {"_id": 0}))
            for w in found:
                by_id[w["checkpoint_id"]].append(w)
        return docs, by_id

    def run(self) -> Plan[ImportReport]:
        match = {"thread_id": {"$in": self.thread_ids}} if self.thread_ids is not None else {}
        namespaces = yield from ask(Aggregate(
            self.checkpoints,
            [
                {"$match": match},
                {"$group": {
                    "_id": {"thread_id": "$thread_id", "checkpoint_ns": "$checkpoint_ns"}, "checkpoints": {"$sum": 1},
                }},
                {"$sort": {"_id.thread_id": 1, "_id.checkpoint_ns": 1}},
            ],
        ))
        total = sum(g["checkpoints"] for g in namespaces)
        pairs = [(g["_id"]["thread_id"], g["_id"]["checkpoint_ns"]) for g in namespaces]
        self.report.threads = len({thread_id for thread_id, _ in pairs})
        if self.thread_ids is not None:
            found = {thread_id for thread_id, _ in pairs}
            self.report.unknown_threads = [t for t in self.thread_ids if t not in found]
        for thread_id, ns in pairs:
            yield from self._import_namespace(thread_id, ns, total)
        for thread_id, ns in pairs:
            yield from self._verify_namespace(thread_id, ns)
        if self.graph is not None:
            for thread_id in sorted({t for t, _ in pairs}):
                yield from self._verify_states(thread_id)
        return self.report

    def _import_namespace(self, thread_id: str, ns: str, total: int) -> Plan[None]:
        present: dict[str, Counter[tuple[str, str]]] = {}
        stored = self._iterate(self.saver, {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}})
        while (item := _unwrap((yield from ask(Next(stored))))) is not END:
            present[item.config["configurable"]["checkpoint_id"]] = Counter(
                (t, c) for t, c, _ in item.pending_writes or ()
            )
        after = None
        while True:
            docs, writes = yield from self._page(thread_id, ns, after, 1)
            for doc in docs:
                yield from self._import_checkpoint(doc, writes[doc["checkpoint_id"]], present)
                self.done += 1
                if self.progress is not None:
                    self.progress(self.done, total)
            if len(docs) < self.batch_size:
                return
            after = docs[-1]["checkpoint_id"]

    def _import_checkpoint(
        self, doc: dict[str, Any], writes: list[dict[str, Any]], present: dict[str, Counter[tuple[str, str]]]
    ) -> Plan[None]:
        tup = self._tuple(doc, [])
        checkpoint = with_string_versions(tup.checkpoint)
        config = tup.parent_config or {
            "configurable": {"thread_id": doc["thread_id"], "checkpoint_ns": doc["checkpoint_ns"]}
        }
        have = present.get(doc["checkpoint_id"])
        if have is None:
            # Every value is written as new: the stored document then depends on nothing this process remembers.
            yield from self._call("put", config, checkpoint, tup.metadata, checkpoint["channel_versions"])
            self.report.checkpoints_imported += 1
            have = Counter()
        else:
            self.report.checkpoints_present += 1
        for (task_id, task_path), group in _write_groups(writes).items():
            wanted = Counter((task_id, w["channel"]) for w in group)
            if not wanted - have:
                self.report.writes_present += len(group)
                continue
            values = [(w["channel"], self._value(w)) for w in group]
            yield from self._call("put_writes", tup.config, values, task_id, task_path)
            self.report.writes_imported += len(group)

    def _expected(self, thread_id: str, ns: str) -> _Items:
        """The source's tuples of one namespace, newest first: ``MongoDBSaver``'s, or our own parse (a plan
        per item, paged)."""
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
        if self.reader is not None:
            items = self._iterate(self.reader, config)
            while (item := _unwrap((yield from ask(Next(items))))) is not END:
                yield item
            return
        after: str | None = None
        while True:
            docs, writes = yield from self._page(thread_id, ns, after, -1)
            for doc in docs:
                yield self._tuple(doc, writes[doc["checkpoint_id"]])
            if len(docs) < self.batch_size:
                return
            after = docs[-1]["checkpoint_id"]

    def _verify_namespace(self, thread_id: str, ns: str) -> Plan[None]:
        """Walk the source's and the destination's tuples side by side, newest first."""
        actual = self._iterate(self.saver, {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}})
        expected = _Pull(self._expected(thread_id, ns))
        want = yield from expected.next()
        got = _unwrap((yield from ask(Next(actual))))
        while want is not END or got is not END:
            want_id = END if isinstance(want, End) else want.config["configurable"]["checkpoint_id"]
            got_id = END if got is END else got.config["configurable"]["checkpoint_id"]
            if isinstance(want, End) or (got is not END and got_id > want_id):
                self.report.mismatches.append(f"{thread_id} {ns!r} {got_id}: in the destination, not in the source")
                got = _unwrap((yield from ask(Next(actual))))
                continue
            if got is END or want_id > got_id:
                self.report.mismatches.append(f"{thread_id} {ns!r} {want_id}: missing from the destination")
            else:
                self.report.mismatches += [f"{thread_id} {ns!r} {want_id}: {p}" for p in _differences(want, got)]
                self.report.verified += 1
                got = _unwrap((yield from ask(Next(actual))))
            want = yield from expected.next()

    def _verify_states(self, thread_id: str) -> Plan[None]:
        config = {"configurable": {"thread_id": thread_id}}
        ours, theirs = (self.graph.copy(update={"checkpointer": c}) for c in (self.saver, self.reader))
        def read(g: Any) -> tuple[Any, list[Any]]:
            return g.get_state(config, subgraphs=True), list(g.get_state_history(config))

        our_state, our_history = _unwrap((yield from ask(Invoke(lambda: read(ours)))))
        their_state, their_history = _unwrap((yield from ask(Invoke(lambda: read(theirs)))))
        if our_state != their_state:
            self.report.mismatches.append(f"{thread_id}: get_state differs")
        if our_history != their_history:
            self.report.mismatches.append(f"{thread_id}: get_state_history differs")
        self.report.states_verified += 1


def _collection_name(name: str, value: Any) -> str:
    text = require_str(name, value, allow_empty=False)
    if text.startswith("$") or "\x00" in text:
        raise InvalidInputError(f"{name} must be a MongoDB collection name (no leading '$', no NUL), got {value!r}")
    return text


def _prepare(
    source_db: Any, saver: Any, checkpoints: Any, writes: Any, thread_ids: Any, batch_size: Any
) -> tuple[str, str, list[str] | None]:
    if not isinstance(saver, MongoDBCheckpointer):
        raise InvalidInputError(f"saver must be a MongoDBCheckpointer, got {type(saver).__name__}")
    if source_db is None or not isinstance(getattr(source_db, "name", None), str):
        raise InvalidInputError("source_db must be a database, e.g. MongoClient(uri)['checkpointing_db']")
    if source_db.name == saver.db_name and saver.collections.checkpoints == checkpoints:
        raise InvalidInputError(
            f"source and destination are the same collections ({source_db.name}.{checkpoints}); "
            "import into another database, e.g. MongoDBCheckpointer(client, db_name='langgraph')"
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise InvalidInputError(f"batch_size must be a positive int, got {batch_size!r}")
    ids = None if thread_ids is None else require_str_list("thread_ids", thread_ids)
    return _collection_name("checkpoint_collection", checkpoints), _collection_name("writes_collection", writes), ids


def _mongodbsaver_class() -> Any:
    try:
        from langgraph.checkpoint.mongodb import MongoDBSaver
    except ImportError:
        return None
    return MongoDBSaver


def _mongodbsaver_reader(cls: Any, source_db: Any, checkpoints: str, writes: str, serde: Any) -> Any:
    """A ``MongoDBSaver`` on the source, or None where its constructor would create its indexes there."""
    for name in (checkpoints, writes):
        keys = [[tuple(k) for k in ix["key"]][:3] for ix in source_db[name].index_information().values()]
        if MONGODBSAVER_INDEX not in keys:
            return None
    return cls(source_db.client, source_db.name, checkpoints, writes, serde=serde)


def import_mongodbsaver(
    source_db: Any,
    saver: MongoDBCheckpointer,
    *,
    checkpoint_collection: str = "checkpoints",
    writes_collection: str = "checkpoint_writes",
    thread_ids: Sequence[str] | None = None,
    batch_size: int = 100,
    progress: Callable[[int, int], None] | None = None,
    graph: Any = None,
) -> ImportReport:
    """Copy every thread of a ``MongoDBSaver`` database into ``saver``, then verify it.

    Idempotent and resumable: checkpoints and writes the destination holds already are not
    written again. The source is only read.

    Args:
        source_db: the source database on a sync client, e.g. ``MongoClient(uri)["checkpointing_db"]``.
        saver: the destination, with a sync client; it must not use the source's collections.
        checkpoint_collection: ``MongoDBSaver``'s checkpoint collection in ``source_db``.
        writes_collection: its pending-writes collection.
        thread_ids: only these threads (default: every thread).
        batch_size: source checkpoints read per query.
        progress: called as ``progress(done, total)`` after each checkpoint.
        graph: a compiled graph whose ``get_state`` and ``get_state_history`` are compared too (needs
            ``langgraph-checkpoint-mongodb`` installed).

    Returns:
        The ``ImportReport`` (``report.ok`` is False when the verification found a mismatch).

    Raises:
        InvalidInputError: a bad argument (a non-string thread id, a collection name starting with
            ``$``, the destination being the source, ``graph=`` without ``MongoDBSaver``), before any query.
        DurableMongoError: ``graph=`` given and the source lacks ``MongoDBSaver``'s indexes (it would create them).
    """
    names = _prepare(source_db, saver, checkpoint_collection, writes_collection, thread_ids, batch_size)
    cls = _mongodbsaver_class()
    if graph is not None and (cls is None or not hasattr(graph, "copy")):
        raise InvalidInputError(
            "graph= must be a compiled graph, and compares states read by MongoDBSaver: "
            "pip install langgraph-checkpoint-mongodb, or leave graph out"
        )
    reader = _mongodbsaver_reader(cls, source_db, names[0], names[1], saver.serde) if cls is not None else None
    if graph is not None and reader is None:
        raise DurableMongoError(
            "graph= compares states read by MongoDBSaver, which would create its indexes on the source: "
            "create them (MongoDBSaver(client, source_db_name) does), or leave graph out"
        )
    steps = _Import(
        saver, source_db.name, names, is_async=False, batch_size=batch_size, progress=progress, reader=reader,
        graph=graph,
    )
    return SyncInterpreter(source_db).run(steps.run())


async def aimport_mongodbsaver(
    source_db: Any,
    saver: MongoDBCheckpointer,
    *,
    checkpoint_collection: str = "checkpoints",
    writes_collection: str = "checkpoint_writes",
    thread_ids: Sequence[str] | None = None,
    batch_size: int = 100,
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Async ``import_mongodbsaver``: the source on an async client, ``saver``'s async face.

    ``MongoDBSaver`` reads only through a sync client, so the verification compares with this
    module's own parse of the source documents (``report.reader`` says so), and there is no
    ``graph=``. Same other arguments, return and errors.
    """
    names = _prepare(source_db, saver, checkpoint_collection, writes_collection, thread_ids, batch_size)
    steps = _Import(
        saver, source_db.name, names, is_async=True, batch_size=batch_size, progress=progress, reader=None, graph=None
    )
    return await AsyncInterpreter(source_db).run(steps.run())
