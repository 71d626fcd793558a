"""Retrieval evaluation: questions with evidence (document + page or text span), hit@k and MRR at
page and document level, per mode and per question (``folioflow eval retrieval``)."""

from folioflow.indexing.evaluation.metrics import QuestionResult, RankedHit, summarize
from folioflow.indexing.evaluation.questions import Evidence, Question, doc_key, load_questions
from folioflow.indexing.evaluation.runner import RetrievalReport, Searcher, evaluate_retrieval

__all__ = ["Evidence", "Question", "QuestionResult", "RankedHit", "RetrievalReport", "Searcher", "doc_key",
           "evaluate_retrieval", "load_questions", "summarize"]
