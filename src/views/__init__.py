"""Read views of threads for people: the thread list with each thread's state, and one thread's timeline,
operation tree, claims and state.

``plans`` (the queries, as plans), ``states`` (what a thread and an effect are in: running, failed, in flight,
outcome unknown ...), ``tree`` (the operation paths in ordinal order) and ``reader`` (``ThreadViews``: runs the
plans on a sync database and shapes what they read) for the web inspector (``ui``); ``documents`` (the CLI's reads
of documents as stored: the thread list grouped on the server, a thread's checkpoints and entries, the entry at
a position). The CLI (``doctor`` aside: ``deployment``) and the web inspector read threads through this package,
and act on them through ``commands`` (settle a journal position, delete, prune, sweep), whose errors carry the CLI's
exit codes (``exits``): what both front-ends share lies here, beneath both.
"""
