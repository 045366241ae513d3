"""The entry script under ``spark-submit``: ``spark-submit --py-files kafkatool.zip spark_submit.py ARGS`` runs
``kafkatool spark scan ARGS`` (``--master ''`` keeps spark-submit's master). spark-submit runs a file, not a
module, so this one imports the package by its absolute name from the shipped zip (docs/spark.md)."""

import sys

from kafkatool.cli import main

if __name__ == "__main__":
    sys.argv = ["kafkatool", "spark", "scan", *sys.argv[1:]]
    main()
