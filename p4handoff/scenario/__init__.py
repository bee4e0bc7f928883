"""Scenario files (traces/*.yaml): the document models, their errors and the run plan they resolve into."""
