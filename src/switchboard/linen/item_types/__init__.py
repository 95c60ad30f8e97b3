"""The item-type catalogue: what a linen sheet counts (duvet covers, towels, bed sets)."""
