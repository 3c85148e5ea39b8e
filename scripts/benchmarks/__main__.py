#!/usr/bin/env python3
"""Benchmarks of issues 8, 14, 20 and 24: our MongoDBCheckpointer against langgraph-checkpoint-mongodb's MongoDBSaver.

Run it with ``scripts/bench`` (which prepares .venv and builds the servers); directly::

    .venv/bin/python scripts/benchmarks [--quick] [--server both|ferretdb|mongo_java_server] [--json out.json]
                                      [--markdown out.md] [--only chat,async,steps,journal,resolver,wide,rtt,ui,codec,otel]

Both savers run on the same server, in the same process, interleaved call by call
(ours, reference, reference, ours, ...) so drift hits both alike. The server is
``MONGODB_URI`` when set; else the script starts a throwaway mongo-java-server and a throwaway
FerretDB with tests/servers' launchers (as the test tier does) and runs every section on each,
one server after the other.

Sections (a module each in this package, what they share in ``common``):

``chat``     a chat thread grows one turn per ``graph.invoke`` (user message in, one reply
             node appends an assistant message), with ``add_messages`` and with LangGraph's
             ``DeltaChannel``; at 50, 100 and 200 turns (add_messages: 25 and 50 by default,
             its storage is quadratic in turns): bytes stored per thread, bytes written and
             MongoDB commands per turn, median ``put`` / ``put_writes`` / ``get_tuple`` / load
             (``get_tuple`` + ``get_delta_channel_history``) / ``list(limit=100)``, with the
             client CPU of each call.
``async``    1, 8 and 32 coroutines running ``ainvoke`` turns at once: steps per second,
             client CPU per step (and the server's, when we started it).
``steps``    sync ``invoke`` turns one after another: client CPU per step of the sync face; with
             the chat section, the modelled MongoDB time per operation (commands x RTT + client CPU).
``journal``  the activity journal's cost per effect.
``resolver`` the resolver's cost per effect.
``wide``     one node calling 1,000 and 10,000 journaled effects (``--wide-sizes``) under ``platform.compile``,
             then crashing once; the next ``invoke`` replays them: seconds and µs per effect, first run and
             replay. Linear replay keeps µs per effect flat as the node grows (issue 25 item 6).
``ui``       issue 23: the web inspector's thread list over a database of 10,000 threads (``--ui-threads``), each
             a copy of the demo's crashed and resumed ``case-42``: the first page, a later page, a prefix
             search, as JSON and as the HTML page, through the app (Starlette's TestClient, in process);
             target 300 ms on mongo-java-server. Issue 45: a thread whose state holds 20,000 records with a
             password each, and a prebuilt ReAct agent's thread of 500 turns: each page < 300 ms and < 300 KB.
``rtt``      issue 20: a ReAct turn through toxiproxy at 1 ms per round trip, ours against LangGraph's
             ``@task`` and ``MongoDBSaver``, and a plain chat turn; client CPU of a durable turn, async
             (rtt.py).
``codec``    issue 24: the stored-value codec, our saver with ``k`` references (as shipped) against the same saver
             laid out like langgraph-checkpoint-postgres (every value in blobs keyed by channel and version), on an
             ``add_messages`` chat with a 50 KB value in state: commands per turn, wall direct and at 1 ms
             (toxiproxy), ``get_tuple``, ``list``, bytes stored, ``prune`` (codec.py).
``otel``     issue 46: OpenTelemetry's cost, without it, with the API and no SDK (the no-op tracer) and with the
             SDK and a batch exporter, each in child processes: import time, one effect's instrumentation, a
             durable ReAct turn's client CPU (otel.py; on mongo-java-server or MONGODB_URI only).

Ratios are ours / reference, measured in the same run: below 1.0 means ours is faster
or smaller. Absolute times depend on the server and the machine; on FerretDB's SQLite
backend every query but ``{_id: x}`` scans its whole collection (docs/history/benchmarks-log.md), so
there a command costs in proportion to the collection it touches. ``--quick`` takes about
2-3 minutes for both servers on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

from pymongo import MongoClient

SCRIPTS = Path(__file__).resolve().parents[1]
# Run as ``python scripts/benchmarks`` (what scripts/bench does), the package's own folder leads the path, where its
# modules would pass for top-level ones: the folder holding the package instead, and the repository root, for
# tests.servers.
sys.path[:1] = [str(SCRIPTS), str(SCRIPTS.parent)]

from benchmarks.async_ import bench_async, render_async  # noqa: E402
from benchmarks.chat import bench_chat, render_chat  # noqa: E402
from benchmarks.codec import bench_codec, render_codec  # noqa: E402
from benchmarks.common import ServerCPU, Settings  # noqa: E402
from benchmarks.journal import bench_journal, render_journal  # noqa: E402
from benchmarks.otel import bench_otel, render_otel  # noqa: E402
from benchmarks.resolver import bench_resolver, render_resolver  # noqa: E402
from benchmarks.rtt import bench_rtt, docs_numbers, noise, render_rtt  # noqa: E402
from benchmarks.steps import bench_steps, render_modelled, render_steps  # noqa: E402
from benchmarks.ui import bench_ui, render_ui  # noqa: E402
from benchmarks.wide import bench_wide, render_wide  # noqa: E402


def machine_facts(uri: str, started_server: bool) -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    with MongoClient(uri) as client:
        info = client.admin.command("buildInfo")
    server = f"MongoDB {info.get('version')}"
    if "ferretdbVersion" in info:
        server = f"FerretDB {info['ferretdbVersion']} (SQLite backend; reports MongoDB {info.get('version')})"
    versions = {}
    for dist in ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-mongodb", "pymongo", "langchain-core"):
        try:
            versions[dist] = importlib_metadata.version(dist)
        except importlib_metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model or platform.processor(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "server": server,
        "server_started_by_bench": started_server,
        "packages": versions,
    }



def render(results: dict[str, Any]) -> str:
    lines: list[str] = [f"# scripts/bench results ({'quick' if results['quick'] else 'full'} run)", "",
                        f"- command: `{results['command']}`", f"- total time: {results['seconds']:.0f}s", ""]
    for name, res in results["servers"].items():
        m = res["machine"]
        lines += [f"# Server: {name}", "",
                  f"- machine: {m['nproc']} cores, {m['cpu_model']}, Python {m['python']}, {m['platform']}",
                  f"- server: {m['server']}",
                  "- packages: " + ", ".join(f"{k} {v}" for k, v in m["packages"].items()),
                  f"- time on this server: {res['seconds']:.0f}s", ""]
        lines.append(render_server(res))
        if res.get("failed"):
            lines += ["## Failed sections", ""] + [f"- {k}: {v}" for k, v in res["failed"].items()] + [""]
    return "\n".join(lines)



def cpu_summary(results: dict[str, Any]) -> str | None:
    """The client CPU ratios (ours / the reference's, process CPU time, interleaved in this run) in one line."""
    parts = [f"async chat at {level['concurrency']} concurrent {level['ratios']['client_cpu_ms_per_step']:.2f}x "
             "`MongoDBSaver`" for level in (results.get("async") or {}).get("levels", [])
             if level["ratios"].get("client_cpu_ms_per_step") is not None]
    durable = ((results.get("rtt") or {}).get("variants") or {}).get("compile") or {}
    if durable.get("cpu_ratio") is not None:
        parts.append(f"durable ReAct turn, sync, {durable['cpu_ratio']:.2f}x `@task`")
    cpu = (results.get("rtt") or {}).get("cpu")
    if cpu and cpu.get("ratio") is not None:
        parts.append(f"durable ReAct turn, async at {cpu['concurrency']} concurrent, {cpu['ratio']:.2f}x `@task`")
    return "**Client CPU, ours / the reference:** " + "; ".join(parts) + "." if parts else None


def render_server(results: dict[str, Any]) -> str:
    lines: list[str] = []
    if (summary := cpu_summary(results)) is not None:
        lines += [summary, ""]
    if results.get("chat"):
        lines += render_chat(results["chat"])
    if results.get("async"):
        lines += render_async(results["async"])
    if results.get("steps"):
        lines += render_steps(results["steps"])
    lines += render_modelled(results)
    for name, render_section in (("journal", render_journal), ("resolver", render_resolver), ("wide", render_wide),
                                 ("rtt", lambda rtt: render_rtt(rtt, documented())), ("ui", render_ui),
                                 ("codec", render_codec), ("otel", render_otel)):
        if results.get(name) is not None:
            lines += render_section(results[name])
    return "\n".join(lines)


SECTIONS = ("chat", "async", "steps", "journal", "resolver", "wide", "rtt", "ui", "codec", "otel")

SERVERS = ("ferretdb", "mongo_java_server")



@contextmanager
def serving(server: str, log: Callable[[str], None]) -> Iterator[tuple[str, int | None]]:
    """``(uri, pid)`` of ``server``: MONGODB_URI (pid unknown), or a throwaway server started by tests/servers."""
    if server == "uri":
        yield os.environ["MONGODB_URI"].strip(), None
        return
    if server == "ferretdb":
        from tests.servers import ferretdb as launcher
    else:
        from tests.servers import mongo_java_server as launcher  # type: ignore[no-redef]
    started = launcher.start()
    log(f"started {server} at {started.uri}")
    try:
        yield started.uri, started.process.pid
    finally:
        launcher.stop(started)



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and short runs: a smoke test")
    parser.add_argument("--json", metavar="PATH", help="write every measurement as JSON")
    parser.add_argument("--markdown", metavar="PATH", help="write the report tables as Markdown")
    parser.add_argument("--only", metavar="SECTIONS", help=f"comma-separated subset of {','.join(SECTIONS)}")
    parser.add_argument("--server", default="both", choices=(*SERVERS, "both"),
                        help="the server(s) to start and measure on, one after the other (default both; "
                             "ignored when MONGODB_URI is set)")
    parser.add_argument("--add-sizes", metavar="N,N", help="add_messages thread sizes in turns (default 25,50)")
    parser.add_argument("--delta-sizes", metavar="N,N", help="DeltaChannel thread sizes in turns (default 50,100,200)")
    parser.add_argument("--wide-sizes", metavar="N,N", help="effects per node in section wide (default 1000,10000)")
    parser.add_argument("--snapshot-frequency", type=int, metavar="N", help="DeltaChannel snapshot_frequency (default 1000)")
    args = parser.parse_args(argv)
    s = Settings.quick() if args.quick else Settings()

    def sizes(text: str) -> tuple[int, ...]:
        return tuple(int(x) for x in text.split(",") if x.strip())

    if args.add_sizes is not None:
        s.add_sizes = sizes(args.add_sizes)
    if args.delta_sizes is not None:
        s.delta_sizes = sizes(args.delta_sizes)
    if args.wide_sizes is not None:
        s.wide_sizes = sizes(args.wide_sizes)
    if args.snapshot_frequency is not None:
        s.snapshot_frequency = args.snapshot_frequency
    only = SECTIONS if not args.only else tuple(x.strip() for x in args.only.split(","))
    unknown = set(only) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {','.join(SECTIONS)}")
    if os.environ.get("MONGODB_URI", "").strip():
        servers: tuple[str, ...] = ("uri",)
    else:
        servers = SERVERS if args.server == "both" else (args.server,)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    started = time.perf_counter()
    results: dict[str, Any] = {
        "command": "scripts/bench " + " ".join(sys.argv[1:] if argv is None else argv),
        "quick": args.quick,
        "servers": {},
    }
    for server in servers:
        begun = time.perf_counter()
        with serving(server, log) as (uri, pid):
            res: dict[str, Any] = {"machine": machine_facts(uri, pid is not None)}
            cpu = ServerCPU(pid)
            runners = {
                "chat": lambda: bench_chat(uri, s, log),
                "async": lambda: bench_async(uri, s, cpu, log),
                "journal": lambda: bench_journal(uri, s, log),
                "resolver": lambda: bench_resolver(uri, s, log),
                "wide": lambda: bench_wide(uri, s, log),
                "steps": lambda: bench_steps(uri, s, cpu, log),
                # the CPU line is measured on mongo-java-server (or MONGODB_URI) only: FerretDB's scans would swamp it
                "rtt": lambda: bench_rtt(uri, s, cpu, log, cpu_line=server != "ferretdb"),
                "ui": lambda: bench_ui(uri, s, log),
                "codec": lambda: bench_codec(uri, s, log),
                # client CPU again: measured where the rtt section's CPU line is (FerretDB's scans would swamp it)
                "otel": lambda: bench_otel(uri, s.quick_mode, log) if server != "ferretdb" else None,
            }
            for number, name in enumerate(SECTIONS, 1):
                if name not in only:
                    continue
                log(f"{server}: section {number}: {name}")
                try:
                    res[name] = runners[name]()
                except Exception as exc:  # noqa: BLE001 - keep the other sections' results
                    import traceback

                    traceback.print_exc()
                    res.setdefault("failed", {})[name] = f"{type(exc).__name__}: {exc}"
        res["seconds"] = time.perf_counter() - begun
        results["servers"][server] = res
    results["seconds"] = time.perf_counter() - started
    report = render(results)
    print(report)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(report + "\n")
    write_docs_numbers(results, log)
    for server, res in results["servers"].items():  # the verdict on noise, last, where a quick run's reader looks
        if res.get("rtt"):
            log(f"{server}: " + noise(res["rtt"], documented())[0])
    return 1 if any(r.get("failed") for r in results["servers"].values()) else 0



#: The one file of figures the docs and the README quote (scripts/mkdocs_hooks.py fills them in; tests/test_docs_numbers.py
#: checks the README's): written by a full run that measured the rtt section on mongo-java-server.
DOCS_NUMBERS = SCRIPTS.parent / "docs" / "numbers.json"



def documented() -> dict[str, Any]:
    """The figures the docs quote now (``docs/numbers.json``), which a run's figures are set against."""
    return json.loads(DOCS_NUMBERS.read_text()) if DOCS_NUMBERS.exists() else {}


def write_docs_numbers(results: dict[str, Any], log: Callable[[str], None]) -> None:
    rtt = (results["servers"].get("mongo_java_server") or {}).get("rtt")
    if results["quick"] or not rtt:
        return
    numbers = docs_numbers(rtt, "mongo-java-server", time.strftime("%Y-%m-%d"))
    DOCS_NUMBERS.write_text(json.dumps(numbers, indent=2, sort_keys=True) + "\n")
    log(f"wrote {DOCS_NUMBERS.relative_to(DOCS_NUMBERS.parents[1])}: the figures the docs quote")



if __name__ == "__main__":
    sys.exit(main())
