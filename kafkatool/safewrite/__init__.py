"""The one layer through which kafkatool changes a disk: nothing is ever lost, and a kill at any point is harmless.

One module per job: :mod:`.durable` (temp + fsync + rename, and the crash hook that counts durable steps),
:mod:`.lock` (the log dir's ``.lock``, held as the broker holds it), :mod:`.journal` (a plan of file ops
applied through a journal, and the resume of a half-done apply), :mod:`.backup` (the backup dir and its
manifest), :mod:`.restore` (``repair --restore``), :mod:`.outpath` (how ``--out`` is written).
"""
