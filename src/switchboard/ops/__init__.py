"""Operations: health and readiness probes, Prometheus metrics and the access log."""
