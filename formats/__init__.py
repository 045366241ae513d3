"""Construct declarations of every on-disk artefact in a Kafka log dir (installed as ``kafkatool.formats``).

One module per artefact; each cites the Kafka source it follows. Declarations only: no I/O, no
printing. They are the single source of truth for byte layouts: the hot-path ``struct`` readers in
``kafkatool`` are tested to agree with them on the whole corpus.
"""
