"""The mutants of src/cli/main.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "the CLI imports pymongo (two ways into storage)",
        "from bson import json_util\n",
        "from bson import json_util\nfrom pymongo.errors import PyMongoError  # noqa: F401\n",
        ("tests/test_architecture.py", "-k", "pymongo"),
    ),
    (
        "the CLI reports an unreachable server as a refused command",
        "    (ServerUnreachableError, EXIT_UNREACHABLE),\n",
        "",
        ("tests/test_cli.py", "-k", "unreachable"),
    ),
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: error messages written raw to stderr",
        'print(f"error: {printable(str(error))}", file=sys.stderr)',
        'print(f"error: {error}", file=sys.stderr)',
        ("tests/test_cli_terminal.py", "-m", "not server", "-k", "errors_and"),
    ),
    (
        "issue 25: the CLI exits 0 on documents it could not read",
        "    return EXIT_PROBLEM if problems else EXIT_OK",
        "    return EXIT_OK",
        ("tests/test_cli_corrupt.py", "-m", "not server"),
    ),
    # -- issue 45: the on-call view --
    (
        'a closed pipe ends the CLI in a traceback',
        '    except BrokenPipeError:  # the reader went away',
        '    except ZeroDivisionError:  # the reader went away',
        ('tests/test_cli.py', '-k', 'closed_pipe'),
    ),
    (
        'doctor exits 0 when it warns',
        '    return EXIT_WARNING if report["warnings"] else EXIT_OK',
        '    return EXIT_OK',
        ('tests/test_cli.py', '-m', 'server', '-k', 'doctor_on_a_real_server'),
    ),
)
