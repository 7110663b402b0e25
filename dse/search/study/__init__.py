"""What a study is: the files that define it and what they mean, before any search runs.

A study file (:mod:`~dse.search.study.study_file`) names a workload, a search space
(:mod:`~dse.search.study.search_space`: the knobs a study varies), an objective set
(:mod:`~dse.search.study.objective_sets`: what it optimises under which constraints, and the sign
rule), a sampler, a budget and how it is seeded (:mod:`~dse.search.study.seeding`). A design is
encoded for Optuna and built into its system by :mod:`~dse.search.study.encoding`. What a study
stores of itself is named in :mod:`~dse.search.study.attribute_keys` and recorded by
:mod:`~dse.search.study.contents`; ``dse init`` copies a study's files to edit
(:mod:`~dse.search.study.init_folder`).

Imports nothing of the search beyond this room (the algorithms and the storage build on it), and
nothing itself: import each module by its own name.
"""
