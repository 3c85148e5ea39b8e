"""The storage layer: collections, clients, the stored format, leases and the plan machinery."""
