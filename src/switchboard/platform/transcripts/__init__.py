"""Transcripts (spec 2.6, 2.7, 4.4): one file per call under the data directory, plus an index."""
