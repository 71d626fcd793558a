"""Reliability figures: a batch of broken, hostile and good documents through ``folioflow ingest``.

``python -m folioflow.flows.reliability`` builds the batch (:mod:`folioflow.flows.reliability.batch`: every malformed
file of the corpus plus generated hostile files and good documents), ingests it in its own process
(:mod:`folioflow.flows.reliability.measure`) and prints the figures: files tried, ingested, rejected with a
reason, crashed (must be 0), pages lost (must be 0), documents whose points differ from their
chunks (must be 0), good files indexed, peak resident memory and wall time. It exits 1 when one
of the must-be-zero figures is not, or a good file was not indexed.
"""

from folioflow.flows.reliability.batch import Batch, BatchFile, build_batch, corpus_passwords
from folioflow.flows.reliability.measure import Figures, FileOutcome, run_batch

__all__ = ["Batch", "BatchFile", "FileOutcome", "Figures", "build_batch", "corpus_passwords", "run_batch"]
