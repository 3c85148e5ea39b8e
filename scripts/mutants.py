#!/usr/bin/env python3
"""Prove that the tests bite: remove one guard at a time and watch a test fail.

Each mutant is an exact text replacement in one file of ``src/``: it removes a
fence, a lease condition, a cache invalidation, ... For each one, this script
copies the tree to a temporary directory, applies the replacement there (the
text must occur exactly once, so a mutant that no longer applies fails loudly
instead of testing nothing), and runs the tests named for it against the copy.
A mutant is *killed* when those tests fail; it *survives* when they pass.
Before the mutants, the same test selections run on the unmutated copy and
must pass, or every mutant would look killed. ``--jobs`` mutants (one per core
by default) run at once, each in a copy of the tree of its own.

    scripts/mutants                  # all mutants; exit 1 if one survives or cannot be applied
    scripts/mutants -k renewal       # those whose name contains "renewal"
    scripts/mutants --list

The copy imports its own ``src/`` as ``langgraph_durable_mongodb`` (first on
``PYTHONPATH``, ahead of the editable install), child processes included.
Server-tier tests among the selections use ``MONGODB_URI`` when it is set.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # relative to the repository
    old: str
    new: str
    tests: tuple[str, ...]  # pytest arguments: node ids, files, -k expressions


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "journal take-over condition",
        "src/journal/documents.py",
        '    fence = entry_filter(pos, fence=entry["fence"], status=entry["status"])\n'
        '    if entry["status"] == "started":\n'
        '        fence["lease_until"] = entry["lease_until"]',
        "    fence = entry_filter(pos)",
        ("tests/test_journal_fences.py",),
    ),
    Mutant(
        "journal take-over ignores a renewal after its read",
        "src/journal/documents.py",
        '        fence["lease_until"] = entry["lease_until"]',
        "        pass",
        ("tests/test_journal_fences.py",),
    ),
    Mutant(
        "journal record fence",
        "src/journal/plans.py",
        "self._settle(held_fence(pos, claimed.fence), update)",
        'self._settle(entry_filter(pos, status="started"), update)',
        ("tests/test_journal_fences.py",),
    ),
    Mutant(
        "the journal takes any class as a terminal error",
        "src/journal/journal.py",
        "    if not all(isinstance(t, type) and issubclass(t, BaseException) for t in types):",
        "    if not all(isinstance(t, type) for t in types):",
        ("tests/test_bad_input_options.py", "-k", "journal_refuses"),
    ),
    Mutant(
        "a short digest_key keys the journal's input digests",
        "src/journal/journal.py",
        "(not isinstance(digest_key, bytes) or len(digest_key) < 16)",
        "not isinstance(digest_key, bytes)",
        ("tests/test_bad_input_options.py", "-k", "journal_refuses"),
    ),
    Mutant(
        "a journal entry is checked for the claim's fields only, not for its status's own",
        "src/journal/documents.py",
        "    return _claim_problem(entry) or _input_problem(entry) or _status_problem(entry, status)",
        "    return _claim_problem(entry) or _input_problem(entry)",
        ("tests/test_journal_entry_problem.py",),
    ),
    Mutant(
        "a journal entry without a fence is acted on",
        "src/journal/documents.py",
        '("fence", True)',
        '("fence", False)',
        ("tests/test_journal_entry_problem.py",),
    ),
    Mutant(
        "a completed entry whose outcome counts no chunk is replayed",
        "src/journal/documents.py",
        ' or outcome.get("chunks", 1) < 1:',
        ":",
        ("tests/test_journal_entry_problem.py",),
    ),
    Mutant(
        "journal digest matching (an effect takes the entry at its ordinal whatever it recorded)",
        "src/journal/attempt.py",
        "            elif (same := self._first_free(matching, wanted)) is not None:\n"
        "                key = same\n",
        "",
        ("tests/test_journal_matching.py", "-m", "not server"),
    ),
    Mutant(
        "an edit at an interrupt continues nothing",
        "src/checkpointer/roots.py",
        '        if source != "update" or checkpoint_ns or not parent_id:',
        "        if True:",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "edit"),
    ),
    Mutant(
        "an edit of an older checkpoint continues it (time travel is no fork)",
        "src/checkpointer/roots.py",
        '        if len(newest) != 1 or newest[0]["checkpoint_id"] != parent_id:',
        "        if not newest:",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "edit"),
    ),
    Mutant(
        "one expiry: a write stamps its own clock's value, below one already read",
        "src/checkpointer/expiry.py",
        '        return {"expire_at": self.known.raise_to(thread_id, computed)}',
        '        self.known.raise_to(thread_id, computed)\n        return {"expire_at": computed}',
        ("tests/test_checkpointer_graphs.py", "-m", "not server", "-k", "one_expiry"),
    ),
    Mutant(
        "one expiry: reads do not teach the thread's expiry",
        "src/checkpointer/store.py",
        "        self.expiry.saw(docs)\n",
        "",
        ("tests/test_checkpointer_graphs.py", "-m", "not server", "-k", "one_expiry"),
    ),
    Mutant(
        "one expiry: the journal stamps a newer expiry than the thread's",
        "src/checkpointer/expiry.py",
        "if highest is not None and highest > lease.utcnow():",
        "if False:",
        ("tests/test_checkpointer_graphs.py", "-m", "not server", "-k", "one_expiry"),
    ),
    Mutant(
        "one expiry: spreading it may move an expiry back",
        "src/checkpointer/expiry.py",
        '{"expire_at": {"$lt": value}}',
        '{"expire_at": {"$ne": value}}',
        ("tests/test_checkpointer_graphs.py", "-m", "not server", "-k", "never_lowers"),
    ),
    Mutant(
        "wait_stored trusts its registry alone",
        "src/checkpointer/roots.py",
        "if found := (yield Find(self.collections.checkpoints, key, ORIGIN_FIELDS, limit=1)):",
        "if found := []:",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "wait_stored"),
    ),
    Mutant(
        "copy_thread copies onto a thread that has documents",
        "src/checkpointer/maintenance.py",
        "        if holding and not (yield Find(self.collections.metadata, note, {\"_id\": 1}, limit=1)):",
        "        if False:",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "copy_thread_refuses"),
    ),
    Mutant(
        "run-lock take-over condition",
        "src/run_lock.py",
        'return {"thread_id": holder["thread_id"], "fence": holder.get("fence"), "lease_until": holder.get("lease_until")}',
        'return {"thread_id": holder["thread_id"]}',
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "take_over_loses or one_wins"),
    ),
    Mutant(
        "run-lock take-over ignores a renewal after its read",
        "src/run_lock.py",
        '"fence": holder.get("fence"), "lease_until": holder.get("lease_until")}',
        '"fence": holder.get("fence")}',
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "take_over_loses"),
    ),
    Mutant(
        "run-lock renewal of an expired lease",
        "src/run_lock.py",
        '{"thread_id": holding.thread_id, "fence": holding.fence, "lease_until": {"$gt": now}}',
        '{"thread_id": holding.thread_id, "fence": holding.fence}',
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "renewal_fails"),
    ),
    Mutant(
        "run-lock renewal without the fence",
        "src/run_lock.py",
        '{"thread_id": holding.thread_id, "fence": holding.fence, "lease_until": {"$gt": now}}',
        '{"thread_id": holding.thread_id, "lease_until": {"$gt": now}}',
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "renewal_fails"),
    ),
    Mutant(
        "run-lock release without the fence",
        "src/run_lock.py",
        '{"thread_id": holding.thread_id, "fence": holding.fence},',
        '{"thread_id": holding.thread_id},',
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "release_after"),
    ),
    Mutant(
        "a nested run waits for its own thread's lock",
        "src/run_lock.py",
        "return sorted({t for t in thread_ids if (id(self), t) not in held})",
        "return sorted(set(thread_ids))",
        ("tests/test_run_lock.py", "-m", "not server", "-k", "nested_run_of_the_same_thread"),
    ),
    Mutant(
        "run-lock key ignores a top-level thread_id",
        "src/run_lock.py",
        'return {**config, "configurable": dict(config.get("configurable") or {})}',
        'return {"configurable": dict(config.get("configurable") or {})}',
        ("tests/test_run_lock_entry.py", "-m", "not server", "-k", "top_level"),
    ),
    Mutant(
        "batch runs one thread's inputs at once",
        "src/run_lock.py",
        "        n = 0 if thread_id is None else seen[thread_id]\n",
        "        n = 0\n",
        ("tests/test_run_lock_entry.py", "-m", "not server", "-k", "batch_runs_one_thread"),
    ),
    Mutant(
        "the run lock's guard is gone: effects are neither stopped by it nor journaled as the run's alone",
        "src/platform.py",
        "EffectScope(self.journal, self.locator, check_held if self.run_locks is not None else None)",
        "EffectScope(self.journal, self.locator, None)",
        # the journal's own self-fence stops the effect too (issue 21): the claim it no longer skips shows it
        ("tests/test_journal_costs.py", "-m", "not server", "-k", "under_the_run_lock_an_effect_costs_one"),
    ),
    Mutant(
        "a scope bound with the platform's locator journals a graph on another checkpointer",
        "src/journal/locator.py",
        '        if self.saver is not None and getattr(running, "base_saver", running) is not self.saver:',
        "        if False:",
        ("tests/test_platform_forms.py", "-m", "not server", "-k", "platform_locator_refuses"),
    ),
    Mutant(
        "a DeltaChannel chain walk stops at the end of its first page",
        "src/checkpointer/store.py",
        "        exhausted = len(first) < FIRST_CHAIN_PAGE\n",
        "        exhausted = True\n",
        ("tests/test_checkpointer_graphs.py", "-m", "not server", "-k", "older_pages"),
    ),
    Mutant(
        "a checkpoint document's inline values outgrow inline_document_bytes",
        "src/checkpointer/documents.py",
        "        if size <= limits.value_bytes and size <= room:",
        "        if size <= limits.value_bytes:",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "inline_document_bytes"),
    ),
    Mutant(
        "prune deletes a checkpoint holding a value a kept one references, without moving it to blobs",
        "src/checkpointer/maintenance.py",
        "        if ops:\n            yield Upsert(self.collections.blobs, ops)",
        "        if False:\n            yield Upsert(self.collections.blobs, ops)",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "held_by or stale_value"),
    ),
    Mutant(
        "a checkpoint keeps referencing the holder prune deleted",
        "src/checkpointer/maintenance.py",
        "        yield Upsert(self.collections.checkpoints, unlinked)\n",
        "",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "held_by"),
    ),
    Mutant(
        "the pruning saver remembers value locations in checkpoints it deleted",
        "src/checkpointer/maintenance.py",
        "        yield Upsert(self.collections.checkpoints, unlinked)\n        self.locations.forget_thread(thread_id)",
        "        yield Upsert(self.collections.checkpoints, unlinked)",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "held_by"),
    ),
    Mutant(
        "a reader drops a value whose holder is gone instead of looking in blobs",
        "src/checkpointer/store.py",
        "        if missing:\n",
        "        if False:\n",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "stale_value"),
    ),
    Mutant(
        "a resumed root-level occurrence is taken for a new one, so its recorded effects are not read",
        "src/journal/locator.py",
        "stored.written and origin == root and first_attempt",
        "True",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "root_node_resumed_after_its_interrupt"),
    ),
    Mutant(
        "a checkpoint read is still taken for one this process wrote and no other run met",
        "src/checkpointer/roots.py",
        "        self.stored.note(thread_id, checkpoint_ns, [_registered(d) for d in docs])",
        "        self.stored.note(thread_id, checkpoint_ns, [_registered(d) for d in docs], written=True)",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "root_node_resumed_after_its_interrupt"),
    ),
    Mutant(
        "a keep_latest sweep leaves the journal entries of visits prepared from pruned checkpoints",
        "src/platform.py",
        '{"root_key": {"$in": sorted(finished)}}',
        '{"root_key": {"$in": []}}',
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest"),
    ),
    Mutant(
        "a retried function node's subgraph runs keep LangGraph's counter, which goes on across attempts",
        "src/resolver/running.py",
        "        run = observed\n",
        "        run = segment.counter\n",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "retr"),
    ),
    Mutant(
        "a node of a strict msgpack run finds no effect scope (its saver is a clone of the platform's)",
        "src/journal/context.py",
        '        served = _served.get(getattr(saver, "base_saver", saver))',
        "        served = _served.get(saver)",
        ("tests/test_journal_serde_modes.py", "-m", "not server", "-k", "plain"),
    ),
    Mutant(
        "a served platform is kept alive by being served, with its checkpointer and clients",
        "src/journal/context.py",
        "_held_weakly(scope_for) if inspect.ismethod(scope_for) else (lambda: scope_for)",
        "(lambda: scope_for)",
        ("tests/test_platform_forms.py", "-m", "not server", "-k", "gone_leaves"),
    ),
    Mutant(
        "a child compiled with checkpointer=True is resolved as if its occurrences could be told apart",
        "src/resolver/running.py",
        "    _refuse_own_history(ns)\n",
        "",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "cannot_identify"),
    ),
    Mutant(
        "effects skip their claim in a run that does not hold the run lock",
        "src/journal/context.py",
        "    exclusive = bool(scope.guard(thread_id)) if scope.guard is not None else False",
        "    exclusive = True",
        ("tests/test_journal_costs.py", "-m", "not server", "-k", "without_the_run_lock"),
    ),
    Mutant(
        "the pending writes' index is gone from the registry",
        "src/schema.py",
        '    "writes": (IndexModel(_ascending(*WRITE_KEY, "chunk"), unique=True, name="thread_ns_checkpoint_task_idx"),),',
        '    "writes": (),',
        ("tests/test_index_use.py", "-k", "not async"),
    ),
    Mutant(
        "the journal's position index is gone from the registry",
        "src/schema.py",
        '        IndexModel(_ascending(*POSITION_FIELDS, "chunk"), unique=True, name="thread_effect_position"),\n',
        "",
        ("tests/test_index_use.py", "-k", "async"),
    ),
    Mutant(
        "journal renewal fence (an expired lease renews)",
        "src/journal/documents.py",
        'return {**held_fence(pos, fence), "lease_until": {"$gt": now}}',
        "return held_fence(pos, fence)",
        ("tests/test_journal_fences.py",),
    ),
    Mutant(
        "a replayed call's callback run reports the usage the real call used",
        "src/journal/llm.py",
        'shown = message.model_copy(update={"usage_metadata": None})',
        "shown = message",
        ("tests/test_journal_callbacks.py", "-m", "not server", "-k", "counts_its_tokens_once"),
    ),
    Mutant(
        "a replay's callback run is not marked replayed",
        "src/journal/plans.py",
        "info = EffectInfo(pos, call.kind, call.name, 0, call.at_most_once, replayed=True)",
        "info = EffectInfo(pos, call.kind, call.name, 0, call.at_most_once)",
        ("tests/test_journal_callbacks.py", "-m", "not server", "-k", "whether_it_replayed"),
    ),
    Mutant(
        "a replayed SecureTool call runs no tool callbacks",
        "src/journal/tool.py",
        "replay=lambda outcome: self._replayed(outcome).invoke(input, observed_config(config), **kwargs),",
        "replay=lambda outcome: outcome,",
        ("tests/test_journal_callbacks.py", "-m", "not server", "-k", "tool_callbacks"),
    ),
    Mutant(
        "import-mongodbsaver accepts a $ collection name",
        "src/migrate.py",
        'if value.startswith("$") or "\\x00" in value:',
        'if "\\x00" in value:',
        ("tests/test_mongodbsaver_import.py", "-k", "bad_input"),
    ),
    Mutant(
        "import-mongodbsaver does not check thread ids",
        "src/migrate.py",
        'ids = None if thread_ids is None else require_str_list("thread_ids", thread_ids)',
        "ids = None if thread_ids is None else list(thread_ids)",
        ("tests/test_mongodbsaver_import.py", "-k", "bad_input"),
    ),
    Mutant(
        "import-mongodbsaver imports a database into itself",
        "src/migrate.py",
        "if source_db.name == saver.db_name and saver.collections.checkpoints == checkpoints:",
        "if False:",
        ("tests/test_mongodbsaver_import.py", "-k", "into_itself"),
    ),
    Mutant(
        "import-mongodbsaver writes again a checkpoint already present",
        "src/migrate.py",
        "        if have is None:",
        "        if True:",
        ("tests/test_mongodbsaver_import.py", "-k", "second_run"),
    ),
    Mutant(
        "import-mongodbsaver writes again writes already present",
        "src/migrate.py",
        "            if not wanted - have:",
        "            if False:",
        ("tests/test_mongodbsaver_import.py", "-k", "second_run"),
    ),
    Mutant(
        "import-mongodbsaver keeps MongoDBSaver's int channel versions",
        "src/migrate.py",
        'return f"{version:032}" if isinstance(version, int) and not isinstance(version, bool) else version',
        "return version",
        ("tests/test_mongodbsaver_import.py", "-k", "copies_every_thread"),
    ),
    Mutant(
        "import-mongodbsaver does not compare metadata",
        "src/migrate.py",
        'fields = ("config", "checkpoint", "metadata", "parent_config")',
        'fields = ("config", "checkpoint", "parent_config")',
        ("tests/test_mongodbsaver_import.py", "-k", "cli"),
    ),
    Mutant(
        "import-mongodbsaver reads a namespace whole instead of in pages",
        "src/migrate.py",
        'docs = yield Find(self.checkpoints, query, {"_id": 0}, [("checkpoint_id", direction)], self.batch_size)',
        'docs = yield Find(self.checkpoints, query, {"_id": 0}, [("checkpoint_id", direction)])',
        ("tests/test_mongodbsaver_import.py", "-k", "pages"),
    ),
    Mutant(
        "import-mongodbsaver does not report a checkpoint missing from the destination",
        "src/migrate.py",
        'self.report.mismatches.append(f"{thread_id} {ns!r} {want_id}: missing from the destination")',
        "pass",
        ("tests/test_mongodbsaver_import.py", "-k", "verification"),
    ),
    Mutant(
        "CLI deletes without asking (no --yes, no terminal)",
        "src/cli/maintenance.py",
        "    if yes:\n        return True",
        "    if True:\n        return True",
        ("tests/test_cli_maintenance.py", "-m", "not server"),
    ),
    Mutant(
        "CLI journal prints outcome bytes without --with-outcomes",
        "src/views/documents.py",
        'projection = {"_id": 0} if with_outcomes else {"_id": 0, "outcome.data": 0}',
        'projection = {"_id": 0}',
        ("tests/test_cli_journal.py", "-m", "not server", "-k", "outcome_bytes"),
    ),
    Mutant(
        "CLI journal prints outcome chunks without --with-outcomes",
        "src/views/documents.py",
        'query = {"thread_id": thread_id} if with_outcomes else {"thread_id": thread_id, "chunk": 0}',
        'query = {"thread_id": thread_id}',
        ("tests/test_cli_journal.py", "-m", "not server", "-k", "outcome_bytes"),
    ),
    Mutant(
        "CLI inspect orders ordinals as text",
        "src/views/tree.py",
        'return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in ordinal.split("."))',
        'return ((1, 0, ordinal),)',
        ("tests/test_cli_threads.py", "-m", "not server", "-k", "ordinals"),
    ),
    Mutant(
        "CLI takes a string that is no URI for a host name",
        "src/connections.py",
        "    if not uri.startswith(URI_SCHEMES):",
        "    if False:",
        ("tests/test_cli.py", "-k", "bad_uri"),
    ),
    Mutant(
        "a closed platform makes a client for a new loop",
        "src/connections.py",
        "                if self._closed:\n",
        "                if False:\n",
        ("tests/test_platform_lifecycle.py", "-k", "two_asyncio_runs"),
    ),
    Mutant(
        "aclose leaves the running loop's client open",
        "src/connections.py",
        "            if loop is here:\n                await entry.closer.aclose()",
        "            if loop is here:\n                self._closing_at_loop_end.append(entry)",
        ("tests/test_platform_lifecycle.py", "-k", "async_with_closes or saver_alone"),
    ),
    Mutant(
        "close skips a loop that is not running",
        "src/connections.py",
        "        elif not loop.is_closed():\n",
        "        elif False:\n",
        ("tests/test_platform_lifecycle.py", "-k", "not_running"),
    ),
    Mutant(
        "close skips a loop running in another thread",
        "src/connections.py",
        "            asyncio.run_coroutine_threadsafe(entry.closer.aclose(), loop).result(CLOSE_TIMEOUT_SECONDS)",
        "            pass",
        ("tests/test_platform_lifecycle.py", "-k", "another_thread"),
    ),
    Mutant(
        "a loop's client is not closed when the loop ends",
        "src/connections.py",
        "        self.closer = _until_loop_ends(client)\n        try:  # run the closer to its yield now, inside the running loop, which registers it\n            self.closer.asend(None).send(None)\n        except StopIteration:\n            pass\n",
        "        self.closer = _until_loop_ends(client)\n",
        ("tests/test_platform_lifecycle.py", "-k", "two_asyncio_runs or inside_a_coroutine"),
    ),
    Mutant(
        "probing a private attribute of a loop's clients makes a client",
        "src/connections.py",
        "        if name.startswith(\"_\"):\n            raise AttributeError(name)\n        return getattr(self._clients.resolve(self._path, self._options), name)",
        "        return getattr(self._clients.resolve(self._path, self._options), name)",
        ("tests/test_platform_lifecycle.py", "-k", "probing"),
    ),
    Mutant(
        "from_conn_string takes a URI that is not a string",
        "src/platform.py",
        "        if not isinstance(uri, str) or not uri:\n",
        "        if False:\n",
        ("tests/test_platform_lifecycle.py", "-k", "not_a_string"),
    ),
    Mutant(
        "the async clients from_conn_string opens do not name us",
        "src/connections.py",
        "AsyncMongoClient(uri, driver=DRIVER_INFO, **timeout))",
        "AsyncMongoClient(uri, **timeout))",
        ("tests/test_driver_info.py", "-k", "each_loops_async_client"),
    ),
    Mutant(
        "clients you pass are not told our name",
        "src/_plans/faces.py",
        "        announce(given)",
        "        pass",
        ("tests/test_driver_info.py", "-k", "appended_once"),
    ),
    Mutant(
        "mongomock clients are told our name too",
        "src/connections.py",
        "    if isinstance(client, (MongoClient, AsyncMongoClient)):",
        "    if True:",
        ("tests/test_checkpointer_connections.py", "-k", "kinds_are_detected"),
    ),
    Mutant(
        "the CLI's client does not name us",
        "src/connections.py",
        "        return MongoClient(uri, driver=DRIVER_INFO, **timeout)",
        "        return MongoClient(uri, **timeout)",
        ("tests/test_driver_info.py", "-k", "cli"),
    ),
    Mutant(
        "the CLI imports pymongo (two ways into storage)",
        "src/cli/main.py",
        "from bson import json_util\n",
        "from bson import json_util\nfrom pymongo.errors import PyMongoError  # noqa: F401\n",
        ("tests/test_architecture.py", "-k", "pymongo"),
    ),
    Mutant(
        "the CLI reports an unreachable server as a refused command",
        "src/cli/main.py",
        "    (ServerUnreachableError, EXIT_UNREACHABLE),\n",
        "",
        ("tests/test_cli.py", "-k", "unreachable"),
    ),
    Mutant(
        "the format check lets a newer format version in",
        "src/storage_format.py",
        "        if stored.version is not None and stored.version > FORMAT_VERSION:",
        "        if False:",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "newer"),
    ),
    Mutant(
        "the format check sees no foreign data",
        "src/storage_format.py",
        "    return StoredFormat(foreign=_shape_of(sample[0]), has_data=True, thread_collections=None)",
        "    return StoredFormat(has_data=True, thread_collections=None)",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "mongodbsaver or no_one"),
    ),
    Mutant(
        "MongoDBSaver checkpoints are not recognised as such",
        "src/storage_format.py",
        '    if "type" in checkpoint:',
        "    if False:",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "mongodbsaver"),
    ),
    Mutant(
        "a fresh database's stamp declares no per-thread collection",
        "src/storage_format.py",
        "            if (yield InsertOne(self.collections.metadata, format_document(names, version))):",
        "            if (yield InsertOne(self.collections.metadata, format_document((), version))):",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "another_process_deletes or stored_once"),
    ),
    Mutant(
        "a stamp another process inserted first is taken to declare this one's collections",
        "src/storage_format.py",
        "            if (yield InsertOne(self.collections.metadata, format_document(names, version))):",
        "            if (yield InsertOne(self.collections.metadata, format_document(names, version))) or True:",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "stamped_first"),
    ),
    Mutant(
        "a collection declared after the format check is never stored",
        "src/storage_format.py",
        "        if self._checked:\n            yield from self._declare_plan()\n            return",
        "        if self._checked:\n            return",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "saver_in_use"),
    ),
    Mutant(
        "delete_thread trusts the per-thread collections it knew at its format check",
        "src/checkpointer/maintenance.py",
        "        names = self._checkpoints_last((yield from self.storage_format.thread_collections_plan()))\n        for thread_id in thread_ids:",
        "        names = self._checkpoints_last(self.storage_format.thread_collections.names)\n        for thread_id in thread_ids:",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "declared_after"),
    ),
    Mutant(
        "a stamp without declarations is read as declaring nothing",
        "src/thread_collections.py",
        "        self._add(self._assumed if declared is None else declared)",
        "        self._add(declared or ())",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "before_declarations"),
    ),
    Mutant(
        "the journal declares no per-thread collection",
        "src/journal/journal.py",
        "        storage_format.thread_collections.register(self.collection)",
        "        pass",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "another_process"),
    ),
    Mutant(
        "a busy thread is refused before run_wait_seconds have passed",
        "src/run_lock.py",
        "                if since >= deadline:",
        "                if since >= deadline - self.wait_seconds / 2:",
        ("tests/test_run_lock.py", "-m", "not server", "-k", "busy_thread_raises"),
    ),
    Mutant(
        "close() closes the clients under a sync run's background release",
        "src/platform.py",
        "        self.checkpointer.stop_sweepers()\n        self._finish_releases()\n        super().close()",
        "        self.checkpointer.stop_sweepers()\n        super().close()",
        ("tests/test_run_lock.py", "-k", "closing_the_platform and close and not aclose"),
    ),
    Mutant(
        "aclose() closes the clients under a sync run's background release",
        "src/platform.py",
        "        await asyncio.to_thread(self._finish_releases)\n",
        "",
        ("tests/test_run_lock.py", "-k", "closing_the_platform and aclose"),
    ),
    Mutant(
        "doctor creates no missing index, on either face",
        "src/deployment.py",
        "            elif not row[\"present\"] and fix:",
        "            elif False:",
        ("tests/test_cli_deployments.py", "-k", "both_faces"),
    ),
    Mutant(
        "a face's first plan skips the storage format check",
        "src/_plans/faces.py",
        "        yield from self._guard()",
        "        pass",
        ("tests/test_storage_format.py", "-m", "not server"),
    ),
    Mutant(
        "an empty thread id reaches the saver",
        "src/_bson.py",
        "    if isinstance(value, str) and value:",
        "    if isinstance(value, str):",
        ("tests/test_thread_ids.py", "-m", "not server", "-k", "empty"),
    ),
    Mutant(
        "the run lock is taken for an empty thread id",
        "src/run_lock.py",
        "    return require_thread_id(str(thread_id) if thread_id else thread_id)",
        "    return str(thread_id)",
        ("tests/test_thread_ids.py", "-m", "not server", "-k", "empty and platform"),
    ),
    Mutant(
        "a plan's input checks run after the face's setup has written",
        "src/_plans/faces.py",
        '        if not self._ready["sync"]:  # once set up, a plan runs as it is: no wrapper on the hot path\n'
        "            plan = started(plan)\n",
        "",
        ("tests/test_thread_ids.py", "-m", "not server", "-k", "saver_refuses"),
    ),
    Mutant(
        "an async plan's input checks run after the face's setup has written",
        "src/_plans/faces.py",
        '        if not self._ready["async"]:\n            plan = started(plan)\n',
        "",
        ("tests/test_thread_ids.py", "-m", "not server", "-k", "saver_refuses"),
    ),
    Mutant(
        "the journal replays with its own serde, not the run's saver's",
        "src/platform.py",
        "replace(self._effects, journal=self.journal.with_serde(saver.serde))",
        "replace(self._effects, journal=self.journal)",
        ("tests/test_journal_serde_modes.py", "-m", "not server"),
    ),
    Mutant(
        "a copy of a durable graph drops the strict msgpack allowlist",
        "src/platform.py",
        "        return _langgraph.keep_allowlist(self, super().copy(update))",
        "        return super().copy(update)",
        ("tests/test_journal_serde_modes.py", "-m", "not server", "-k", "with_config"),
    ),
    Mutant(
        "a strict msgpack clone of the saver is not the platform's",
        "src/journal/locator.py",
        'getattr(running, "base_saver", running) is not self.saver',
        "running is not self.saver",
        ("tests/test_journal_serde_modes.py", "-m", "not server", "-k", "plain"),
    ),
    Mutant(
        "ttl keep_latest sweep deletes the thread",
        "src/checkpointer/maintenance.py",
        '        if config.strategy == "delete":\n            if threads:',
        "        if True:\n            if threads:",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest_prunes"),
    ),
    Mutant(
        "ttl keep_latest sweep drops the whole journal",
        "src/checkpointer/maintenance.py",
        "            by_ns = yield from self._keep_latest_plan(threads)\n",
        "            by_ns = yield from self._keep_latest_plan(threads)\n"
        '            yield DeleteMany(self.collections.journal, {"thread_id": {"$in": threads}})\n',
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest_prunes"),
    ),
    Mutant(
        "ttl keep_latest sweep counts the latest checkpoint's tasks as finished",
        "src/checkpointer/maintenance.py",
        '    return sorted(set(root) - {latest["checkpoint_id"], latest.get("origin")})',
        '    return sorted(set(root) - {latest.get("origin")})',
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest"),
    ),
    Mutant(
        "ttl keep_latest sweep counts the tasks the latest checkpoint continues as finished",
        "src/checkpointer/maintenance.py",
        '    return sorted(set(root) - {latest["checkpoint_id"], latest.get("origin")})',
        '    return sorted(set(root) - {latest["checkpoint_id"]})',
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest"),
    ),
    Mutant(
        "ttl keep_latest sweep keeps what finished tasks left in the journal",
        "src/platform.py",
        "        self.checkpointer.observe_sweep_prunes(self._forget_finished)\n",
        "",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest"),
    ),
    Mutant(
        "ttl keep_latest sweep keeps the oldest checkpoint, not the latest",
        "src/checkpointer/maintenance.py",
        "            latest = max(docs)",
        "            latest = min(docs)",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest_prunes or delta_channel"),
    ),
    Mutant(
        "ttl keep_latest sweep leaves the expiry: the thread is swept again and again",
        "src/checkpointer/maintenance.py",
        '                yield UpdateMany(coll, {"thread_id": {"$in": threads}}, {"$unset": {"expire_at": ""}})',
        "                pass",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest_prunes or sweeper_sweeps"),
    ),
    Mutant(
        "ttl keep_latest readers hide an expired thread",
        "src/checkpointer/expiry.py",
        '        if self.ttl_config is None or self.ttl_config.strategy != "delete":\n            return False',
        "        if self.ttl_config is None:\n            return False",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest_prunes"),
    ),
    Mutant(
        "ttl keep_latest creates a TTL index",
        "src/checkpointer/saver.py",
        '        if self.ttl_config is not None and self.ttl_config.strategy == "keep_latest":',
        "        if False:",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "creates_no_ttl_index"),
    ),
    Mutant(
        "ttl sweep ignores sweep_limit",
        "src/checkpointer/maintenance.py",
        '        expired = yield Aggregate(self.collections.checkpoints, pipeline + ([{"$limit": limit}] if limit else []))',
        "        expired = yield Aggregate(self.collections.checkpoints, pipeline)",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "sweep_limit"),
    ),
    Mutant(
        "ttl refresh_on_read does not refresh",
        "src/checkpointer/expiry.py",
        "        if self.ttl_config is None or not self.ttl_config.refresh_on_read:\n            return",
        "        return",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "refresh_on_read"),
    ),
    Mutant(
        "ttl block accepts unknown keys",
        "src/checkpointer/ttl.py",
        "        if unknown:\n            raise InvalidInputError(",
        "        if False:\n            raise InvalidInputError(",
        ("tests/test_ttl_strategies.py", "-k", "bad_ttl"),
    ),
    Mutant(
        "ttl block accepts a bad sweep_limit",
        "src/checkpointer/ttl.py",
        "        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:",
        "        if False:",
        ("tests/test_ttl_strategies.py", "-k", "bad_ttl"),
    ),
    Mutant(
        "ttl sweeper thread dies on a failed sweep",
        "src/checkpointer/sweeper.py",
        "                self._sweep()\n            except Exception:",
        "                self._sweep()\n            except ZeroDivisionError:",
        ("tests/test_ttl_strategies.py", "-k", "failed_sweep and sync"),
    ),
    Mutant(
        "ttl sweeper task dies on a failed sweep",
        "src/checkpointer/sweeper.py",
        "                await self._sweep()\n            except Exception:",
        "                await self._sweep()\n            except ZeroDivisionError:",
        ("tests/test_ttl_strategies.py", "-k", "failed_sweep and async"),
    ),
    Mutant(
        "doctor --fix creates our indexes in a foreign database",
        "src/deployment.py",
        "    report[\"indexes\"] = db.run(index_rows_plan(names, fix and ours))",
        "    report[\"indexes\"] = db.run(index_rows_plan(names, fix))",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "doctor"),
    ),
    Mutant(
        "closing the platform leaves the checkpointer's sweepers running",
        "src/platform.py",
        "        self.checkpointer.stop_sweepers()\n        await self.checkpointer.astop_sweepers()\n        await asyncio.to_thread",
        "        await asyncio.to_thread",
        # the Agent Server factory's sweeper too: the platform's aclose() at the end of its block stops it
        (
            "tests/test_ttl_strategies.py",
            "tests/test_agent_server_factory.py",
            "-k",
            "closing_the_platform or sweeper_of_the_ttl_block",
        ),
    ),
    Mutant(
        "a sync close of the platform leaves the sweeper thread running",
        "src/platform.py",
        "        self.checkpointer.stop_sweepers()\n        self._finish_releases()\n        super().close()",
        "        self._finish_releases()\n        super().close()",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "closing_the_platform and sync"),
    ),
    # issue 20: an edit made as the interrupted node completes it; its next visit is a new occurrence
    Mutant(
        "an edit as the interrupted node is continued like any other edit",
        "src/checkpointer/memory.py",
        "        return checkpoint_id if node is not None and node in known.completed else known.origin",
        "        return known.origin",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "edit_as_the_interrupted_node"),
    ),
    Mutant(
        "a node's first effect queries for its root checkpoint while this process is still storing it",
        "src/checkpointer/roots.py",
        "        recheck_at = time.monotonic() + STORED_FIRST_CHECK_SECONDS",
        "        recheck_at = 0.0",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "own_background_store"),
    ),
    Mutant(
        "a node's first effect is not woken by the store it waits for, and polls for it instead",
        "src/checkpointer/memory.py",
        "                self._origins.popitem(last=False)\n        for wake in woken:\n            wake()\n",
        "                self._origins.popitem(last=False)\n",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "own_background_store"),
    ),
    Mutant(
        "a run given no durability is taken for a synchronous one (its effects would not wait for the store)",
        "src/_langgraph.py",
        'configurable.get(CONFIG_KEY_DURABILITY, "async") == "async"',
        'configurable.get(CONFIG_KEY_DURABILITY) == "async"',
        ("tests/test_langgraph_internals.py", "-k", "without_a_durability"),
    ),
    Mutant(
        "a run lock taken back unread without checking that it was released",
        "src/run_lock.py",
        '            {"thread_id": thread_id, "owner": None},\n            {"$set": self._holder(owner, lease.utcnow()), "$inc": {"fence": 1}},',
        '            {"thread_id": thread_id},\n            {"$set": self._holder(owner, lease.utcnow()), "$inc": {"fence": 1}},',
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "two_runs_taking_one_free_lock"),
    ),
    Mutant(
        "a run on another saver is taken for a run without a checkpointer (its effects would run unjournaled)",
        "src/journal/unjournaled.py",
        "    return _langgraph.task_writer(configurable) is not None and _langgraph.run_checkpointer(configurable) is None",
        "    return _langgraph.task_writer(configurable) is not None",
        ("tests/test_stateless_runs.py", "-k", "still_refused"),
    ),
    Mutant(
        "every run without a checkpointer is logged, not the first of its graph",
        "src/journal/unjournaled.py",
        "        if graph in _logged:\n            return\n",
        "",
        ("tests/test_stateless_runs.py", "-k", "says_so_once"),
    ),
    Mutant(
        "a sync effect on the event loop waits for the store that loop has to run",
        "src/journal/locator.py",
        "            if unstored and not (on_event_loop() and self.saver.stores_on_event_loop(thread_id)):",
        "            if unstored:",
        ("tests/test_platform_replay.py", "-k", "does_not_wait_on_the_loop and mongo_java_server"),
    ),
    Mutant(
        "a run lock that cannot be released replaces the run's own error",
        "src/run_lock.py",
        "            try:\n                await self._finish(cleanly=isinstance(ended, StopAsyncIteration))\n            except Exception as error:  # noqa: BLE001 - the run's own outcome is what the caller gets\n                _release_failed(self._thread_ids, error)\n            raise",
        "            await self._finish(cleanly=isinstance(ended, StopAsyncIteration))\n            raise",
        ("tests/test_self_fencing.py", "-k", "real_proxy and async"),
    ),
    # issue 21: the journal follows the recorded history under stalls, cancellations and handled failures
    Mutant(
        "another effect at a recorded position replays the recorded one's outcome",
        "src/journal/plans.py",
        '        if recorded == (call.kind, call.name) or (entry.get("status") == "failed" and not terminal):',
        '        if True:',
        ("tests/test_journal_store.py", "-m", "not server", "-k", "nondeterminism"),
    ),
    Mutant(
        "a rerun keeps the recorded outcome of the effect it replaces",
        "src/journal/plans.py",
        '        if self._rerun_in_place(entry, call, pos, terminal) and status != "started":\n            return "takeover"',
        '        if self._rerun_in_place(entry, call, pos, terminal) and status == "failed":\n            return "takeover"',
        ("tests/test_journal_store.py", "-m", "not server", "-k", "nondeterminism"),
    ),
    Mutant(
        "an at_most_once effect whose worker died is run again",
        "src/journal/plans.py",
        '        if (call.at_most_once or entry.get("at_most_once")) and entry.get("not_run") is not True:',
        '        if call.at_most_once and entry.get("not_run") is not True:',
        ("tests/test_journal_store.py", "tests/test_journal_lease.py", "-m", "not server", "-k", "at_most_once"),
    ),
    Mutant(
        "a claim waits for the lease of an owner whose process on this host exited",
        "src/journal/plans.py",
        "        if not expired and not owner_gone(entry):",
        "        if not expired:",
        ("tests/test_journal_lease.py", "-m", "not server", "-k", "dead_owner"),
    ),
    Mutant(
        "a take-over another worker beat is taken for won",
        "src/journal/plans.py",
        "                if (yield FencedUpdate(self.collection, takeover_fence(pos, entry), update)):",
        "                if (yield FencedUpdate(self.collection, takeover_fence(pos, entry), update)) or True:",
        ("tests/test_journal_fences.py", "tests/test_journal_races.py", "-m", "not server"),
    ),
    Mutant(
        "an interrupted effect keeps its position until its lease runs out",
        "src/journal/plans.py",
        "            yield FencedUpdate(self.collection, held_fence(pos, claimed.fence), released_update(ended.now))\n",
        "            yield Sleep(0)\n",
        ("tests/test_journal_commands.py", "-m", "not server", "-k", "left_started"),
    ),
    Mutant(
        "an outcome the serde cannot write is not recorded",
        "src/journal/plans.py",
        "            yield from self._end_claim(pos, claimed, failed_update(stored, now=ended.now, duration_ms=ended.duration_ms))\n",
        "            yield Sleep(0)\n",
        ("tests/test_journal_store.py", "-m", "not server", "-k", "unserializable"),
    ),
    Mutant(
        "a handled failure is run again on resume",
        "src/journal/plans.py",
        "    return any(key.isdigit() and int(key) > issued for key in keys)",
        "    return False",
        ("tests/test_journal_history.py", "-m", "not server", "-k", "handled_failure_is_raised_again"),
    ),
    Mutant(
        "a failure that ended the attempt counts as handled",
        "src/journal/plans.py",
        "    return any(key.isdigit() and int(key) > issued for key in keys)",
        "    return any(key.isdigit() and int(key) >= issued for key in keys)",
        ("tests/test_journal_history.py", "-m", "not server", "-k", "ended_the_attempt or retry_policy"),
    ),
    Mutant(
        "the run lock's holder ignores its own clock",
        "src/run_lock.py",
        "            if holding.lost or (not holding.released and holding.lapsed()):",
        "            if holding.lost:",
        ("tests/test_self_fencing.py", "-m", "not server", "-k", "blocked_event_loop_starts or lapsed_holder"),
    ),
    Mutant(
        "a renewal does not move the holder's own deadline",
        "src/run_lock.py",
        "        if renewed:\n            holding.renewed(sent)\n        elif not holding.released:",
        "        if not renewed and not holding.released:",
        ("tests/test_self_fencing.py", "-m", "not server", "-k", "longer_than_its_lease"),
    ),
    Mutant(
        "an effect starts after its claim outlived the run's lease",
        "src/journal/plans.py",
        "        yield from self._fence(pos, claimed)\n        with (yield self._heartbeat(pos, claimed)):\n            result = yield Invoke(fn",
        "        with (yield self._heartbeat(pos, claimed)):\n            result = yield Invoke(fn",
        ("tests/test_self_fencing.py", "-m", "not server", "-k", "outlived"),
    ),
    Mutant(
        "a claim the self-fence frees is not marked as never run",
        "src/journal/documents.py",
        '    if not_run:\n        fields["not_run"] = True\n',
        "",
        ("tests/test_self_fencing.py", "-m", "not server", "-k", "outlived"),
    ),
    Mutant(
        "a lapsed holder writes a checkpoint",
        "src/checkpointer/store.py",
        "            lease.check_self_fence(thread_id)  # a run whose lease may have run out writes no checkpoint (no I/O)\n",
        "",
        ("tests/test_self_fencing.py", "-m", "not server", "-k", "lapsed_holder"),
    ),
    Mutant(
        "a lapsed holder writes pending writes",
        "src/checkpointer/store.py",
        "        lease.check_self_fence(thread_id)\n        yield Upsert(self.collections.writes, ops)",
        "        yield Upsert(self.collections.writes, ops)",
        ("tests/test_self_fencing.py", "-m", "not server", "-k", "lapsed_holder or blocked_event_loop_writes"),
    ),
    Mutant(
        "a cancelled effect frees its position while its thread still works",
        "src/journal/plans.py",
        "        if isinstance(result, Raised) and result.pending is not None:\n            yield from self._outlive(call, pos, claimed, result)\n",
        "",
        ("tests/test_journal_cancellation.py", "-m", "not server", "-k", "plain and sync"),
    ),
    Mutant(
        "a cancelled await of an effect is not shielded",
        "src/_plans/interpreters.py",
        "            return Raised(exc) if work.cancelled() else Raised(exc, pending=work)",
        "            return Raised(exc)",
        ("tests/test_journal_cancellation.py", "-m", "not server", "-k", "to_thread"),
    ),
    Mutant(
        "the hold of a cancelled effect is cut short by the node's next cancellation",
        "src/_plans/interpreters.py",
        "        while not task.done():\n            with contextlib.suppress(BaseException):",
        "        if not task.done():\n            with contextlib.suppress(BaseException):",
        ("tests/test_journal_cancellation.py", "-m", "not server", "-k", "run_in_executor"),
    ),
    Mutant(
        "an unclaimed effect cancelled under the run lock is not claimed before the run ends",
        "src/journal/plans.py",
        "        if claimed.unclaimed is not None:\n            claimed = yield from self._claim_late(pos, claimed)\n",
        "",
        ("tests/test_journal_cancellation.py", "-m", "not server", "-k", "platform.compile"),
    ),
    Mutant(
        "a claim whose reply was lost is not sent again",
        "src/journal/plans.py",
        "        if not isinstance(answer.error, ConnectionFailure):\n            raise answer.error",
        "        raise answer.error",
        ("tests/test_journal_lost_replies.py", "-m", "not server"),
    ),
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    Mutant(
        "issue 25: a URI's password printed (user info not masked)",
        "src/connections.py",
        "        tail = f\"***@{tail.rpartition('@')[2]}\"",
        "        pass",
        ("tests/test_cli_credentials.py", "-m", "not server"),
    ),
    Mutant(
        "issue 25: a secret URI option printed",
        "src/connections.py",
        "    return prefix + _SECRET_OPTION.sub(r\"\\1\\2=<redacted>\", tail)",
        "    return prefix + tail",
        ("tests/test_cli_credentials.py", "-m", "not server"),
    ),
    Mutant(
        "issue 25: a refused login reported as another failure",
        "src/server_errors.py",
        "    if isinstance(error, OperationFailure) and error.code in AUTH_CODES:",
        "    if False:",
        ("tests/test_cli_credentials.py",),
    ),
    Mutant(
        "issue 25: control characters written raw to the terminal",
        "src/cli/terminal.py",
        "    if text.isprintable():\n        return text",
        "    if True:\n        return text",
        ("tests/test_cli_terminal.py", "-m", "not server"),
    ),
    Mutant(
        "issue 25: threads writes stored thread ids raw",
        "src/cli/threads.py",
        "    rows = escaped(rows)\n",
        "",
        ("tests/test_cli_terminal.py", "-m", "not server", "-k", "threads_and_maintenance"),
    ),
    Mutant(
        "issue 25: inspect writes stored text raw",
        "src/cli/threads.py",
        "    report = escaped(report)\n",
        "",
        ("tests/test_cli_terminal.py", "-m", "not server", "-k", "inspect"),
    ),
    Mutant(
        "issue 25: delete and prune write stored thread ids raw",
        "src/cli/maintenance.py",
        "    report = escaped(report)\n",
        "",
        ("tests/test_cli_terminal.py", "-m", "not server", "-k", "threads_and_maintenance"),
    ),
    Mutant(
        "issue 25: doctor writes the server's strings raw",
        "src/cli/doctor.py",
        "    report = escaped(report)\n",
        "",
        ("tests/test_cli_terminal.py", "-m", "not server", "-k", "doctor"),
    ),
    Mutant(
        "issue 25: error messages written raw to stderr",
        "src/cli/main.py",
        'print(f"error: {printable(str(error))}", file=sys.stderr)',
        'print(f"error: {error}", file=sys.stderr)',
        ("tests/test_cli_terminal.py", "-m", "not server", "-k", "errors_and"),
    ),
    Mutant(
        "issue 25: a TTL or interval above 100 years accepted",
        "src/checkpointer/ttl.py",
        "    if value > largest:",
        "    if False:",
        ("tests/test_ttl_strategies.py", "tests/test_agent_server_factory.py", "-m", "not server", "-k", "bad_ttl"),
    ),
    Mutant(
        "issue 25: a sweeper thread that dies says nothing",
        "src/checkpointer/sweeper.py",
        "        except BaseException:  # the thread ends here either way: say so\n            logger.exception(_DIED)",
        "        except BaseException:  # the thread ends here either way: say so\n            pass",
        ("tests/test_ttl_strategies.py", "-k", "dies or overflows"),
    ),
    Mutant(
        "issue 25: a sweeper task that dies says nothing",
        "src/checkpointer/sweeper.py",
        "        except BaseException:\n            logger.exception(_DIED)",
        "        except BaseException:\n            pass",
        ("tests/test_ttl_strategies.py", "-k", "dies"),
    ),
    Mutant(
        "issue 25: a bare ttl in LANGGRAPH_CHECKPOINTER read as seconds",
        "src/server.py",
        "            return _minutes(ttl) if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) else ttl",
        "            return ttl",
        ("tests/test_agent_server_factory.py", "-m", "not server", "-k", "reads_the_ttl"),
    ),
    Mutant(
        "issue 25: JSON text not parsed before redaction",
        "src/journal/redaction.py",
        "    parsed = _json_in(text)\n",
        "    parsed = None\n",
        ("tests/test_journal_redaction.py",),
    ),
    Mutant(
        "issue 25: (name, value) credential pairs kept in clear",
        "src/journal/redaction.py",
        "    if _is_credential_pair(value):\n        return [value[0], REDACTED]\n",
        "",
        ("tests/test_journal_redaction.py",),
    ),
    Mutant(
        "issue 25: provider keys in text kept in clear",
        "src/journal/redaction.py",
        "    text = KEY_PATTERNS.sub(REDACTED, text)\n",
        "",
        ("tests/test_journal_redaction.py",),
    ),
    Mutant(
        "issue 25: credential URL query parameters kept in clear",
        "src/journal/redaction.py",
        "if m[3] and is_credential_key(m[2]) else m[0]",
        "if False else m[0]",
        ("tests/test_journal_redaction.py",),
    ),
    Mutant(
        "a credential (name, value) pair's value is not scrubbed from stored text",
        "src/journal/redaction.py",
        "        return [(value[1], True)]",
        "        return [(v, under_credential) for v in value]",
        ("tests/test_journal_redaction.py",),
    ),
    Mutant(
        "the credentials of an input given as JSON text are not scrubbed from stored text",
        "src/journal/redaction.py",
        "        return [(parsed, False)]",
        "        return None",
        ("tests/test_journal_redaction.py",),
    ),
    Mutant(
        "issue 25: an echoed secret escaped by JSON or repr survives scrubbing",
        "src/journal/redaction.py",
        "(secret, json.dumps(secret)[1:-1], repr(secret)[1:-1])",
        "(secret,)",
        ("tests/test_journal_redaction.py",),
    ),
    Mutant(
        "issue 25: a message's text not redacted in readable()",
        "src/journal/redaction.py",
        "    content = redact_text(message.content) if isinstance",
        "    content = message.content if isinstance",
        ("tests/test_journal_redaction.py",),
    ),
    Mutant(
        "issue 25: a checkpoint document read unchecked",
        "src/checkpointer/store.py",
        "        check_checkpoints(self.collections.checkpoints, docs)\n        docs = [d for d in docs if not self.expiry.expired(d)]",
        "        docs = [d for d in docs if not self.expiry.expired(d)]",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "checkpoint_that_cannot"),
    ),
    Mutant(
        "issue 25: a pending write read unchecked",
        "src/checkpointer/store.py",
        "        check_values(self.collections.writes, found_writes, WRITE_FIELDS)\n",
        "",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "pending_write"),
    ),
    Mutant(
        "issue 25: a blob document read unchecked",
        "src/checkpointer/documents.py",
        "    check_values(collection, docs, BLOB_FIELDS)\n",
        "",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "damaged_blob"),
    ),
    Mutant(
        "issue 25: a value the checkpoint references but cannot load dropped in silence",
        "src/checkpointer/documents.py",
        "        if typed is None:\n            raise _missing_value(doc, entry)\n",
        "        if typed is None:\n            continue\n",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "cannot_load"),
    ),
    Mutant(
        "issue 25: threads crashes on a non-string thread id",
        "src/views/documents.py",
        '    listed = [s for s in summaries if isinstance(s.get("thread_id"), str)]\n    latest = (',
        '    listed = list(summaries)\n    latest = (',
        ("tests/test_cli_corrupt.py", "-m", "not server"),
    ),
    Mutant(
        "issue 25: inspect reads documents unchecked",
        "src/cli/threads.py",
        "        problem = document_problem(collection, doc, fields)\n",
        "        problem = None\n",
        ("tests/test_cli_corrupt.py", "-m", "not server"),
    ),
    Mutant(
        "issue 25: the CLI exits 0 on documents it could not read",
        "src/cli/main.py",
        "    return EXIT_PROBLEM if problems else EXIT_OK",
        "    return EXIT_OK",
        ("tests/test_cli_corrupt.py", "-m", "not server"),
    ),
    Mutant(
        "issue 25: replaced bytes of an inline value loaded as another value",
        "src/checkpointer/documents.py",
        "                check_checksum(collection, d, f\"values.{i}.{VALUE_DATA}\", bytes(e[VALUE_DATA]), e.get(CHECKSUM))\n",
        "",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "checksum"),
    ),
    Mutant(
        "issue 25: replaced bytes of a blob loaded as another value",
        "src/checkpointer/documents.py",
        "    check_assembled(collection, docs, BLOB_KEY, values)\n",
        "",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "checksum"),
    ),
    Mutant(
        "issue 25: replaced bytes of a pending write loaded as another value",
        "src/checkpointer/store.py",
        "        check_assembled(self.collections.writes, docs, WRITE_KEY, values)\n",
        "",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "checksum"),
    ),
    Mutant(
        "issue 25: threads names a bad thread id with an operator query",
        "src/views/documents.py",
        'Find(names.checkpoints, {"thread_id": {"$eq": thread_id}, "checkpoint_ns": SUMMARY_NS}, limit=1)',
        'Find(names.checkpoints, {"thread_id": thread_id, "checkpoint_ns": SUMMARY_NS}, limit=1)',
        ("tests/test_cli_corrupt.py", "-m", "not server", "-k", "threads"),
    ),
    # issue 23: the thread summary, kept by the root put's own command
    Mutant(
        "a root put sent again counts its checkpoint twice in the thread summary",
        "src/thread_summaries.py",
        '        {"_id": summary_id(thread_id), LATEST: {"$lt": checkpoint_id}},',
        '        {"_id": summary_id(thread_id)},',
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "stored_again"),
    ),
    Mutant(
        "list without a namespace yields the thread summary as a checkpoint",
        "src/checkpointer/store.py",
        '    query.setdefault("checkpoint_ns", NOT_SUMMARY)\n',
        "",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "without_a_namespace"),
    ),
    Mutant(
        "prune leaves the summary counting the checkpoints it deleted",
        "src/checkpointer/maintenance.py",
        "        summaries = _pruned_summaries(by_ns, keep)\n",
        "        summaries = []\n",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "prune"),
    ),
    Mutant(
        "delete_for_runs leaves the summary naming the latest checkpoint it deleted",
        "src/checkpointer/maintenance.py",
        'None if latest == max(docs) else latest))',
        'None))',
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "prune"),
    ),
    Mutant(
        "prune reads the thread summary as a checkpoint",
        "src/checkpointer/maintenance.py",
        '        query = {"thread_id": {"$in": thread_ids}, "checkpoint_ns": NOT_SUMMARY}\n',
        '        query = {"thread_id": {"$in": thread_ids}}\n',
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "prune"),
    ),
    Mutant(
        "building the summaries starts each page's first thread afresh",
        "src/summary_drift.py",
        "        folded, pending = _fold(docs, pending)\n",
        "        folded, pending = _fold(docs, None)\n",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "format_1"),
    ),
    Mutant(
        "a format 1 database is stamped newer without its migration",
        "src/storage_format.py",
        "            yield from MIGRATIONS[step - 1](self.collections)\n",
        "",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "format_1 or unstamped"),
    ),
    Mutant(
        "the inspector lists a format 1 database without upgrading it",
        "src/views/reader.py",
        "    if stored.foreign is None and stored.has_data and (stored.version or 0) < FORMAT_VERSION:",
        "    if False:",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "inspector_upgrades"),
    ),
    Mutant(
        "the thread list pages summaries out of thread id order",
        "src/views/plans.py",
        'SUMMARY_PROJECTION, sort=[("thread_id", 1)], limit=',
        'SUMMARY_PROJECTION, sort=[("latest", -1)], limit=',
        ("tests/test_views_servers.py", "tests/test_cli_threads.py", "-m", "not server"),
    ),
    # issue 22: SecureLLM streams when the wrapped model would, and runs it inside its own callback run
    Mutant(
        "SecureLLM streams though the wrapped model cannot",
        "src/journal/llm.py",
        "        if not isinstance(model, BaseChatModel):\n            return super()._should_stream(",
        "        if True:\n            return super()._should_stream(",
        ("tests/test_journal_streaming.py",),
    ),
    Mutant(
        "SecureLLM nests the wrapped model's run under its own",
        "src/journal/llm.py",
        "        return (model, bound) if isinstance(model, BaseChatModel) else None",
        "        return None",
        ("tests/test_journal_streaming.py", "tests/test_journal_callbacks.py"),
    ),
    Mutant(
        "SecureLLM runs a binding with a config inside its own run",
        "src/journal/llm.py",
        "        if type(model) is RunnableBinding and not model.config and not model.config_factories:",
        "        if isinstance(model, RunnableBinding):",
        ("tests/test_journal_streaming.py",),
    ),
    Mutant(
        "SecureLLM's one run of a real call hides the tokens it used",
        "src/journal/llm.py",
        "        if self.recorded is None or not usage:",
        "        if not usage:",
        ("tests/test_journal_callbacks.py", "-k", "counts_its_tokens_once or says_where_it_is"),
    ),
    Mutant(
        "a URI passed as a client is taken for one",
        "src/_plans/faces.py",
        "    if isinstance(client, str) or isinstance(async_client, str):",
        "    if False:",
        ("tests/test_database_naming.py", "-k", "refused"),
    ),
    Mutant(
        "db_name= loses to the URI's path",
        "src/connections.py",
        "    if db_name:\n        return db_name\n",
        "",
        ("tests/test_database_naming.py",),
    ),
    Mutant(
        "doctor expects a run lock index where no run lock is ever taken",
        "src/deployment.py",
        "    no_run_locks = names.checkpoints in collections and names.runs not in collections",
        "    no_run_locks = False",
        ("tests/test_cli_deployments.py", "-k", "agent_server"),
    ),
    Mutant(
        "doctor takes a database without checkpoints for one without run locks",
        "src/deployment.py",
        "    no_run_locks = names.checkpoints in collections and names.runs not in collections",
        "    no_run_locks = names.runs not in collections",
        ("tests/test_cli_deployments.py", "-k", "empty_database"),
    ),
    Mutant(
        "threads reads a foreign database as its own",
        "src/views/reader.py",
        "    if stored.foreign is not None:\n        message",
        "    if False:\n        message",
        ("tests/test_cli_deployments.py", "-k", "mongodbsaver"),
    ),
    Mutant(
        "import-mongodbsaver draws its bar into logs and pipes",
        "src/cli/migrate.py",
        '    if not getattr(err, "isatty", lambda: False)():',
        "    if False:",
        ("tests/test_mongodbsaver_import.py", "-k", "progress_bar"),
    ),
    Mutant(
        "ui writes without --allow-writes",
        "src/ui/app.py",
        "            if not guard.allow_writes:\n",
        "            if False:\n",
        ("tests/test_ui_api.py", "-k", "allow_writes"),
    ),
    Mutant(
        "ui writes without the CSRF token",
        "src/ui/app.py",
        "            if not guard.csrf_valid(",
        "            if False and not guard.csrf_valid(",
        ("tests/test_ui_api.py", "-k", "csrf"),
    ),
    Mutant(
        "ui serves a remote client without its token",
        "src/ui/app.py",
        "        if not self.guard.token_valid(presented):",
        "        if False:",
        ("tests/test_ui_api.py", "-k", "token"),
    ),
    Mutant(
        "ui serves a host name that is not loopback",
        "src/ui/app.py",
        "        if not self.guard.host_allowed(",
        "        if False and not self.guard.host_allowed(",
        ("tests/test_ui_api.py", "-k", "loopback"),
    ),
    Mutant(
        "ui listens on a remote host without --allow-remote",
        "src/ui/guard.py",
        "    if not allow_remote:\n",
        "    if False:\n",
        ("tests/test_ui_api.py", "-k", "remote"),
    ),
    # -- records trailing their effects, roots foreseen (issue 20) --
    Mutant(
        "a node's writes are saved before the records of its effects",
        "src/checkpointer/roots.py",
        "        if held := self.holds.of_task(thread_id, task_id):\n            yield Join(held)",
        "        if False:\n            yield Join(())",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "starts_once"),
    ),
    Mutant(
        "a checkpoint is saved before the records of the tasks before it",
        "src/checkpointer/store.py",
        "            yield from self.roots.after_held(thread_id, checkpoint_ns, checkpoint_id)\n",
        "",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "another_worker_beat"),
    ),
    Mutant(
        "an effect starts before the record of the one before it is written",
        "src/journal/plans.py",
        "        yield from self._after_trailing_records(where)\n        pos, claimed = yield from self._claim(call, where)\n        if isinstance(claimed, _RecordedOutcome):\n            return",
        "        pos, claimed = yield from self._claim(call, where)\n        if isinstance(claimed, _RecordedOutcome):\n            return",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "starts_once"),
    ),
    Mutant(
        "a retry does not wait for the records of the attempt before it",
        "src/journal/attempt.py",
        "Attempt(number, trail=attempt.trail if attempt is not None else None)",
        "Attempt(number)",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "retry_meets"),
    ),
    Mutant(
        "a trailing record another worker beat hands the node's writes that worker's outcome silently",
        "src/journal/plans.py",
        "            if trailing:\n                raise EffectRecordLostError(",
        "            if False:\n                raise EffectRecordLostError(",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "another_worker_beat"),
    ),
    Mutant(
        "a checkpoint waits for no task of its namespace prepared before it",
        "src/checkpointer/memory.py",
        "hold.prepared_from < checkpoint_id",
        "hold.prepared_from > checkpoint_id",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "another_worker_beat"),
    ),
    Mutant(
        "a new run keeps the failed records of the run before it",
        "src/checkpointer/saver.py",
        "            self._roots.holds.drop_failed(thread_id)",
        "            pass",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "cancelled_with_a_record_lost or stopped_with_a_record_lost"),
    ),
    Mutant(
        "a stream that raised releases the run lock as ended cleanly",
        "src/run_lock.py",
        "            self._finish(cleanly=isinstance(ended, StopIteration))  # its release",
        "            self._finish(cleanly=True)  # its release",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "failed_releases_the_lock and stream and sync"),
    ),
    Mutant(
        "an async stream that raised releases the run lock as ended cleanly",
        "src/run_lock.py",
        "await self._finish(cleanly=isinstance(ended, StopAsyncIteration))",
        "await self._finish(cleanly=True)",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "failed_releases_the_lock and stream and async"),
    ),
    Mutant(
        "a batch whose run raised releases the run lock as ended cleanly",
        "src/run_lock.py",
        "        except BaseException:\n            held.release(cleanly=False)\n            raise\n        held.release()",
        "        finally:\n            held.release()",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "batch and sync"),
    ),
    Mutant(
        "an async batch whose run raised releases the run lock as ended cleanly",
        "src/run_lock.py",
        "        except BaseException:\n            await held.arelease(cleanly=False)\n            raise\n        await held.arelease()",
        "        finally:\n            await held.arelease()",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "batch and async"),
    ),
    Mutant(
        "a sync effect on the event loop waits for an async effect's record that loop has to write",
        "src/_plans/interpreters.py",
        "            if not on_a_loop or future.done():",
        "            if True:",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "does_not_block"),
    ),
    Mutant(
        "a sync run finds its own release still under way and waits for its lease",
        "src/run_lock.py",
        "                if (releasing := self._release_of(thread_id)) is not None:\n                    releasing.result()",
        "                if False:\n                    pass",
        ("tests/test_run_lock.py", "-m", "not server", "-k", "returns_before and not ainvoke"),
    ),
    Mutant(
        "an async run finds a sync run's release still under way and waits for its lease",
        "src/run_lock.py",
        "                if (releasing := self._release_of(thread_id)) is not None:\n                    await asyncio.wrap_future(releasing)",
        "                if False:\n                    pass",
        ("tests/test_run_lock.py", "-m", "not server", "-k", "returns_before and ainvoke"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    Mutant(
        "issue 34: a stamp may declare a collection holding a NUL or a $",
        "src/thread_collections.py",
        '    if "\\x00" in name or "$" in name:',
        "    if False:",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "could_not_have_made and (NUL or cmd)"),
    ),
    Mutant(
        "issue 34: a stamp may declare an empty collection name",
        "src/thread_collections.py",
        "    if not name:\n",
        "    if False:\n",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "could_not_have_made and empty"),
    ),
    Mutant(
        "issue 34: a stamp may declare a system collection",
        "src/thread_collections.py",
        '    if name.startswith("system."):',
        "    if False:",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "could_not_have_made and system"),
    ),
    Mutant(
        "issue 34: a stamp may declare a non-string",
        "src/thread_collections.py",
        "    if not isinstance(name, str):\n",
        "    if False:\n",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "could_not_have_made and non-strings"),
    ),
    Mutant(
        "issue 34: a stamp's thread_collections may be a string or an object",
        "src/thread_collections.py",
        "    if not isinstance(listed, list):\n",
        "    if False:\n",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "could_not_have_made and (string or object)"),
    ),
    Mutant(
        "issue 34: a declared name is trusted without its key index",
        "src/storage_format.py",
        "            if not THREAD_KEY_INDEXES & set((yield ListIndexes(name))):",
        "            if not THREAD_KEY_INDEXES | set((yield ListIndexes(name))):",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "application or renamed or run_locks or ttl_index"),
    ),
    Mutant(
        "issue 34: a collection trusted once is looked up again every time",
        "src/storage_format.py",
        "            self.thread_collections.trust(name)\n",
        "",
        ("tests/test_thread_collections.py", "-k", "renamed_is_trusted and mongo_java_server"),
    ),
    Mutant(
        "issue 34: a malformed stamp read at the format check is taken as it is",
        "src/storage_format.py",
        "        if stored.problem is not None:\n            raise self._malformed(stored.problem)\n",
        "",
        ("tests/test_thread_collections.py", "tests/test_storage_format.py", "-m", "not server", "-k", "could_not_have_made or never_wrote"),
    ),
    Mutant(
        "issue 34: a stamp made malformed after the format check is taken as it is",
        "src/storage_format.py",
        "            if problem is not None:\n                raise self._malformed(problem)\n            yield from self._learn_plan(_declared(found[0]))",
        "            yield from self._learn_plan(_declared(found[0]) if problem is None else ())",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "could_not_have_made"),
    ),
    Mutant(
        "issue 34: a stamp version of 0 or less passes",
        "src/storage_format.py",
        "isinstance(version, int) and not isinstance(version, bool) and version >= 1:",
        "isinstance(version, int) and not isinstance(version, bool):",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "never_wrote"),
    ),
    Mutant(
        "issue 34: a stamp version True passes for 1",
        "src/storage_format.py",
        "isinstance(version, int) and not isinstance(version, bool) and version >= 1:",
        "isinstance(version, int) and version >= 1:",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "never_wrote"),
    ),
    Mutant(
        "issue 34: doctor repairs summaries in a newer format",
        "src/deployment.py",
        "    if stored.version is None or not 2 <= stored.version <= FORMAT_VERSION:",
        "    if stored.version is None or not 2 <= stored.version:",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "repairs_nothing"),
    ),
    Mutant(
        "issue 34: delete_thread deletes checkpoints before the journal",
        "src/checkpointer/maintenance.py",
        "        return [n for n in names if n not in own] + [n for n in own if n in names]",
        "        return list(names)",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "cut_short"),
    ),
    Mutant(
        "issue 34: a copy cut short cannot be completed",
        "src/checkpointer/maintenance.py",
        "        if holding and not (yield Find(self.collections.metadata, note, {\"_id\": 1}, limit=1)):",
        "        if holding:",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "copy_thread_cut_short"),
    ),
    Mutant(
        "issue 34: a copy cut short is completed from another source",
        "src/checkpointer/maintenance.py",
        '        note = {"_id": key_id("copy_thread", target_thread_id), "source": source_thread_id}',
        '        note = {"_id": key_id("copy_thread", target_thread_id)}',
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "copy_thread_cut_short"),
    ),
    Mutant(
        "issue 34: a copy completed leaves its note",
        "src/checkpointer/maintenance.py",
        '        yield DeleteMany(self.collections.metadata, {"_id": note["_id"]})\n',
        "",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "copy_thread_cut_short"),
    ),
    Mutant(
        "issue 34: a copy completed keeps the older expiry of what was copied before",
        "src/checkpointer/maintenance.py",
        "        if expiry and resumed:\n            yield from self.expiry.spread(target_thread_id, expiry)\n        elif expiry:",
        "        if expiry:",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "copy_thread_cut_short"),
    ),
    Mutant(
        "issue 34: an upgrade overwrites a summary a later checkpoint was counted in",
        "src/summary_drift.py",
        '        {"_id": summary_id(summary["thread_id"]), LATEST: {"$lte": summary[LATEST]}},',
        '        {"_id": summary_id(summary["thread_id"])},',
        ("tests/test_thread_summaries.py", "tests/test_storage_migrations.py", "-m", "not server", "-k", "rolls_a_summary_back or rolls_back"),
    ),
    Mutant(
        "issue 34: a summary past what the upgrade read is left with the count a racing put started",
        "src/summary_drift.py",
        '        elif verdict == "past":\n            past.append(summary["thread_id"])',
        '        elif verdict == "past":\n            pass',
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "rolls_a_summary_back and reads_the_summaries"),
    ),
    Mutant(
        "issue 34: a summary write that did not hold is not counted again",
        "src/summary_drift.py",
        "        past += [s[\"thread_id\"] for s in behind if _verdict(again.get(s[\"thread_id\"]), s) != \"held\"]\n",
        "",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "rolls_a_summary_back"),
    ),
    Mutant(
        "issue 34: a recount sets the count whatever was put since",
        "src/summary_drift.py",
        "        if (yield FencedUpdate(names.checkpoints, *_raise_to(summary))):\n            return True\n",
        "        yield Upsert(names.checkpoints, [UpdateOne({\"_id\": summary_id(thread_id)}, _raise_to(summary)[1], upsert=True)])\n        return True\n",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "recount_never_loses"),
    ),
    Mutant(
        "issue 34: a short summary is taken for a right one",
        "src/summary_drift.py",
        '    return "short" if count < folded[COUNT] else "held"',
        '    return "held"',
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "rolls_a_summary_back and before_its_read"),
    ),
    Mutant(
        "issue 34: a summary no count can settle is taken for settled",
        "src/summary_drift.py",
        "every checkpoint\n    return False\n",
        "every checkpoint\n    return True\n",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "later_checkpoint_than_any"),
    ),
    Mutant(
        "issue 34: doctor finds drift but calls the database ok",
        "src/deployment.py",
        "    report[\"ok\"] = ours and indexed and not drifted(report[\"summaries\"])",
        "    report[\"ok\"] = ours and indexed",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "found_and_repaired"),
    ),
    Mutant(
        "issue 34: doctor reads every thread of a large database",
        "src/summary_drift.py",
        "        if seconds is not None and time.monotonic() - started >= seconds:",
        "        if False:",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "time_bound"),
    ),
    Mutant(
        "issue 34: the thread lists hide a thread whose summary is missing",
        "src/views/plans.py",
        "    missing = yield from unsummarized_plan(names, condition, [s.get(\"thread_id\") for s in found], limit + 1)",
        "    missing: list = []",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "summary_is_missing"),
    ),
    Mutant(
        "issue 34: the thread lists page past an unsummarized thread",
        "src/views/plans.py",
        '        condition["$lt"] = min(condition.get("$lt", found[limit]["thread_id"]), found[limit]["thread_id"])',
        "        pass",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "summary_is_missing"),
    ),
    Mutant(
        "issue 34: the thread lists list a thread whose summary is damaged twice",
        "src/summary_drift.py",
        "        if docs and not damaged:",
        "        if docs:",
        ("tests/test_cli_corrupt.py", "-m", "not server", "-k", "non_string"),
    ),
    Mutant(
        "issue 34: a datetime in metadata is stored as a BSON date",
        "src/checkpointer/documents.py",
        "_NATIVE = (str, bool, float, bytes, type(None))",
        "_NATIVE = (str, bool, float, bytes, type(None), datetime)",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "exactly"),
    ),
    Mutant(
        "issue 34: an int past 64 bits in metadata reaches BSON",
        "src/checkpointer/documents.py",
        "    if type(value) in _NATIVE or (type(value) is int and value in _INT64):",
        "    if type(value) in _NATIVE or type(value) is int:",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "cannot_write"),
    ),
    Mutant(
        "issue 34: a dict with keys that are no strings is stored as a document",
        "src/checkpointer/documents.py",
        "    if type(value) is dict and all(isinstance(k, str) for k in value):",
        "    if type(value) is dict:",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "exactly"),
    ),
    Mutant(
        "issue 34: metadata stored through the serde is read back as its stored form",
        "src/checkpointer/documents.py",
        "        if set(stored) == {SERDE_TYPE, SERDE_DATA}:",
        "        if False:",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "exactly or nested_filter"),
    ),
    Mutant(
        "issue 34: an int past 32 bits comes back as pymongo's Int64",
        "src/checkpointer/documents.py",
        "    return int(stored) if type(stored) is Int64 else stored",
        "    return stored",
        ("tests/test_checkpointer_metadata.py", "-k", "exactly and pymongo-mongo_java_server"),
    ),
    Mutant(
        "issue 34: a filter compares a value BSON would change in its BSON form",
        "src/checkpointer/store.py",
        'query.update(containment_filter("metadata", filter, lambda value: stored_value(value, serde.dumps_typed, "a filter value")))',
        'query.update(containment_filter("metadata", filter))',
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "filter_on_a_value"),
    ),
    Mutant(
        "issue 34: a checkpoint whose channel_values is no dict reaches the codec",
        "src/checkpointer/documents.py",
        "        if not isinstance(value, Mapping):\n            raise InvalidInputError(f\"{name} must be a dict",
        "        if False:\n            raise InvalidInputError(f\"{name} must be a dict",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "malformed"),
    ),
    Mutant(
        "issue 34: a channel value without a version is stored",
        "src/checkpointer/documents.py",
        "    if unversioned:\n",
        "    if False:\n",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "malformed"),
    ),
    Mutant(
        "issue 34: the journal and the run locks write with the client's concern",
        "src/_plans/faces.py",
        "        majority = role in MAJORITY_WRITTEN",
        "        majority = False",
        ("tests/test_write_concerns.py", "-m", "not server"),
    ),
    Mutant(
        "issue 34: the journal writes with the client's concern",
        "src/journal/journal.py",
        '            role="journal",\n',
        "",
        ("tests/test_write_concerns.py", "-m", "not server"),
    ),
    Mutant(
        "issue 34: the run locks write with the client's concern",
        "src/run_lock.py",
        '            role="runs",\n',
        "",
        ("tests/test_write_concerns.py", "-m", "not server"),
    ),
    Mutant(
        "issue 34: majority drops the client's wtimeout and j",
        "src/schema.py",
        '    return WriteConcern(**{**given.document, "w": "majority"})',
        '    return WriteConcern(w="majority")',
        ("tests/test_write_concerns.py", "-m", "not server", "-k", "lower"),
    ),
    Mutant(
        "issue 34: a per-loop client's collection is made without its options",
        "src/connections.py",
        "        return LoopBound(self._clients, (*self._path, name), options)",
        "        return LoopBound(self._clients, (*self._path, name))",
        ("tests/test_write_concerns.py", "-k", "per_loop and mongo_java_server"),
    ),
    Mutant(
        "a request's failure is not raised in its plan",
        "src/_plans/interpreters.py",
        "            result = self.execute(request)\n        except BaseException as error:  # noqa: BLE001 - raised in the plan, which re-raises what it does not handle\n            return _plan_raise(plan, error)",
        "            result = self.execute(request)\n        except BaseException as error:  # noqa: BLE001\n            raise",
        ("tests/test_failed_root_store.py", "-m", "not server", "-k", "not async_face"),
    ),
    Mutant(
        "an async request's failure is not raised in its plan",
        "src/_plans/interpreters.py",
        "            result = await self.execute(request)\n        except BaseException as error:  # noqa: BLE001 - raised in the plan, which re-raises what it does not handle\n            return _plan_raise(plan, error)",
        "            result = await self.execute(request)\n        except BaseException as error:  # noqa: BLE001\n            raise",
        ("tests/test_failed_root_store.py", "-m", "not server", "-k", "async_face"),
    ),
    # -- issue 36: the first hour --
    Mutant(
        "a run lock taken over is not logged",
        "src/run_lock.py",
        '            logger.info("took over the run lock of thread %r from %s", thread_id, _describe(holder))',
        "            pass",
        ("tests/test_logging.py", "-m", "not server", "-k", "run_lock_taken_over"),
    ),
    Mutant(
        "an effect's lease lost before its record is not logged",
        "src/journal/plans.py",
        '        logger.warning("%s %r at %s: lease lost before recording; the outcome was not recorded", call.kind, call.name, pos)',
        "        pass",
        ("tests/test_logging.py", "-m", "not server", "-k", "lost_effect_lease"),
    ),
    Mutant(
        "the platform is served through weakref.WeakMethod, which prints at interpreter exit",
        "src/journal/context.py",
        "    _served[checkpointer] = _held_weakly(scope_for) if",
        "    _served[checkpointer] = weakref.WeakMethod(scope_for) if",
        ("tests/test_platform_forms.py", "-k", "noise"),
    ),
    Mutant(
        "the docs build quotes a figure no run measured",
        "scripts/mkdocs_hooks.py",
        "            raise KeyError(key)",
        "            return \"?\"",
        ("tests/test_docs_numbers.py",),
    ),
    Mutant(
        "the home page keeps the README's docs/ links, which are no pages of the site",
        "scripts/mkdocs_hooks.py",
        '        return target[len("docs/"):]',
        "        return target",
        ("tests/test_docs_numbers.py",),
    ),
    Mutant(
        "the thread table's columns are as wide as the longest id, not its header",
        "src/cli/threads.py",
        '    width = max(len(str(r["thread_id"])) for r in [{"thread_id": "THREAD"}, *rows])',
        '    width = max(len(str(r["thread_id"])) for r in rows)',
        ("tests/test_cli_threads.py", "-k", "align"),
    ),
    Mutant(
        "SecureLLM's runs and events are named SecureLLM, not the wrapped model",
        "src/journal/llm.py",
        '        if name is None and self.name is None and hasattr(self._chat_model, "get_name"):',
        "        if False:",
        ("tests/test_journal_streaming.py", "-k", "each_call_shows_once"),
    ),
    Mutant(
        "the clients from_conn_string opens wait pymongo's 30 s for an unreachable server",
        "src/connections.py",
        "        timeout = selection_timeout(uri, APP_SERVER_SELECTION_MS)",
        "        timeout = {}",
        ("tests/test_checkpointer_connections.py", "-k", "unreachable and sync"),
    ),
    Mutant(
        "an unreachable server surfaces as pymongo's whole topology description",
        "src/_plans/faces.py",
        "        try:\n            return self._sync_face().run(plan)\n        except ServerSelectionTimeoutError as error:\n            raise unreachable(error) from None",
        "        return self._sync_face().run(plan)",
        ("tests/test_checkpointer_connections.py", "-k", "unreachable and sync"),
    ),
    Mutant(
        "an option the platform does not take reaches an inner class",
        "src/platform.py",
        "    unknown = [name for name in options if name not in known]",
        "    unknown = []",
        ("tests/test_bad_input_options.py", "-k", "typo"),
    ),
    Mutant(
        "a platform's with block does not close it",
        "src/platform.py",
        "    def __exit__(self, *exc: object) -> None:\n        self.close()",
        "    def __exit__(self, *exc: object) -> None:\n        pass",
        ("tests/test_bad_input_options.py", "-k", "context_manager"),
    ),
    Mutant(
        "a replay under the run lock is not logged",
        "src/journal/plans.py",
        "        _log_replay(call, pos, known)\n",
        "",
        ("tests/test_logging.py", "-m", "not server", "-k", "under_the_run_lock"),
    ),
    # -- issue 32: positions named by LangGraph's identity of the work --
    Mutant(
        "a task waiting for a root store refused for a lost lock says the checkpoint was not stored",
        "src/checkpointer/roots.py",
        "                if isinstance(error, RunLockLostError):",
        "                if False:",
        ("tests/test_failed_root_store.py", "-m", "not server", "-k", "lost_lock"),
    ),
    Mutant(
        "a run of this process that ended is held to its lease when its release was lost",
        "src/run_lock.py",
        "            if found and not _takeable(found[0], now) and not self._ended_here(found[0].get(\"owner\")):",
        "            if found and not _takeable(found[0], now):",
        ("tests/test_run_lock.py", "-m", "not server", "-k", "release_lost"),
    ),
    Mutant(
        "a run lock take whose reply was lost is taken for a failed one, though it was applied",
        "src/run_lock.py",
        "        if found and found[0].get(\"owner\") == owner:",
        "        if False:",
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "reply_was_lost_after"),
    ),
    Mutant(
        "resolve and discard find no entry at a position written as its labels",
        "src/views/documents.py",
        '        found = [e for e in labelled(entries) if "visit" in e and all(e[k] == position[k] for k in labels)]',
        "        found = []",
        ("tests/test_cli_journal.py", "-m", "not server", "-k", "at_its_key_or_its_labels"),
    ),
    Mutant(
        "resolve settles the position as written, not the entry's stored key",
        "src/cli/journal.py",
        "    _journal(client, db_name, names).resolve(EffectPosition(**settled[\"position\"]), outcome)",
        "    _journal(client, db_name, names).resolve(pos, outcome)",
        ("tests/test_cli_journal.py", "-m", "not server", "-k", "at_its_key_or_its_labels"),
    ),
    Mutant(
        "the upgrade from format 2 ignores the root_key its root-level entries carry",
        "src/visit_keys.py",
        '    stood_for = doc.get("root_key") if depth == 0 else None',
        "    stood_for = None",
        ("tests/test_format_upgrade.py", "-m", "not server", "-k", "resumes_after_the_upgrade"),
    ),
    Mutant(
        "the upgrade from format 2 keys a Send's task as an edge-triggered one",
        "src/visit_keys.py",
        '    send = ordinal["index"] is not None',
        "    send = False",
        ("tests/test_format_upgrade.py", "-m", "not server", "-k", "resumes_after_the_upgrade"),
    ),
    Mutant(
        "a re-execution after a take-over gets another idempotency key than the one its entry was first claimed under",
        "src/journal/plans.py",
        'recorded_key = entry.get("idempotency_key") or pos.idempotency_key',
        "recorded_key = pos.idempotency_key",
        ("tests/test_journal_lease.py", "-m", "not server", "-k", "take_over_keeps_the_key"),
    ),
    Mutant(
        "an outcome unknown names another idempotency key than the one the system it calls saw",
        "src/journal/plans.py",
        'key = entry.get("idempotency_key") or pos.idempotency_key  # the one',
        "key = pos.idempotency_key  # the one",
        ("tests/test_journal_lease.py", "-m", "not server", "-k", "outcome_unknown_names_the_key"),
    ),
    Mutant(
        "a node's first effect runs before the root checkpoint its position derives from is stored",
        "src/journal/locator.py",
        "                self.saver.wait_stored(thread_id, root)",
        "                pass",
        ("tests/test_failed_root_store.py", "-m", "not server", "-k", "sync_face"),
    ),
    Mutant(
        "an async node's first effect runs before the root checkpoint its position derives from is stored",
        "src/journal/locator.py",
        "                await self.saver.await_stored(thread_id, root)",
        "                pass",
        ("tests/test_failed_root_store.py", "-m", "not server", "-k", "async_face"),
    ),
    Mutant(
        "a sync run called from a coroutine is taken for one storing on that coroutine's loop (its effects would not wait)",
        "src/checkpointer/saver.py",
        "        self._notice_run_start(config, on_loop=False)",
        "        self._notice_run_start(config, on_loop=True)",
        ("tests/test_failed_root_store.py", "-m", "not server", "-k", "sync_face"),
    ),
    Mutant(
        "a failed root store leaves the effects waiting for it to their timeout",
        "src/checkpointer/roots.py",
        "        self.stored.fail(thread_id, checkpoint_id, error)",
        "        pass",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "failed_root_store_ends"),
    ),
    Mutant(
        "a failed root store stops the waits of the newer checkpoints of the run only if they are still waiting",
        "src/checkpointer/roots.py",
        "            if (error := self.stored.failed(thread_id, checkpoint_id)) is not None:\n",
        "            if (error := None) is not None:\n",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "failed_root_store_ends"),
    ),
    Mutant(
        "a new run keeps the failed root stores of the run before it",
        "src/checkpointer/roots.py",
        "        self.stored.forget_failures(thread_id)",
        "        pass",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "failed_root_store_ends"),
    ),
    Mutant(
        "the visits beneath a retried task are taken for new ones, so the entries of its earlier attempts are not read",
        "src/journal/locator.py",
        " and first_attempt and not resolved.retried",
        " and first_attempt",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "retry_of_a_function_node"),
    ),
    Mutant(
        "an at_most_once outcome trails its effect, so a crash after it returned leaves it unknown",
        "src/journal/plans.py",
        "isinstance(where, Slot) and not call.at_most_once else None",
        "isinstance(where, Slot) else None",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "at_most_once_outcome"),
    ),
    Mutant(
        "a run without a checkpointer that does not say so runs its effects unjournaled",
        "src/journal/context.py",
        "        if runs_without_checkpointer(config) and means_unjournaled(config):",
        "        if runs_without_checkpointer(config):",
        ("tests/test_stateless_runs.py", "-k", "does_not_say_so or bare_thread_pool"),
    ),
    Mutant(
        "a run that opted in is not taken for one meaning to run unjournaled",
        "src/journal/unjournaled.py",
        " or (config.get(\"configurable\") or {}).get(UNJOURNALED) is True",
        "",
        ("tests/test_stateless_runs.py", "-k", "opted"),
    ),
    Mutant(
        "an Agent Server run is not taken for one meaning to run unjournaled",
        "src/_langgraph.py",
        "    return isinstance(config, dict) and bool((config.get(\"metadata\") or {}).get(AGENT_SERVER_MARK))",
        "    return False",
        ("tests/test_stateless_runs.py", "-k", "agent"),
    ),
    Mutant(
        "labels number a Send group's tasks in the sequence of its edge-triggered ones",
        "src/journal/labels.py",
        '        yield (parent, name, match["index"] is not None), match',
        "        yield (parent, name, False), match",
        ("tests/test_journal_labels.py",),
    ),
    Mutant(
        "labels order the steps of a child's run as text",
        "src/journal/labels.py",
        "    step = int(base[len(STEP_PREFIX):]) if base.startswith(STEP_PREFIX) else 0",
        "    step = 0",
        ("tests/test_journal_labels.py",),
    ),
    # issue 33: the inspector never shows or does more than the CLI
    Mutant(
        "ui pages may be framed",
        "src/ui/app.py",
        "        response.headers.update(NO_FRAMING)\n",
        "",
        ("tests/test_ui_guards.py", "-k", "framed"),
    ),
    Mutant(
        "ui takes any limit str.isdigit accepts",
        "src/ui/app.py",
        "    if not LIMIT_TEXT.fullmatch(limit):",
        "    if not limit.isdigit():",
        ("tests/test_ui_guards.py", "-k", "odd_limit"),
    ),
    Mutant(
        "the views send a lone surrogate to the server",
        "src/views/plans.py",
        '        value.encode("utf-8")\n',
        "        pass\n",
        ("tests/test_ui_guards.py", "-k", "surrogate"),
    ),
    Mutant(
        "a prefix ending in U+10FFFF lists every id after it",
        "src/views/plans.py",
        '    kept = prefix.rstrip("\\U0010ffff")\n    if not kept:',
        '    kept = prefix\n    if kept[-1] == "\\U0010ffff":',
        ("tests/test_ui_guards.py", "-k", "unicode_edges and not server"),
    ),
    Mutant(
        "a prefix ending in U+D7FF is bounded by a surrogate",
        "src/views/plans.py",
        "chr(0xE000 if 0xD800 <= following <= 0xDFFF else following)",
        "chr(following)",
        ("tests/test_ui_guards.py", "-k", "unicode_edges and not server"),
    ),
    Mutant(
        "the thread list keeps ids a server ordering UTF-16 returns past the prefix",
        "src/views/plans.py",
        '    listed = [s for s in listed if not isinstance(s.get("thread_id"), str) or s["thread_id"].startswith(prefix)]\n',
        "",
        ("tests/test_ui_guards.py", "-k", "unicode_edges_on_a_server"),
    ),
    Mutant(
        "ui shows state values unredacted without --with-outcomes",
        "src/views/reader.py",
        "        return redacted_values(values), None\n",
        "        return {name: shown(v) for name, v in values.items()}, None\n",
        ("tests/test_ui_guards.py", "-k", "redacted"),
    ),
    Mutant(
        "ui state values keep credentials by key",
        "src/views/values.py",
        "shown(redact(value), secrets)",
        "shown(value, secrets)",
        ("tests/test_ui_guards.py", "-k", "redacted"),
    ),
    Mutant(
        "ui state values keep a credential another value echoes",
        "src/views/values.py",
        "    secrets = credential_values(dict(values))\n",
        "    secrets = frozenset()\n",
        ("tests/test_ui_guards.py", "-k", "redacted"),
    ),
    Mutant(
        "the read-only inspector upgrades an older format",
        "src/views/reader.py",
        "        if not upgrade:\n",
        "        if False:\n",
        ("tests/test_thread_summaries.py", "-k", "read_only_inspector and mongomock"),
    ),
    Mutant(
        "ui without --allow-writes upgrades an older format as it starts",
        "src/ui/server.py",
        "    require_our_format(views.db, names, upgrade=allow_writes)",
        "    require_our_format(views.db, names, upgrade=True)",
        ("tests/test_thread_summaries.py", "-k", "read_only_inspector and mongomock"),
    ),
    Mutant(
        "why a thread stopped shows the error's message unredacted",
        "src/views/stops.py",
        "    clean = (lambda text: text) if with_outcomes else redact_text\n",
        "    clean = (lambda text: text)\n",
        ("tests/test_ui_stops.py", "-k", "failed_thread"),
    ),
    Mutant(
        "why a thread stopped shows an interrupt's value unredacted",
        "src/views/stops.py",
        '    return shown(value) if with_outcomes else redacted_values({"value": value})["value"]',
        "    return shown(value)",
        ("tests/test_ui_stops.py", "-k", "interrupt"),
    ),
    Mutant(
        "a crashed run shows as interrupted",
        "src/views/states.py",
        "    if due and INTERRUPT not in written and lock is not None and lock.get(\"owner\") is not None:",
        "    if False:",
        ("tests/test_ui_stops.py", "-k", "crashed"),
    ),
    Mutant(
        "an interrupted thread whose lock was released shows as crashed",
        "src/views/states.py",
        "    if due and INTERRUPT not in written and lock is not None and lock.get(\"owner\") is not None:",
        "    if due and INTERRUPT not in written and lock is not None:",
        ("tests/test_ui_stops.py", "-k", "crashed"),
    ),
    Mutant(
        "an effect never completed shows as replayed",
        "src/views/states.py",
        '    if entry.get("status") != "completed":\n        return False\n    counted',
        "    counted",
        ("tests/test_ui_accounts.py",),
    ),
    Mutant(
        "inspect tells replays apart from the web inspector",
        "src/cli/threads.py",
        '                effect["replayed"] = (op["path"], node["node"], effect["key"]) in proven',
        '                effect["replayed"] = False',
        ("tests/test_ui_accounts.py",),
    ),
    Mutant(
        "a path's node occurrences are ordered by name, not as they ran",
        "src/views/tree.py",
        "for node in sorted(nodes, key=lambda n: (first[(path, n)], sibling_key(n)))",
        "for node in sorted(nodes, key=sibling_key)",
        ("tests/test_ui_accounts.py", "-k", "order"),
    ),
    Mutant(
        "inspect prints a level's operations by name, not as they ran",
        "src/cli/threads.py",
        "    items = list(branch.items()) if isinstance(branch, dict)",
        "    items = sorted(branch.items()) if isinstance(branch, dict)",
        ("tests/test_ui_accounts.py", "-k", "order"),
    ),
    Mutant(
        "the thread list reads every journal entry of its page's threads",
        "src/views/plans.py",
        '        Find(names.journal, {**entries, "status": {"$nin": list(FINISHED)}}, ENTRY_STATE_PROJECTION),',
        '        Find(names.journal, {**entries, "status": {"$nin": []}}, ENTRY_STATE_PROJECTION),',
        ("tests/test_ui_bounds.py",),
    ),
    Mutant(
        "a large value is sent whole",
        "src/views/values.py",
        '        "text": text[:MAX_SHOWN_CHARS], "folded"',
        '        "text": text, "folded"',
        ("tests/test_ui_bounds.py", "-k", "large"),
    ),
    Mutant(
        "the status a live page polls answers for another thread the id starts",
        "src/views/reader.py",
        '        return rows[0] if rows and rows[0]["thread_id"] == thread_id else None',
        "        return rows[0] if rows else None",
        ("tests/test_ui_bounds.py", "-k", "polls"),
    ),
    Mutant(
        "a thread's page reads every journal entry after its start",
        "src/views/plans.py",
        '{"$skip": skip}, {"$limit": ENTRIES_PAGE + 1}, ',
        '{"$skip": skip}, ',
        ("tests/test_ui_bounds.py", "-k", "page_of_entries and not server or paged"),
    ),
    Mutant(
        "the views take a page number out of range",
        "src/views/plans.py",
        "not isinstance(page, int) or not 1 <= page <= MAX_ENTRIES_PAGE:",
        "not isinstance(page, int):",
        ("tests/test_ui_bounds.py", "-k", "odd_page"),
    ),
    Mutant(
        "the views take a bool or text as a page number",
        "src/views/plans.py",
        "    if isinstance(page, bool) or not isinstance(page, int) or not 1",
        "    if not 1",
        ("tests/test_ui_bounds.py", "-k", "odd_page"),
    ),
    Mutant(
        "ui takes any page str.isdigit accepts",
        "src/ui/app.py",
        "    if not LIMIT_TEXT.fullmatch(page) or not 1 <= int(page) <= MAX_ENTRIES_PAGE:",
        "    if not page.isdigit() or not 1 <= int(page) <= MAX_ENTRIES_PAGE:",
        ("tests/test_ui_bounds.py", "-k", "odd_page"),
    ),
    Mutant(
        "ui takes page 0",
        "src/ui/app.py",
        "    if not LIMIT_TEXT.fullmatch(page) or not 1 <= int(page) <= MAX_ENTRIES_PAGE:",
        "    if not LIMIT_TEXT.fullmatch(page):",
        ("tests/test_ui_bounds.py", "-k", "odd_page"),
    ),
    Mutant(
        "a whole value is sent past the size limit",
        "src/views/reader.py",
        "        if len(text) > MAX_FULL_CHARS:\n",
        "        if False:\n",
        ("tests/test_ui_bounds.py", "-k", "whole_on_request"),
    ),
    Mutant(
        "a whole value is sent unredacted without --with-outcomes",
        "src/views/reader.py",
        "full_text(values, channel, redacted=not self.with_outcomes)",
        "full_text(values, channel, redacted=False)",
        ("tests/test_ui_bounds.py", "-k", "whole_on_request"),
    ),
    Mutant(
        "a whole value keeps credentials by key",
        "src/views/values.py",
        "    return _text(redact(values[name]), credential_values(dict(values)))",
        "    return _text(values[name], credential_values(dict(values)))",
        ("tests/test_ui_bounds.py", "-k", "whole_on_request"),
    ),
    Mutant(
        "a whole value keeps a credential another value holds",
        "src/views/values.py",
        "    return _text(redact(values[name]), credential_values(dict(values)))",
        "    return _text(redact(values[name]), frozenset())",
        ("tests/test_ui_bounds.py", "-k", "whole_on_request"),
    ),
    Mutant(
        "the timeline's bars are not coloured by state",
        "src/views/timeline.py",
        '        classes = f"bar state-{state}" + ',
        '        classes = "bar" + ',
        ("tests/test_ui_timeline.py",),
    ),
    Mutant(
        "the timeline does not indent nested paths",
        "src/views/timeline.py",
        '"x": str(4 + 12 * depth)',
        '"x": str(4)',
        ("tests/test_ui_timeline.py",),
    ),
    Mutant(
        "the timeline does not mark a proven replay",
        "src/views/timeline.py",
        '(" replayed" if effect.get("replayed") else "")\n',
        '""\n',
        ("tests/test_ui_browser.py", "-k", "timeline"),
    ),
)


def _in_a_copy(copies: queue.Queue, run: Any, what: Any) -> Any:
    """``run(copy, alias, what)`` in a copy no other job is using."""
    copy, alias = copies.get()
    try:
        return run(copy, alias, what)
    finally:
        copies.put((copy, alias))


def _mutant(copy: Path, alias: Path, m: Mutant) -> tuple[str, bool]:
    """Apply ``m`` to the copy, run its tests, restore the file: the verdict line and whether a test killed it."""
    target = copy / m.path
    original = target.read_text()
    found = original.count(m.old)
    if found != 1:
        return f"NOT APPLIED  {m.name}: its text occurs {found} times in {m.path}", False
    target.write_text(original.replace(m.old, m.new))
    started = time.monotonic()
    try:
        code, last = _pytest(copy, alias, m.tests)
    finally:
        target.write_text(original)
    seconds = time.monotonic() - started
    if code == 1:
        return f"killed    {m.name} ({seconds:.0f} s): {last}", True
    verdict = "SURVIVED" if code == 0 else f"ERROR rc={code}"
    return f"{verdict}  {m.name} ({seconds:.0f} s): {last}", False


def _copy_tree(target: Path) -> Path:
    """The repository's files as they are now (tracked and new, not ignored), plus an import alias."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = ROOT / rel
        if source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel)
    alias = target / ".mutant-path"
    alias.mkdir()
    (alias / "langgraph_durable_mongodb").symlink_to(target / "src", target_is_directory=True)
    return alias


def _pytest(copy: Path, alias: Path, tests: tuple[str, ...]) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(alias), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
    )
    lines = (done.stdout + done.stderr).strip().splitlines()
    return done.returncode, lines[-1] if lines else ""


def _imports_the_copy(copy: Path, alias: Path) -> bool:
    env = {**os.environ, "PYTHONPATH": str(alias)}
    where = subprocess.run(
        [sys.executable, "-c", "import langgraph_durable_mongodb as m; print(m.__file__)"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return where.startswith(str(alias))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", default="", help="run only mutants whose name contains this text")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutants run at once, each in a copy of its own")
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip checking that each mutant's tests pass unmutated (for CI, where the whole suite has just passed)",
    )
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if args.k.lower() in m.name.lower()]
    if args.list:
        for m in chosen:
            print(f"{m.name}: {m.path} -> {' '.join(m.tests)}")
        return 0
    if not chosen:
        print(f"no mutant matches {args.k!r}", file=sys.stderr)
        return 2

    jobs = max(1, min(args.jobs, len(chosen)))
    with contextlib.ExitStack() as stack:
        copies: queue.Queue[tuple[Path, Path]] = queue.Queue()
        for _ in range(jobs):  # one copy per job: a mutant is applied to its copy alone
            copy = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mutants-"))) / "tree"
            copy.mkdir()
            alias = _copy_tree(copy)
            if not _imports_the_copy(copy, alias):
                print("the copy does not import its own src/ first; nothing can be proven", file=sys.stderr)
                return 2
            copies.put((copy, alias))
        with ThreadPoolExecutor(jobs) as pool:
            baselines = [] if args.no_baseline else sorted({m.tests for m in chosen})
            for tests, (code, last) in pool.map(lambda t: (t, _in_a_copy(copies, _pytest, t)), baselines):
                if code != 0:
                    print(f"BASELINE FAILS  {' '.join(tests)}: {last}")
                    return 1
            verdicts = [pool.submit(_in_a_copy, copies, _mutant, m) for m in chosen]
            failures = 0
            for verdict in verdicts:
                line, killed = verdict.result()
                print(line, flush=True)
                failures += not killed
    print(f"{len(chosen) - failures} of {len(chosen)} mutants killed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
