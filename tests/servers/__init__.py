"""The real-server tier's servers: build, start and stop them (stdlib only).

- ``ferretdb``: a throwaway FerretDB 1.x (SQLite backend), built with Go;
- ``mongo_java_server``: a throwaway mongo-java-server (in memory), built with Maven from
  ``mongo_java_server_launcher/`` (a pom.xml and one Java class);
- ``toxiproxy``: Shopify's fault-injection proxy, built with Go, put in front of a server by
  ``scripts/bench --only rtt`` to add 1 ms to every round trip;
- ``common``: what they share (the cache dir, free ports, stopping, Go builds).

``tests/conftest.py`` starts them for the suite; each is also a command, from the repository root:
``python -m tests.servers.ferretdb install|start|uri|stop`` (likewise ``tests.servers.mongo_java_server``).
"""
