"""Case studies: worked questions, each a study, an analysis with claims checked against its data,
and a page in ``docs/case-studies/``."""
