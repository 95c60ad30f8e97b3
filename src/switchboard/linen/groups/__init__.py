"""Property groupings: regions, portfolios, owners, complexes."""
