"""``python -m dse``: the same as the ``dse`` command."""

from dse.cli import main

main()
