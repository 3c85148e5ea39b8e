"""``python -m langgraph_durable_mongodb``: the inspector CLI."""

import sys

from .cli import main

sys.exit(main())
