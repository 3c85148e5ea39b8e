"""The mutants of src/checkpointer/sweeper.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "ttl sweeper thread dies on a failed sweep",
        "                self._sweep()\n            except Exception:",
        "                self._sweep()\n            except ZeroDivisionError:",
        ("tests/test_ttl_strategies.py", "-k", "failed_sweep and sync"),
    ),
    (
        "ttl sweeper task dies on a failed sweep",
        "                await self._sweep()\n            except Exception:",
        "                await self._sweep()\n            except ZeroDivisionError:",
        ("tests/test_ttl_strategies.py", "-k", "failed_sweep and async"),
    ),
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: a sweeper thread that dies says nothing",
        "        except BaseException:  # the thread ends here either way: say so\n            logger.exception(_DIED)",
        "        except BaseException:  # the thread ends here either way: say so\n            pass",
        ("tests/test_ttl_strategies.py", "-k", "dies or overflows"),
    ),
    (
        "issue 25: a sweeper task that dies says nothing",
        "        except BaseException:\n            logger.exception(_DIED)",
        "        except BaseException:\n            pass",
        ("tests/test_ttl_strategies.py", "-k", "dies"),
    ),
)
