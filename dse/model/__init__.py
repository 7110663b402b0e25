"""The analytical model: pure functions over frozen data, flowing one way.

``workload`` (the DLRM) and ``system`` (node and cluster, resolved against the ``catalog``) go to
``placement`` (which shard lives where, in which tier; it never reads a bandwidth), whose plan and
the per-shard bytes of ``estimators`` go to ``timing`` (every stage of a step and the overlap tree);
``cost`` prices the system; ``evaluate`` joins them into one :class:`Evaluation`. Nothing here
imports the search, the outputs or the CLI, nor Optuna. The equations and their sources are in
``docs/design.md``.
"""

from dse.model.evaluate import Evaluation, Memo, evaluate

__all__ = ["Evaluation", "Memo", "evaluate"]
