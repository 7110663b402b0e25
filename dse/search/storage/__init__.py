"""Where a study lives: its storage opened by URL (:mod:`~dse.search.storage.opening`), the journal
file by default, database servers and the gRPC proxy in front of one, and how a worker recovers
from a dead one.

The journal, like Optuna's ``optuna/storages/journal/`` package, one module per concern: its wire
format and dse's check on every record (:mod:`~dse.search.storage.journal_format`), the file opened
for writing (:mod:`~dse.search.storage.journal_writing`), the damage check and repair
(:mod:`~dse.search.storage.journal_check`) and the one-pass reader of the read-only commands
(:mod:`~dse.search.storage.journal_snapshot`). Servers: their URLs and time bounds
(:mod:`~dse.search.storage.servers`), SQLAlchemy databases
(:mod:`~dse.search.storage.databases`), PostgreSQL's connections
(:mod:`~dse.search.storage.postgres`), the proxy (:mod:`~dse.search.storage.proxy`) and a lost
storage in one line (:mod:`~dse.search.storage.failures`). Dead workers' trials:
:mod:`~dse.search.storage.recovery`.

Imports nothing itself: import each module by its own name.
"""
