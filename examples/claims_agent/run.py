"""The claims agent (claims.py) end to end, each step in a process of its own, one of them SIGKILLed mid-payment.

    MONGODB_URI=mongodb://localhost:27017 python examples/claims_agent/run.py
    ... run.py --builder create_agent           # LangChain's create_agent instead of create_react_agent
    ... run.py --screenshot inspector.png       # and the web inspector's page of the thread (the ui extra,
                                                # Playwright and a Chromium on PATH)

1. A claim comes in: the agent looks the policy up and asks a person to approve the payout (``interrupt()``).
2. The person approves. The agent pays; the provider charges, and the worker is SIGKILLed before the journal
   records what the payment returned.
3. A new worker resumes the thread. The payment is ``at_most_once``: it is not made again blind, and
   ``EffectOutcomeUnknownError`` names its idempotency key and the CLI line that settles it.
4. The operator looks the key up at the provider (one charge) and runs that CLI line with what the payment returned.
5. A new worker resumes: the payment replays the settled outcome, the agent answers. One charge in all.

Then ``langgraph-durable-mongodb inspect`` shows the thread, and ``--screenshot`` the web inspector's page of it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLI = str(Path(sys.executable).with_name("langgraph-durable-mongodb"))


def step(args: argparse.Namespace) -> None:
    """One step of the scenario, in this process: ``ask``, ``approve``, ``resume`` or ``finish``."""
    sys.path.insert(0, str(HERE))
    import claims
    from langgraph.types import Command

    from langgraph_durable_mongodb import DurablePlatform, EffectOutcomeUnknownError

    config = {"configurable": {"thread_id": claims.CLAIM}}
    inputs = {
        "ask": {"messages": [("user", f"Please pay out claim {claims.CLAIM} (policy {claims.POLICY}).")]},
        "approve": Command(resume="approve"),
    }.get(args.step)
    with DurablePlatform.from_conn_string(args.uri, db_name=args.db) as platform:
        graph = claims.agent(platform, args.builder)
        try:
            result = graph.invoke(inputs, config)
        except EffectOutcomeUnknownError as unknown:
            print(f"EffectOutcomeUnknownError: {unknown}")
            sys.exit(3)
    if "__interrupt__" in result:
        print(f"interrupt: {result['__interrupt__'][0].value['question']}")
    else:
        print(f"answer: {result['messages'][-1].content}")


def run_step(name: str, args: argparse.Namespace, **env: str) -> subprocess.CompletedProcess[str]:
    """``name`` in a new process, as a worker would run it."""
    command = [sys.executable, __file__, "--step", name, "--builder", args.builder, "--db", args.db, "--uri", args.uri]
    return subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


def said(done: subprocess.CompletedProcess[str], prefix: str) -> str:
    """The line of a step's output that starts with ``prefix`` (exits naming the output when there is none)."""
    for line in done.stdout.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    sys.exit(f"expected a line starting {prefix!r}; the step printed:\n{done.stdout}{done.stderr}")


def settle(error: str, args: argparse.Namespace, ledger: str) -> list[str]:
    """The CLI line the error printed, as the operator runs it: the provider's charge for the error's idempotency
    key, as what the payment returned, with ``--uri`` and ``--db`` of this database."""
    sys.path.insert(0, str(HERE))
    import claims

    key = re.search(r"idempotency key (ik-[0-9a-f]+)", error)[1]
    charge = claims.Provider(ledger).charges()[key]
    printed = re.search(r"of this database\): (langgraph-durable-mongodb resolve .+?), or langgraph-durable-mongodb discard", error)[1]
    words = shlex.split(printed.replace("'<what it returned, as JSON>'", shlex.quote(json.dumps(claims.receipt(charge)))))
    return [CLI, "--uri", args.uri, "--db", args.db, *words[1:]]


def scenario(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(HERE))
    import claims

    with tempfile.TemporaryDirectory(prefix="claims-") as tmp:
        ledger = str(Path(tmp) / "provider.json")
        subprocess.run([CLI, "--uri", args.uri, "--db", args.db, "delete", claims.CLAIM, "--yes"], capture_output=True)
        print(f"1. claim {claims.CLAIM} comes in ({args.builder}): the agent looks {claims.POLICY} up")
        asked = run_step("ask", args, CLAIMS_LEDGER=ledger)
        print(f"   and asks: {said(asked, 'interrupt:')}")

        print("2. a person approves; the agent pays, and the worker is SIGKILLed right after the provider charged")
        killed = run_step("approve", args, CLAIMS_LEDGER=ledger, **{claims.CRASH_AFTER_CHARGE: "1"})
        if killed.returncode != -signal.SIGKILL:
            sys.exit(f"the worker was to die of SIGKILL, it exited {killed.returncode}:\n{killed.stdout}{killed.stderr}")
        print(f"   the worker died of SIGKILL (exit {killed.returncode}); the provider holds {len(claims.Provider(ledger).charges())} charge")

        print("3. a new worker resumes the thread; the payment is at_most_once, its outcome unknown:")
        resumed = run_step("resume", args, CLAIMS_LEDGER=ledger)
        error = said(resumed, "EffectOutcomeUnknownError:")
        print(f"   EffectOutcomeUnknownError: {error}")

        print("4. the operator finds the idempotency key at the provider and settles it with the error's CLI line:")
        command = settle(error, args, ledger)
        print("   $ " + shlex.join(["langgraph-durable-mongodb", *command[1:]]))
        settled = subprocess.run(command, capture_output=True, text=True)
        if settled.returncode != 0:
            sys.exit(f"resolve failed ({settled.returncode}):\n{settled.stdout}{settled.stderr}")
        print("   " + settled.stdout.strip().replace("\n", "\n   "))

        print("5. a new worker resumes: the payment replays what was settled, and the agent answers")
        finished = run_step("finish", args, CLAIMS_LEDGER=ledger)
        print(f"   {said(finished, 'answer:')}")
        charges = claims.Provider(ledger).charges()
        print(f"   the provider made {len(charges)} charge in all: {list(charges.values())}")
        if len(charges) != 1:
            return 1

    print(f"\n$ langgraph-durable-mongodb --db {args.db} inspect {claims.CLAIM}")
    shown = subprocess.run([CLI, "--uri", args.uri, "--db", args.db, "inspect", claims.CLAIM], capture_output=True, text=True)
    print(shown.stdout)
    if args.screenshot:
        screenshot(args, claims.CLAIM, Path(args.screenshot))
    return 0


def screenshot(args: argparse.Namespace, thread_id: str, path: Path) -> None:
    """The web inspector's page of the thread, as Chromium shows it (``langgraph-durable-mongodb ui``, read-only)."""
    import shutil
    import socket
    from urllib.parse import quote

    from playwright.sync_api import sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ui = subprocess.Popen([CLI, "--uri", args.uri, "--db", args.db, "ui", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        chromium = next(p for p in map(shutil.which, ("chromium", "chromium-browser")) if p)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            deadline = time.monotonic() + 30
            while True:
                try:
                    page.goto(f"http://127.0.0.1:{port}/threads/{quote(thread_id)}")
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            page.screenshot(path=str(path), full_page=True)
            browser.close()
    finally:
        ui.terminate()
        ui.wait(10)
    print(f"the web inspector's page of {thread_id}: {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uri", default=os.environ.get("MONGODB_URI", "mongodb://localhost:27017"))
    parser.add_argument("--db", default="claims_agent")
    parser.add_argument("--builder", choices=["create_react_agent", "create_agent"], default="create_react_agent")
    parser.add_argument("--screenshot", metavar="PNG", help="also save the web inspector's page of the thread")
    parser.add_argument("--step", choices=["ask", "approve", "resume", "finish"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        step(args)
        return 0
    return scenario(args)


if __name__ == "__main__":
    sys.exit(main())
