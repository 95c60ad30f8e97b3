"""The statements of revisions too long for one file, by feature; imported by ``versions/``."""
