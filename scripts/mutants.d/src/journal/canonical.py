"""The mutants of src/journal/canonical.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 44, break 8: values of any depth never break a claim or a record
    (
        "issue 44: the canonical walk does not note a container inside itself",
        "            if id(value) in self.inside:\n                return CYCLE\n",
        "",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "holding_itself and not resume"),
    ),
    (
        "issue 44: the unwatched canonical walk never starts again watching",
        "        if depth > _UNWATCHED_DEPTH and not self.watch:\n            raise _DeepWalk\n",
        "",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "holding_itself and not resume"),
    ),
    (
        "issue 44: a canonical form too deep for the C encoder raises RecursionError",
        "    except RecursionError:\n        return _json_by_loop(value, sort_keys, separators)\n",
        "    except ValueError:\n        return _json_by_loop(value, sort_keys, separators)\n",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "past_the_recursion_limit"),
    ),
    (
        "issue 44: a pydantic model nested past pydantic's depth limit raises ValueError",
        "    except ValueError:\n        return None\n",
        "    except TypeError:\n        return None\n",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "past_the_recursion_limit"),
    ),
    (
        "issue 44: text holding a lone surrogate cannot be digested",
        '    data = text.encode("utf-8", "surrogatepass")',
        "    data = text.encode()",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "lone_surrogate"),
    ),
    (
        "issue 44: the loop writing deep JSON sorts no keys",
        "            pairs = sorted(item.items()) if sort_keys else list(item.items())",
        "            pairs = list(item.items())",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "written_by_the_loop"),
    ),
    (
        "issue 44: a dict with two keys of one text keeps the first one's item",
        "            made = {str(key): item for key, item in pairs}",
        "            made = {str(key): item for key, item in reversed(list(pairs))}",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "what_they_were"),
    ),
)
