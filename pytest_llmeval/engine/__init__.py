"""Running a case: the run-ahead dispatcher, the agent loop, the judge and sentence embeddings."""
