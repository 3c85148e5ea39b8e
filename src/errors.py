"""Typed errors. Each says what went wrong and what to do about it."""

from __future__ import annotations


class DurableMongoError(Exception):
    """Base class of every error this library raises on purpose."""


class InvalidInputError(DurableMongoError, ValueError):
    """An argument cannot be used safely (wrong type, operator-like key, ...).

    Raised before any query runs, so nothing stored is read or changed.
    """


class ClientConfigurationError(DurableMongoError, RuntimeError):
    """The call needs a client kind (sync or async) that was not given."""


class DeltaChainError(DurableMongoError, RuntimeError):
    """An operation would cut the write chain a DeltaChannel needs to rebuild its value."""


class TopologyError(DurableMongoError):
    """The compiled graph has a shape whose operations cannot be identified durably."""


class NamespaceError(DurableMongoError):
    """A runtime checkpoint namespace cannot be explained by the discovered topology."""


class NoDurableScopeError(DurableMongoError, RuntimeError):
    """A durable effect ran outside a durable scope (a graph compiled or attached by DurablePlatform)."""
