"""The mutants of src/storage/serde.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 44, break 9: under encryption, a value stored in clear is refused; a key that cannot open one is named
    (
        "issue 44: a value stored in clear is loaded under an EncryptedSerializer",
        "        if not encrypted:\n            raise _in_clear(at, type_)\n",
        "        if not encrypted:\n            return serde.loads_typed(typed)\n",
        ("tests/test_stored_instructions.py", "-m", "not server", "-k", "planted_in_clear"),
    ),
    (
        "issue 44: a value encrypted under another key raises the cipher's raw error",
        "        except Exception as error:  # whatever the cipher raises for a key that does not open it\n",
        "        except KeyError as error:\n",
        ("tests/test_stored_instructions.py", "-m", "not server", "-k", "another_key and embedded-sync-another"),
    ),
    (
        "issue 44: an encrypted value read without a key raises the serde's raw error",
        '        if "+" in type_:  # written by an EncryptedSerializer, read by a serde without a key\n',
        "        if False:\n",
        ("tests/test_stored_instructions.py", "-m", "not server", "-k", "another_key and no"),
    ),
)
