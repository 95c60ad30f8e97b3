"""Transcript share links (spec 6.2 ``share.*``): revocable public URLs of one transcript."""
